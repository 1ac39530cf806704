// TLS for HttpServer's connections, through OpenSSL when wick was built with it
// (WICK_HAVE_OPENSSL); without it, enabling TLS is an error that says so. The reactor's
// non-blocking model is kept: each call returns at once, EAGAIN meaning "the socket is not
// ready" (the handshake included, which receive() drives).
#pragma once

#include <sys/types.h>

#include <string>

namespace wick::serve {

struct TlsContext;
// Loads a PEM certificate chain and its private key; throws a wick::Error naming the file.
TlsContext* tls_context_new(const std::string& cert_file, const std::string& key_file);
void tls_context_free(TlsContext* ctx);

struct TlsSession {
  void* ssl = nullptr;  // OpenSSL's SSL
  bool handshake_done = false;
  ~TlsSession();
};
// A server-side session over the connected socket fd (non-blocking).
TlsSession* tls_session_new(const TlsContext& ctx, int fd);
// As recv(2) and send(2) on a non-blocking socket: > 0 bytes, 0 the peer closed (receive
// only), -1 with errno EAGAIN (not ready yet) or another errno (the connection failed).
ssize_t tls_receive(TlsSession& s, char* ptr, size_t size);
ssize_t tls_send(TlsSession& s, const char* ptr, size_t size);
// Decrypted bytes that TLS holds and the socket no longer shows as readable.
bool tls_pending(const TlsSession& s);

}  // namespace wick::serve
