// The CPU thread pool. A decode step on the CPU is a chain of a few hundred parallel loops,
// each a fraction of a millisecond (one weight matrix streamed from memory), so what matters
// is how soon the workers start on a loop and how evenly the loop's parts end:
//  - a loop is published in one atomic word (generation, part count, next part), and the
//    workers spin on it for a while (kSpin) after each loop before they sleep on a condition
//    variable: the next loop usually comes within microseconds, and a futex wake-up costs
//    10-20 us (a 1B-shaped decode step has ~110 of them);
//  - a loop is cut into up to kPartsPerThread parts per thread, claimed one at a time from
//    that word, so a thread that starts late (or is slowed by other work on the machine)
//    takes fewer parts instead of leaving the others waiting at the end.
// The caller runs parts too and then waits (spinning, then sleeping) until every part is done.
#include "backend/cpu/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define WICK_CPU_RELAX() _mm_pause()
#else
#define WICK_CPU_RELAX() std::this_thread::yield()
#endif

#include "wick/error.h"
#include "wick/threads.h"

namespace wick::cpu {

namespace {

thread_local bool t_in_worker = false;

// How long a thread polls before it sleeps: longer than the host work between two loops of a
// decode step, short enough that an idle process gives its cores back at once.
constexpr auto kSpin = std::chrono::microseconds(200);
constexpr int64_t kPartsPerThread = 4;

// The claim word: generation (32 bits), part count (16), next part to claim (16).
constexpr uint64_t word(uint64_t gen, uint64_t parts, uint64_t next) { return gen << 32 | parts << 16 | next; }
constexpr uint32_t gen_of(uint64_t w) { return uint32_t(w >> 32); }
constexpr int64_t parts_of(uint64_t w) { return int64_t((w >> 16) & 0xffff); }
constexpr int64_t next_of(uint64_t w) { return int64_t(w & 0xffff); }

// Polls ready() for up to kSpin; true as soon as it holds.
template <class F>
bool spin_until(const F& ready) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    WICK_CPU_RELAX();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) return ready();
  }
}

class Pool {
 public:
  explicit Pool(int threads) : target_(threads) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }
  ~Pool() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
      stop_flag_.store(true, std::memory_order_relaxed);
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
  }

  int size() const { return target_; }

  // Runs fn over [0, n) in parts; returns false if the pool is busy (caller runs inline).
  bool run(int64_t n, int64_t grain, int64_t threads, const std::function<void(int64_t, int64_t)>& fn) {
    std::unique_lock busy(run_mu_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    const int64_t parts =
        std::clamp<int64_t>((n + grain - 1) / grain, 1, std::min<int64_t>(threads * kPartsPerThread, 0xffff));
    // Every part of the previous loop is done (run() waited for them), so no thread reads
    // these fields until the new word is published.
    fn_ = &fn;
    n_ = n;
    error_ = nullptr;
    done_.store(0, std::memory_order_relaxed);
    const uint32_t gen = ++generation_;
    claim_.store(word(gen, uint64_t(parts), 0), std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard lock(mu_);
      wake_.notify_all();
    }
    run_parts(gen);
    if (!spin_until([&] { return done_.load(std::memory_order_acquire) == parts; })) {
      std::unique_lock lock(mu_);
      caller_sleeping_.store(true, std::memory_order_seq_cst);
      done_cv_.wait(lock, [&] { return done_.load(std::memory_order_seq_cst) == parts; });
      caller_sleeping_.store(false, std::memory_order_relaxed);
    }
    fn_ = nullptr;
    if (error_) std::rethrow_exception(error_);
    return true;
  }

 private:
  // Claims and runs parts of loop `gen` until none is left.
  void run_parts(uint32_t gen) {
    uint64_t w = claim_.load(std::memory_order_acquire);
    for (;;) {
      // A claim of a later loop's part, or of none, ends this one's work.
      if (gen_of(w) != gen || next_of(w) >= parts_of(w)) return;
      if (!claim_.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
      // The claimed part is not done, so the caller is still in this loop: fn_ and n_ are its.
      const int64_t part = next_of(w), parts = parts_of(w);
      const int64_t begin = n_ * part / parts, end = n_ * (part + 1) / parts;
      try {
        (*fn_)(begin, end);
      } catch (...) {
        std::lock_guard lock(error_mu_);
        if (!error_) error_ = std::current_exception();
      }
      if (done_.fetch_add(1, std::memory_order_seq_cst) + 1 == parts &&
          caller_sleeping_.load(std::memory_order_seq_cst)) {
        std::lock_guard lock(mu_);
        done_cv_.notify_all();
      }
      w = claim_.load(std::memory_order_acquire);
    }
  }

  void work() {
    t_in_worker = true;
    uint32_t seen = 0;
    for (;;) {
      auto fresh = [&] { return gen_of(claim_.load(std::memory_order_seq_cst)) != seen; };
      if (!spin_until([&] { return fresh() || stop_flag_.load(std::memory_order_relaxed); })) {
        std::unique_lock lock(mu_);
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        wake_.wait(lock, [&] { return stop_ || fresh(); });
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
        if (stop_) return;
      }
      if (stop_flag_.load(std::memory_order_relaxed)) return;
      seen = gen_of(claim_.load(std::memory_order_acquire));
      run_parts(seen);
    }
  }

  int target_;
  std::vector<std::thread> workers_;
  std::mutex run_mu_;  // one parallel loop at a time
  std::atomic<uint64_t> claim_{0};
  std::atomic<int64_t> done_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<bool> stop_flag_{false};
  uint32_t generation_ = 0;  // the caller's alone (under run_mu_)
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  std::mutex error_mu_;
  std::exception_ptr error_;
  std::mutex mu_;  // the sleepers' condition variables
  std::condition_variable wake_, done_cv_;
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
