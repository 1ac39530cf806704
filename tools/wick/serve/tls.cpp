#include "tls.h"

#include <algorithm>
#include <cerrno>

#include "wick/error.h"

#ifdef WICK_HAVE_OPENSSL
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#endif

namespace wick::serve {

#ifdef WICK_HAVE_OPENSSL

struct TlsContext {
  SSL_CTX* ctx;
};

namespace {

// OpenSSL's queued errors as one line (and the queue cleared).
std::string openssl_errors() {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    char text[256];
    ERR_error_string_n(e, text, sizeof text);
    out += out.empty() ? "" : "; ";
    out += text;
  }
  return out.empty() ? "no detail from OpenSSL" : out;
}

// What an SSL call's failure means for a non-blocking caller: -1 with errno EAGAIN when it
// only waits for the socket, 0 when the peer closed, -1 with ECONNRESET otherwise.
ssize_t failure(SSL* ssl, int rc) {
  switch (SSL_get_error(ssl, rc)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE: errno = EAGAIN; return -1;
    case SSL_ERROR_ZERO_RETURN: return 0;
    case SSL_ERROR_SYSCALL:
      ERR_clear_error();
      if (errno == 0) return 0;  // the peer closed without a TLS close_notify
      return -1;
    default:
      ERR_clear_error();  // a protocol error (not TLS, a bad record): the connection is dropped
      errno = ECONNRESET;
      return -1;
  }
}

}  // namespace

TlsContext* tls_context_new(const std::string& cert_file, const std::string& key_file) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  WICK_CHECK(ctx, Internal, "serve: OpenSSL cannot create a TLS context: ", openssl_errors());
  auto fail_with = [&](const std::string& what) {
    const std::string detail = openssl_errors();
    SSL_CTX_free(ctx);
    fail(ErrorKind::InvalidArgument, "serve: ", what, " (", detail, ")");
  };
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // Writes go out as the socket takes them (a stream's chunks), retried with the same bytes.
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1)
    fail_with("cannot use the certificate file '" + cert_file + "' (a PEM certificate chain)");
  if (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH)
      fail_with("the private key '" + key_file + "' does not match the certificate '" + cert_file + "'");
    fail_with("cannot use the private key file '" + key_file + "' (a PEM key without a passphrase)");
  }
  if (SSL_CTX_check_private_key(ctx) != 1)
    fail_with("the private key '" + key_file + "' does not match the certificate '" + cert_file + "'");
  return new TlsContext{ctx};
}

void tls_context_free(TlsContext* ctx) {
  if (!ctx) return;
  SSL_CTX_free(ctx->ctx);
  delete ctx;
}

TlsSession::~TlsSession() {
  if (!ssl) return;
  auto* s = static_cast<SSL*>(ssl);
  if (handshake_done) SSL_shutdown(s);  // one close_notify, best effort (non-blocking)
  SSL_free(s);
}

TlsSession* tls_session_new(const TlsContext& ctx, int fd) {
  SSL* ssl = SSL_new(ctx.ctx);
  if (!ssl) return nullptr;
  SSL_set_fd(ssl, fd);
  SSL_set_accept_state(ssl);
  auto* s = new TlsSession;
  s->ssl = ssl;
  return s;
}

ssize_t tls_receive(TlsSession& s, char* ptr, size_t size) {
  auto* ssl = static_cast<SSL*>(s.ssl);
  if (!s.handshake_done) {
    errno = 0;
    const int rc = SSL_do_handshake(ssl);
    if (rc != 1) return failure(ssl, rc);
    s.handshake_done = true;
  }
  errno = 0;
  const int n = SSL_read(ssl, ptr, int(std::min<size_t>(size, 1 << 30)));
  return n > 0 ? n : failure(ssl, n);
}

ssize_t tls_send(TlsSession& s, const char* ptr, size_t size) {
  auto* ssl = static_cast<SSL*>(s.ssl);
  if (!s.handshake_done) {  // nothing is sent in clear on a TLS connection
    errno = ECONNRESET;
    return -1;
  }
  if (size == 0) return 0;
  errno = 0;
  const int n = SSL_write(ssl, ptr, int(std::min<size_t>(size, 1 << 30)));
  if (n > 0) return n;
  const ssize_t r = failure(ssl, n);
  if (r == 0) errno = EPIPE;
  return -1;
}

bool tls_pending(const TlsSession& s) { return SSL_pending(static_cast<SSL*>(s.ssl)) > 0; }

#else  // no OpenSSL

struct TlsContext {};

TlsContext* tls_context_new(const std::string&, const std::string&) {
  fail(ErrorKind::Unsupported,
       "serve: this wick was built without OpenSSL, so it cannot serve HTTPS (install libssl-dev and rebuild; "
       "scripts/setup.sh does)");
}
void tls_context_free(TlsContext* ctx) { delete ctx; }
TlsSession::~TlsSession() = default;
TlsSession* tls_session_new(const TlsContext&, int) { return nullptr; }
ssize_t tls_receive(TlsSession&, char*, size_t) {
  errno = ECONNRESET;
  return -1;
}
ssize_t tls_send(TlsSession&, const char*, size_t) {
  errno = ECONNRESET;
  return -1;
}
bool tls_pending(const TlsSession&) { return false; }

#endif

}  // namespace wick::serve
