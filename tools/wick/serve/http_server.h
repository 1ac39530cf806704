// cpp-httplib's Server with the connection handling a public server needs and httplib 0.11
// lacks. httplib serves each connection on a thread of its pool from accept to close, so a
// client that sends slowly, or keeps an idle connection open, holds a thread: a few hundred
// slow clients starve everyone. Here:
//
// - One reactor thread (epoll) holds every connection that is not being answered: it reads
//   what arrives, with no thread per connection, until a whole request is buffered (request
//   line, headers, and the body its Content-Length announces), under deadlines for the
//   headers and for the whole request (a client sending one byte a second is cut off with a
//   408, however it paces the bytes). Idle keep-alive connections wait there too.
// - Only a complete request goes to a worker thread, which hands it to httplib's
//   process_request (parsing, routing, writing) through this file's Stream, reading from the
//   buffer; the answer (a stream of tokens too) is written from the worker. Then the
//   connection goes back to the reactor, or on to its next pipelined request.
// - Open connections are capped: one over the cap gets a 503 at once and is closed.
// - A check that the client is still there (a disconnect cancels its generation at once), and
//   a stop that lets responses in flight finish.
// - TLS (OpenSSL, when wick was built with it): the handshake runs in the reactor, without a
//   thread, under the same deadline as a request's headers; every read and write of a
//   connection then goes through its SSL object.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace wick::serve {

struct HttpLimits {
  std::chrono::milliseconds request_timeout{30'000};  // whole request (line, headers, body) from its first byte
  std::chrono::milliseconds header_timeout{10'000};   // request line and headers from their first byte
  std::chrono::milliseconds io_timeout{30'000};       // one write (or a read past the buffer) stalled at most
  std::chrono::milliseconds keep_alive{5'000};        // idle time between requests
  size_t max_requests_per_connection = 10'000;
  size_t threads = 64;               // requests answered at once (a stream holds its thread)
  size_t max_connections = 2048;     // open connections at most (beyond: 503)
  size_t max_head_bytes = 64 << 10;  // request line and headers (beyond: 431)
  size_t max_body_bytes = 8 << 20;   // bodies buffered before a worker takes the request; a
                                     // larger announced one goes on at its headers (and is refused)
  int backlog = 512;                 // connections waiting to be accepted (httplib's 5 drops bursts of clients)
};

struct TlsContext;  // the server's certificate and key (OpenSSL's SSL_CTX)
struct TlsSession;  // one connection's TLS state (OpenSSL's SSL)

// One client connection: its socket and what has been read from it.
class Connection final : public httplib::Stream {
 public:
  using Clock = std::chrono::steady_clock;
  // tls: null for plain HTTP.
  Connection(int fd, const HttpLimits& limits, const TlsContext* tls);
  ~Connection() override;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  int socket() const override { return fd_; }

  // The client has closed its end (or the connection broke): nothing more can reach it.
  bool peer_closed() const;
  // The request has been read: no deadline on the reads (none follow) until the next one.
  void request_read() { deadline_ = Clock::time_point::max(); }
  // Close the connection after this response (its request was not read to its end).
  void close_after_response() { close_ = true; }

 private:
  friend class HttpServer;
  // What the buffer holds of the next request; expects_continue (when given and Partial):
  // its complete headers ask for a 100 Continue before the body.
  enum class Framing { Partial, Complete, HeadTooLarge };
  Framing framing(bool* expects_continue = nullptr) const;
  // Reads what the socket has now (the reactor's non-blocking read): false when the peer
  // closed or the connection broke.
  bool fill();
  void consume_request();  // drops what the answered request used from the buffer
  bool wait(short events, std::chrono::milliseconds timeout) const;
  // The socket's bytes, through TLS when on, without blocking: > 0 bytes moved, 0 the peer
  // closed, -1 with errno EAGAIN when the socket (or the TLS record layer) is not ready.
  ssize_t receive(char* ptr, size_t size);
  ssize_t send_now(const char* ptr, size_t size);
  bool tls_pending() const;                     // decrypted bytes held by TLS that the socket no longer shows
  bool handshaking() const;                     // TLS is on and its handshake has not completed
  std::chrono::milliseconds read_wait() const;  // io_timeout, or less before the deadline

  int fd_;
  const HttpLimits& limits_;
  std::unique_ptr<TlsSession> tls_;  // null for plain HTTP
  std::string buf_;                  // bytes read and not yet consumed start at off_
  size_t off_ = 0;
  Clock::time_point deadline_ = Clock::time_point::max();  // the whole request's
  Clock::time_point head_deadline_ = Clock::time_point::max();
  Clock::time_point idle_until_ = Clock::time_point::max();  // no byte of a request yet
  bool started_ = false;                                     // a byte of the next request has arrived
  bool continue_sent_ = false;
  size_t answered_ = 0;
  bool close_ = false;
};

// The connection the calling thread is serving: set while a handler of HttpServer runs,
// nullptr elsewhere.
Connection* current_connection();

class HttpServer : public httplib::Server {
 public:
  explicit HttpServer(const HttpLimits& limits);
  ~HttpServer() override;
  // Serves HTTPS with this certificate chain and private key (PEM files); throws a
  // wick::Error naming the file when one cannot be read or they do not match, and when wick
  // was built without OpenSSL. Call before serve().
  void enable_tls(const std::string& cert_file, const std::string& key_file);
  // Binds host:port (port 0: any free port) and returns the port, or -1.
  int bind(const std::string& host, int port);
  // Serves until stop_accepting(); returns when every connection has closed.
  void serve();
  // Stops accepting connections; requests in flight go on, idle connections close. Safe
  // from any thread (a signal-handling one).
  void stop_accepting();
  bool stopping() const { return stopping_; }
  // Told of each answer the server gives without a handler (408, 431, 503).
  void on_refusal(std::function<void(int status)> f) { on_refusal_ = std::move(f); }
  // Connections open now (held by the reactor or a worker).
  size_t open_connections() const { return open_; }

 private:
  bool process_and_close_socket(int sock) override;  // httplib's accept loop hands each socket here
  void reactor_loop();
  void worker_loop();
  void watch(std::unique_ptr<Connection> c);  // (back) to the reactor
  void answer(Connection& c);                 // a worker: the buffered request(s)
  void refuse(Connection& c, int status, const char* message);
  void close(std::unique_ptr<Connection> c);

  HttpLimits limits_;
  std::unique_ptr<TlsContext, void (*)(TlsContext*)> tls_{nullptr, nullptr};
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> open_{0};
  std::function<void(int)> on_refusal_;
  int epoll_ = -1, wake_ = -1;  // the reactor's epoll and its eventfd

  std::mutex mu_;                                                 // guards the maps and queues below
  std::unordered_map<int, std::unique_ptr<Connection>> watched_;  // by the reactor
  std::deque<std::unique_ptr<Connection>> incoming_;              // to be watched (added by other threads)
  std::deque<std::unique_ptr<Connection>> ready_;                 // a whole request each, for a worker
  std::condition_variable ready_cv_, idle_cv_;
  size_t busy_ = 0;  // workers answering
  bool quit_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace wick::serve
