// cpp-httplib's Server with the connection handling a public server needs and httplib 0.11
// lacks: a deadline for the whole request (a client sending one byte a second is cut off,
// however it paces the bytes, where httplib's read timeout bounds each read only), pipelined
// requests that wait in the read buffer (httplib polls the socket and misses them), a check
// that the client is still there (so a disconnect cancels its generation at once), and a
// stop that lets responses in flight finish.
//
// It does so by serving each accepted socket itself (process_and_close_socket, httplib's
// per-connection entry point) through its own Stream, and handing each request to httplib's
// process_request for parsing, routing and writing.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <string>

namespace wick::serve {

struct HttpLimits {
  std::chrono::milliseconds request_timeout{30'000};  // whole request (line, headers, body)
  std::chrono::milliseconds io_timeout{30'000};       // one read or write stalled at most
  std::chrono::milliseconds keep_alive{5'000};        // idle time between requests
  size_t max_requests_per_connection = 10'000;
  size_t threads = 64;  // connections served at once (each holds a thread while open)
  int backlog = 512;    // connections waiting to be accepted (httplib's 5 drops bursts of clients)
};

// One client connection, as the thread serving it sees it.
class Connection final : public httplib::Stream {
 public:
  Connection(int fd, const HttpLimits& limits) : fd_(fd), limits_(limits) {}

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
  // Close the connection after this response (its request body was left unread).
  void close_after_response() { close_ = true; }

 private:
  friend class HttpServer;
  using Clock = std::chrono::steady_clock;
  // Waits until a next request starts arriving (true) or the keep-alive time passes, the
  // peer closes, or `stopping` is set (false). Bytes already buffered count as arrived.
  bool wait_for_request(const std::atomic<bool>& stopping);
  bool wait(short events, std::chrono::milliseconds timeout) const;
  std::chrono::milliseconds read_wait() const;  // io_timeout, or less before the deadline

  int fd_;
  const HttpLimits& limits_;
  char buf_[16384];
  size_t off_ = 0, len_ = 0;
  Clock::time_point deadline_ = Clock::time_point::max();
  bool close_ = false;
};

// The connection the calling thread is serving: set while a handler of HttpServer runs,
// nullptr elsewhere.
Connection* current_connection();

class HttpServer : public httplib::Server {
 public:
  explicit HttpServer(const HttpLimits& limits);
  // Binds host:port (port 0: any free port) and returns the port, or -1.
  int bind(const std::string& host, int port);
  // Serves until stop_accepting(); returns when every connection has closed.
  void serve();
  // Stops accepting connections; requests in flight go on, idle connections close. Safe
  // from any thread (a signal-handling one).
  void stop_accepting();
  bool stopping() const { return stopping_; }

 private:
  bool process_and_close_socket(int sock) override;
  HttpLimits limits_;
  std::atomic<bool> stopping_{false};
};

}  // namespace wick::serve
