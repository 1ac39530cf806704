#include "http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "tls.h"

namespace wick::serve {

namespace {
thread_local Connection* t_connection = nullptr;

// How often the reactor looks at the connections' deadlines.
constexpr std::chrono::milliseconds kTick{50};
// A buffer larger than this after a request is given back (memory follows the traffic).
constexpr size_t kKeepCapacity = 64 << 10;

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

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return std::tolower(x) == std::tolower(y); });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Where the headers of the request at the start of b end (just past their empty line), or 0
// while they have not all arrived. Lines end in CRLF or a bare LF, as httplib accepts both.
size_t head_end(std::string_view b) {
  for (size_t i = b.find('\n'); i != std::string_view::npos; i = b.find('\n', i + 1)) {
    if (i + 1 < b.size() && b[i + 1] == '\n') return i + 2;
    if (i + 2 < b.size() && b[i + 1] == '\r' && b[i + 2] == '\n') return i + 3;
  }
  return 0;
}

const char* reason(int status) {
  switch (status) {
    case 408: return "Request Timeout";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}
}  // namespace

Connection* current_connection() { return t_connection; }

Connection::Connection(int fd, const HttpLimits& limits, const TlsContext* tls) : fd_(fd), limits_(limits) {
  if (tls) tls_.reset(tls_session_new(*tls, fd));
}

Connection::~Connection() {
  tls_.reset();  // its close_notify goes out before the socket shuts
  ::shutdown(fd_, SHUT_RDWR);
  ::close(fd_);
}

