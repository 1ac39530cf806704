#include "http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace wick::serve {

namespace {
thread_local Connection* t_connection = nullptr;

// How often a waiting connection looks at the stop flag.
constexpr std::chrono::milliseconds kPollSlice{50};

void address_of(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  const int rc = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len)
                      : getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  char text[INET6_ADDRSTRLEN] = "";
  port = -1;
  if (rc == 0 && addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
    port = ntohs(a->sin_port);
  } else if (rc == 0 && addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
    port = ntohs(a->sin6_port);
  }
  ip = text;
}
}  // namespace

Connection* current_connection() { return t_connection; }

bool Connection::wait(short events, std::chrono::milliseconds timeout) const {
  if (timeout.count() <= 0) return false;
  pollfd p{fd_, events, 0};
  int rc;
  do rc = ::poll(&p, 1, int(std::min<int64_t>(timeout.count(), INT32_MAX)));
  while (rc < 0 && errno == EINTR);
  return rc > 0 && (p.revents & (events | POLLHUP | POLLERR));
}

std::chrono::milliseconds Connection::read_wait() const {
  if (deadline_ == Clock::time_point::max()) return limits_.io_timeout;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
  return std::min(left, limits_.io_timeout);
}

bool Connection::is_readable() const { return off_ < len_ || wait(POLLIN, read_wait()); }

bool Connection::is_writable() const { return !peer_closed() && wait(POLLOUT, limits_.io_timeout); }

bool Connection::peer_closed() const {
  pollfd p{fd_, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

ssize_t Connection::read(char* ptr, size_t size) {
  if (off_ == len_) {
    if (!wait(POLLIN, read_wait())) {  // idle past the timeout or the deadline
      close_ = true;                   // the rest of the request may still come: it must not be read as the next one
      return -1;
    }
    ssize_t n;
    do n = ::recv(fd_, buf_, sizeof buf_, 0);
    while (n < 0 && errno == EINTR);
    if (n <= 0) {
      close_ = true;
      return n;
    }
    off_ = 0;
    len_ = size_t(n);
  }
  const size_t n = std::min(size, len_ - off_);
  std::memcpy(ptr, buf_ + off_, n);
  off_ += n;
  return ssize_t(n);
}

ssize_t Connection::write(const char* ptr, size_t size) {
  if (!wait(POLLOUT, limits_.io_timeout)) return -1;  // a client that stopped reading
  ssize_t n;
  do n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n;
}

void Connection::get_remote_ip_and_port(std::string& ip, int& port) const { address_of(fd_, true, ip, port); }
void Connection::get_local_ip_and_port(std::string& ip, int& port) const { address_of(fd_, false, ip, port); }

bool Connection::wait_for_request(const std::atomic<bool>& stopping) {
  if (off_ < len_) return true;  // a pipelined request, already read from the socket
  const auto until = Clock::now() + limits_.keep_alive;
  while (!stopping) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (left.count() <= 0) return false;
    if (wait(POLLIN, std::min(left, kPollSlice))) return true;
  }
  return false;
}

HttpServer::HttpServer(const HttpLimits& limits) : limits_(limits) {
  const size_t threads = limits_.threads;
  new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // What the Keep-Alive response header announces.
  set_keep_alive_max_count(limits_.max_requests_per_connection);
  set_keep_alive_timeout(std::max<time_t>(1, limits_.keep_alive.count() / 1000));
  // httplib's default sets SO_REUSEPORT, with which a second server binds a port that one
  // already listens on and the kernel splits the connections between them (any local process
  // could take a share of the traffic). SO_REUSEADDR alone still allows a restart while the
  // old connections sit in TIME_WAIT, and makes binding a port in use an error.
  set_socket_options([](socket_t sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
}

int HttpServer::bind(const std::string& host, int port) {
  const int bound = port == 0 ? bind_to_any_port(host) : (bind_to_port(host, port) ? port : -1);
  // Listening again on a listening socket only changes its backlog (Linux).
  if (bound > 0) ::listen(svr_sock_, limits_.backlog);
  return bound;
}

void HttpServer::serve() { listen_after_bind(); }

void HttpServer::stop_accepting() {
  if (stopping_.exchange(true)) return;
  // Shutting the listening socket down ends httplib's accept loop, which then waits for the
  // connections' threads. httplib's own stop() would also mark the socket invalid, which
  // its chunked writer reads as "abort every stream now".
  ::shutdown(svr_sock_, SHUT_RDWR);
}

bool HttpServer::process_and_close_socket(int sock) {
  Connection conn(sock, limits_);
  t_connection = &conn;
  bool ok = true;
  for (size_t n = 0; n < limits_.max_requests_per_connection && conn.wait_for_request(stopping_); ++n) {
    conn.deadline_ = Connection::Clock::now() + limits_.request_timeout;
    bool closed = false;
    const bool last = n + 1 == limits_.max_requests_per_connection || stopping_;
    ok = process_request(conn, last, closed, nullptr);
    if (!ok || closed || conn.close_) break;
  }
  t_connection = nullptr;
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ok;
}

}  // namespace wick::serve
