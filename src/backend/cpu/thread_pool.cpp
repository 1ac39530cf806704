#include "backend/cpu/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "wick/error.h"
#include "wick/threads.h"

namespace wick::cpu {

namespace {

thread_local bool t_in_worker = false;

class Pool {
 public:
  explicit Pool(int threads) : target_(threads) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }
  ~Pool() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }

  int size() const { return target_; }

  // Runs fn over [0, n) in chunks; returns false if the pool is busy (caller runs inline).
  bool run(int64_t n, int64_t grain, int64_t max_parts, const std::function<void(int64_t, int64_t)>& fn) {
    std::unique_lock busy(run_mu_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    const int64_t parts = std::min({max_parts, int64_t(workers_.size()) + 1, (n + grain - 1) / grain});
    {
      std::lock_guard lock(mu_);
      fn_ = &fn;
      n_ = n;
      parts_ = parts;
      next_part_ = 0;
      done_parts_ = 0;
      error_ = nullptr;
      ++generation_;
    }
    cv_.notify_all();
    run_parts();
    std::unique_lock lock(mu_);
    done_cv_.wait(lock, [&] { return done_parts_ == parts_; });
    fn_ = nullptr;
    if (error_) std::rethrow_exception(error_);
    return true;
  }

 private:
  void run_parts() {
    for (;;) {
      int64_t part;
      {
        std::lock_guard lock(mu_);
        if (fn_ == nullptr || next_part_ >= parts_) return;
        part = next_part_++;
      }
      const int64_t begin = n_ * part / parts_, end = n_ * (part + 1) / parts_;
      std::exception_ptr err;
      try {
        (*fn_)(begin, end);
      } catch (...) {
        err = std::current_exception();
      }
      std::lock_guard lock(mu_);
      if (err && !error_) error_ = err;
      if (++done_parts_ == parts_) done_cv_.notify_all();
    }
  }

  void work() {
    t_in_worker = true;
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
      }
      run_parts();
    }
  }

  int target_;
  std::vector<std::thread> workers_;
  std::mutex run_mu_;  // one parallel loop at a time
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0, parts_ = 0, next_part_ = 0, done_parts_ = 0;
  uint64_t generation_ = 0;
  std::exception_ptr error_;
  bool stop_ = false;
};

int default_threads() {
  if (const char* env = std::getenv("WICK_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

std::atomic<int> g_threads{default_threads()};

Pool& pool() {
  static Pool p(std::max(1, default_threads()));
  return p;
}

}  // namespace

int num_threads() { return t_in_worker ? 1 : std::min(g_threads.load(), pool().size()); }
void set_num_threads(int n) { g_threads = std::max(1, n); }

void parallel_for_impl(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (!pool().run(n, std::max<int64_t>(grain, 1), num_threads(), fn)) fn(0, n);
}

}  // namespace wick::cpu

// The public face of the pool (wick/threads.h).
namespace wick {
int cpu_num_threads() { return cpu::num_threads(); }
void set_cpu_num_threads(int n) {
  WICK_CHECK(n >= 1, InvalidArgument, "set_cpu_num_threads: ", n, " threads (at least 1)");
  cpu::set_num_threads(n);
}
}  // namespace wick