ssize_t Connection::receive(char* ptr, size_t size) {
  if (tls_) return tls_receive(*tls_, ptr, size);
  ssize_t n;
  do n = ::recv(fd_, ptr, size, MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  if (n < 0 && errno == EWOULDBLOCK) errno = EAGAIN;
  return n;
}

ssize_t Connection::send_now(const char* ptr, size_t size) {
  if (tls_) return tls_send(*tls_, ptr, size);
  ssize_t n;
  do n = ::send(fd_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  if (n < 0 && errno == EWOULDBLOCK) errno = EAGAIN;
  return n;
}

bool Connection::tls_pending() const { return tls_ && serve::tls_pending(*tls_); }
bool Connection::handshaking() const { return tls_ && !tls_->handshake_done; }

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

bool Connection::is_readable() const { return off_ < buf_.size() || tls_pending() || wait(POLLIN, read_wait()); }

bool Connection::is_writable() const { return !peer_closed() && wait(POLLOUT, limits_.io_timeout); }

bool Connection::peer_closed() const {
  pollfd p{fd_, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

// A worker reads the buffered request. Past the buffer (a request whose end its headers do
// not tell) it waits for the socket, within the request's deadline.
ssize_t Connection::read(char* ptr, size_t size) {
  while (off_ == buf_.size()) {
    if (!tls_pending() && !wait(POLLIN, read_wait())) {  // idle past the timeout or the deadline
      close_ = true;  // the rest of the request may still come: it must not be read as the next one
      return -1;
    }
    char tmp[16384];
    const ssize_t n = receive(tmp, sizeof tmp);
    if (n < 0 && errno == EAGAIN) continue;  // readable, but not a whole TLS record yet
    if (n <= 0) {
      close_ = true;
      return n;
    }
    buf_.append(tmp, size_t(n));
  }
  const size_t n = std::min(size, buf_.size() - off_);
  std::memcpy(ptr, buf_.data() + off_, n);
  off_ += n;
  return ssize_t(n);
}

ssize_t Connection::write(const char* ptr, size_t size) {
  for (;;) {
    if (!wait(POLLOUT, limits_.io_timeout)) return -1;  // a client that stopped reading
    const ssize_t n = send_now(ptr, size);
    if (n >= 0 || errno != EAGAIN) return n;
  }
}

void Connection::get_remote_ip_and_port(std::string& ip, int& port) const { address_of(fd_, true, ip, port); }
void Connection::get_local_ip_and_port(std::string& ip, int& port) const { address_of(fd_, false, ip, port); }

bool Connection::fill() {
  const size_t cap = limits_.max_head_bytes + limits_.max_body_bytes;
  char tmp[16384];
  while (buf_.size() - off_ < cap) {
    const ssize_t n = receive(tmp, sizeof tmp);
    if (n > 0) {
      if (!started_) {  // the first byte of a request starts its deadlines
        started_ = true;
        const auto now = Clock::now();
        deadline_ = now + limits_.request_timeout;
        head_deadline_ = now + std::min(limits_.header_timeout, limits_.request_timeout);
      }
      buf_.append(tmp, size_t(n));
    } else if (n == 0) {
      return false;
    } else {
      return errno == EAGAIN;  // all read (or the handshake waits for the client)
    }
  }
  return true;
}

// Only as much of the headers is read as framing needs: their end, Content-Length and
// Transfer-Encoding. A request whose length they do not make plain (chunked, two lengths, a
// length that is not a number, a body over the limit) is handed on at its headers: the
// handlers refuse it without reading a body, and the connection closes.
Connection::Framing Connection::framing(bool* expects_continue) const {
  const std::string_view b = std::string_view(buf_).substr(off_);
  const size_t end = head_end(b);
  if (end == 0) return b.size() > limits_.max_head_bytes ? Framing::HeadTooLarge : Framing::Partial;
  if (end > limits_.max_head_bytes) return Framing::HeadTooLarge;
  const std::string_view head = b.substr(0, end);
  size_t length = 0, lengths = 0;
  bool unclear = false, expect = false;
  for (size_t at = head.find('\n') + 1; at < head.size();) {
    size_t eol = head.find('\n', at);
    if (eol == std::string_view::npos) eol = head.size();
    const std::string_view line = head.substr(at, eol - at);
    at = eol + 1;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view name = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (iequals(name, "Transfer-Encoding")) {
      unclear = true;
    } else if (iequals(name, "Content-Length")) {
      size_t v = 0;
      bool digits = !value.empty() && value.size() <= 18;
      for (char ch : value) digits = digits && ch >= '0' && ch <= '9', v = v * 10 + size_t(ch - '0');
      unclear = unclear || !digits || (lengths > 0 && v != length);
      length = v, ++lengths;
    } else if (iequals(name, "Expect")) {
      expect = iequals(value, "100-continue");
    }
  }
  if (unclear || length > limits_.max_body_bytes) return Framing::Complete;
  if (b.size() >= end + length) return Framing::Complete;
  if (expects_continue) *expects_continue = expect;
  return Framing::Partial;
}

void Connection::consume_request() {
  buf_.erase(0, off_);
  off_ = 0;
  if (buf_.capacity() > kKeepCapacity && buf_.size() < kKeepCapacity) buf_.shrink_to_fit();
  started_ = !buf_.empty();  // a pipelined request's first bytes: its deadlines start now
  continue_sent_ = false;
  const auto now = Clock::now();
  deadline_ = started_ ? now + limits_.request_timeout : Clock::time_point::max();
  head_deadline_ =
      started_ ? now + std::min(limits_.header_timeout, limits_.request_timeout) : Clock::time_point::max();
}

HttpServer::HttpServer(const HttpLimits& limits) : limits_(limits) {
  // httplib's pool only hands accepted sockets over (process_and_close_socket returns at once).
  new_task_queue = [] { return new httplib::ThreadPool(2); };
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
  epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_;
  if (epoll_ >= 0 && wake_ >= 0) ::epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &ev);
}

HttpServer::~HttpServer() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    quit_ = true;
  }
  ready_cv_.notify_all();
  const uint64_t one = 1;
  if (wake_ >= 0) (void)!::write(wake_, &one, sizeof one);
  for (auto& t : threads_) t.join();
  if (epoll_ >= 0) ::close(epoll_);
  if (wake_ >= 0) ::close(wake_);
}

void HttpServer::enable_tls(const std::string& cert_file, const std::string& key_file) {
  tls_ = {tls_context_new(cert_file, key_file), tls_context_free};
}

int HttpServer::bind(const std::string& host, int port) {
  if (epoll_ < 0 || wake_ < 0) return -1;
  const int bound = port == 0 ? bind_to_any_port(host) : (bind_to_port(host, port) ? port : -1);
  // Listening again on a listening socket only changes its backlog (Linux).
  if (bound > 0) ::listen(svr_sock_, limits_.backlog);
  return bound;
}

void HttpServer::serve() {
  threads_.emplace_back([this] { reactor_loop(); });
  for (size_t i = 0; i < std::max<size_t>(1, limits_.threads); ++i) threads_.emplace_back([this] { worker_loop(); });
  listen_after_bind();  // until stop_accepting() (or a failure of the accept loop)
  stopping_ = true;
  const uint64_t one = 1;
  (void)!::write(wake_, &one, sizeof one);  // the reactor closes what waits for a request
  {
    std::unique_lock<std::mutex> lk(mu_);
    idle_cv_.wait(lk, [&] { return busy_ == 0 && ready_.empty(); });  // answers in flight end
    quit_ = true;
  }
  ready_cv_.notify_all();
  (void)!::write(wake_, &one, sizeof one);
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void HttpServer::stop_accepting() {
  if (stopping_.exchange(true)) return;
  // Shutting the listening socket down ends httplib's accept loop, which then waits for the
  // tasks of its pool. httplib's own stop() would also mark the socket invalid, which its
  // chunked writer reads as "abort every stream now".
  ::shutdown(svr_sock_, SHUT_RDWR);
}

bool HttpServer::process_and_close_socket(int sock) {
  ::fcntl(sock, F_SETFL, ::fcntl(sock, F_GETFL) | O_NONBLOCK);
  // An answer goes out in several writes (headers, body; a stream's chunks). With Nagle's
  // algorithm a write waits for the ACK of the one before, which the client delays (40 ms
  // on Linux) once the connection is past its first segments: every keep-alive request took
  // 44 ms on loopback, and stream chunks were held back alike.
  const int yes = 1;
  ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  auto c = std::make_unique<Connection>(sock, limits_, tls_.get());
  ++open_;
  if (tls_ && !c->tls_) {  // OpenSSL could not make a session: never serve this one in clear
    close(std::move(c));
    return true;
  }
  if (stopping_ || open_ > limits_.max_connections) {
    refuse(*c, 503, stopping_ ? "the server is shutting down" : "too many open connections; try again later");
    close(std::move(c));
    return true;
  }
  // The first byte of a request must come within the header timeout.
  c->idle_until_ = Connection::Clock::now() + std::min(limits_.header_timeout, limits_.request_timeout);
  {
    std::lock_guard<std::mutex> lk(mu_);
    incoming_.push_back(std::move(c));
  }
  const uint64_t one = 1;
  (void)!::write(wake_, &one, sizeof one);
  return true;
}

void HttpServer::watch(std::unique_ptr<Connection> c) {
  c->idle_until_ = Connection::Clock::now() + limits_.keep_alive;
  {
    std::lock_guard<std::mutex> lk(mu_);
    incoming_.push_back(std::move(c));
  }
  const uint64_t one = 1;
  (void)!::write(wake_, &one, sizeof one);
}

void HttpServer::close(std::unique_ptr<Connection> c) {
  c.reset();
  --open_;
}

void HttpServer::refuse(Connection& c, int status, const char* message) {
  // What the client sent and nobody will read is taken off the socket first: closing a
  // socket with unread input sends a reset, which can overtake the answer at the client.
  // A TLS connection whose handshake has not completed gets no answer: it would be in clear.
  if (c.handshaking()) {
    if (on_refusal_) on_refusal_(status);
    return;
  }
  char sink[16384];
  for (size_t drained = 0; drained < (256u << 10);) {
    const ssize_t n = c.receive(sink, sizeof sink);
    if (n <= 0) break;
    drained += size_t(n);
  }
  const std::string body = std::string(R"({"error":{"message":")") + message + R"(","type":")" +
                           (status >= 500 ? "server_error" : "invalid_request_error") +
                           R"(","param":null,"code":null}})";
  const std::string text = "HTTP/1.1 " + std::to_string(status) + " " + reason(status) +
                           "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                           "\r\nConnection: close\r\n\r\n" + body;
  // Best effort, never blocking: a client too slow to take a few hundred bytes is not waited for.
  (void)!c.send_now(text.data(), text.size());
  if (on_refusal_) on_refusal_(status);
}

void HttpServer::reactor_loop() {
  using Framing = Connection::Framing;
  std::vector<epoll_event> events(256);
  auto drop = [&](int fd) {
    ::epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
    auto it = watched_.find(fd);
    auto c = std::move(it->second);
    watched_.erase(it);
    return c;
  };
  // A connection whose buffer holds a whole request goes to a worker; one whose headers
  // outgrew the limit is refused; a closed one is closed. Otherwise it waits for more.
  auto settle = [&](int fd, bool alive) {
    Connection& c = *watched_.at(fd);
    bool expects_continue = false;
    const Framing f = c.framing(&expects_continue);
    if (f == Framing::Complete && !stopping_) {
      auto taken = drop(fd);
      std::lock_guard<std::mutex> lk(mu_);
      ready_.push_back(std::move(taken));
      ready_cv_.notify_one();
    } else if (f == Framing::HeadTooLarge) {
      refuse(c, 431, "request line and headers too large");
      close(drop(fd));
    } else if (!alive || stopping_) {
      close(drop(fd));
    } else if (expects_continue && !c.continue_sent_) {
      // The client waits for this before it sends the body the reactor waits for.
      static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
      (void)!c.send_now(kContinue, sizeof kContinue - 1);
      c.continue_sent_ = true;
    }
  };
  auto last_tick = Connection::Clock::now();
  for (;;) {
    const int n = ::epoll_wait(epoll_, events.data(), int(events.size()), int(kTick.count()));
    std::deque<std::unique_ptr<Connection>> arrived;
    bool quit;
    {
      std::lock_guard<std::mutex> lk(mu_);
      arrived.swap(incoming_);
      quit = quit_;
    }
    for (auto& c : arrived) {
      const int fd = c->fd_;
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP;
      ev.data.fd = fd;
      if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev) != 0) {
        close(std::move(c));
        continue;
      }
      watched_.emplace(fd, std::move(c));
      settle(fd, true);  // what is buffered may already say what to do
    }
    for (int i = 0; i < n; ++i) {
      const int fd = events[size_t(i)].data.fd;
      if (fd == wake_) {
        uint64_t count;
        (void)!::read(wake_, &count, sizeof count);
        continue;
      }
      if (!watched_.count(fd)) continue;
      const bool alive = watched_.at(fd)->fill();
      settle(fd, alive);
    }
    const auto now = Connection::Clock::now();
    if (quit || stopping_ || now - last_tick >= kTick) {
      last_tick = now;
      std::vector<int> expired, timed_out;
      for (auto& [fd, c] : watched_) {
        if (quit || stopping_ || (!c->started_ && now >= c->idle_until_)) {
          expired.push_back(fd);  // idle: closed without a word, as keep-alive allows
        } else if (c->started_ && (now >= c->deadline_ || (now >= c->head_deadline_ &&
                                                           head_end(std::string_view(c->buf_).substr(c->off_)) == 0))) {
          timed_out.push_back(fd);
        }
      }
      for (int fd : expired) close(drop(fd));
      for (int fd : timed_out) {
        auto c = drop(fd);
        refuse(*c, 408, "the request did not arrive in time");
        close(std::move(c));
      }
    }
    if (quit) {
      std::lock_guard<std::mutex> lk(mu_);
      for (auto& c : incoming_) close(std::move(c));
      incoming_.clear();
      return;
    }
  }
}

void HttpServer::worker_loop() {
  for (;;) {
    std::unique_ptr<Connection> c;
    {
      std::unique_lock<std::mutex> lk(mu_);
      ready_cv_.wait(lk, [&] { return quit_ || !ready_.empty(); });
      if (ready_.empty()) return;
      c = std::move(ready_.front());
      ready_.pop_front();
      ++busy_;
    }
    answer(*c);
    if (c->close_ || stopping_)
      close(std::move(c));
    else
      watch(std::move(c));
    std::lock_guard<std::mutex> lk(mu_);
    --busy_;
    if (busy_ == 0 && ready_.empty()) idle_cv_.notify_all();
  }
}

void HttpServer::answer(Connection& c) {
  t_connection = &c;
  do {
    const bool last = c.answered_ + 1 >= limits_.max_requests_per_connection || stopping_;
    bool closed = false;
    const bool ok = process_request(c, last, closed, nullptr);
    ++c.answered_;
    if (!ok || closed || last) c.close_ = true;
    c.consume_request();
  } while (!c.close_ && c.framing() == Connection::Framing::Complete);
  t_connection = nullptr;
}

}  // namespace wick::serve
