// Ops issued concurrently from several threads on one device: results must equal the
// ones computed single-threaded beforehand, and shared state (the CPU thread pool, the
// random generator, memory-mapped files) must be race-free. scripts/sanitize.sh runs this
// binary under ThreadSanitizer (ctest -R Concurrency), so every suite name here contains
// "Concurrency".
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/devices.h"
#include "support/golden.h"
#include "wick/io.h"
#include "wick/nn.h"
#include "wick/ops.h"

namespace fs = std::filesystem;

namespace wick {
namespace {

constexpr int kThreads = 4;

// Collects failures from worker threads (gtest assertions are thread-safe, but one
// summary per test keeps a broken run readable).
class Failures {
 public:
  void add(const std::string& what) {
    std::lock_guard lock(mu_);
    if (messages_.size() < 10) messages_.push_back(what);
    ++count_;
  }
  void expect_none() const {
    EXPECT_EQ(count_, 0);
    for (const std::string& m : messages_) ADD_FAILURE() << m;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> messages_;
  int count_ = 0;
};

// Runs body(thread_index) on kThreads threads at once; exceptions become failures.
void run_threads(Failures& failures, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  std::atomic<int> ready{0};
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      ++ready;
      while (ready.load() < kThreads) std::this_thread::yield();  // start together
      try {
        body(i);
      } catch (const std::exception& e) {
        failures.add("thread " + std::to_string(i) + " threw: " + e.what());
      }
    });
  for (auto& t : threads) t.join();
}

// Small integer values stored as floats: add/matmul/sum are exact whatever the order
// of accumulation, so the only tolerance needed is for softmax.
Tensor int_valued(Shape shape, int seed, Device device) {
  std::vector<float> v(size_t(shape.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(int((i * 7 + size_t(seed) * 13) % 9) - 4);
  return Tensor::from_vector(v, shape, device);
}

// The op sequence each thread repeats; returns every result as doubles.
std::vector<std::vector<double>> op_sequence(const Tensor& a, const Tensor& b, const Tensor& m, const Tensor& idx) {
  std::vector<std::vector<double>> out;
  auto keep = [&](const Tensor& t) { out.push_back(t.to(DType::F64).to_vector<double>()); };
  keep(add(a, b));                             // 65536 elements: big enough for the pool
  keep(matmul(m, m.t()));                      // transposed operand
  keep(sum(a, {1}));                           // row sums
  keep(sum(a));                                // full reduction
  keep(softmax(m));                            // last dim
  keep(index_select(a, 0, idx));               // rows
  keep(cat({m, m.narrow(0, 1, 3)}, 0));        // offset view
  keep(a.narrow(1, 3, 100).to(DType::BF16));   // cast of a strided view (exact: small ints)
  keep((a.t() * Scalar(2.0)).to(DType::I64));  // transposed, then to an integer dtype
  return out;
}

struct ThreadInputs {
  Tensor a, b, m, idx;
};

ThreadInputs inputs_for(int thread, Device device) {
  return {int_valued(Shape{256, 256}, thread, device), int_valued(Shape{256, 256}, thread + 100, device),
          int_valued(Shape{48, 64}, thread + 200, device),
          Tensor::from_vector<int64_t>({255, 0, int64_t(thread), 17, 17, 128}).to(device)};
}

::testing::AssertionResult same(const std::vector<std::vector<double>>& got,
                                const std::vector<std::vector<double>>& expected) {
  if (got.size() != expected.size()) return ::testing::AssertionFailure() << "result count differs";
  for (size_t i = 0; i < got.size(); ++i) {
    auto r = test::all_close(got[i], expected[i], 1e-5, 1e-6);
    if (!r) return ::testing::AssertionFailure() << "op #" << i << ": " << r.message();
  }
  return ::testing::AssertionSuccess();
}

class Concurrency : public test::DeviceTest {};

TEST_P(Concurrency, OpsOnOwnTensorsMatchSingleThreadedResults) {
  std::vector<ThreadInputs> in;
  std::vector<std::vector<std::vector<double>>> expected;
  for (int i = 0; i < kThreads; ++i) {
    in.push_back(inputs_for(i, dev()));
    expected.push_back(op_sequence(in[i].a, in[i].b, in[i].m, in[i].idx));
  }
  // Spot-check the reference itself against hand-derived values.
  EXPECT_EQ(expected[0][3][0], double(sum(in[0].a.to(DType::F64)).item<double>()));
  EXPECT_EQ(expected[0][5].size(), size_t(6 * 256));

  Failures failures;
  constexpr int kRounds = 40;  // x 9 ops = 360 ops per thread
  run_threads(failures, [&](int t) {
    for (int r = 0; r < kRounds; ++r) {
      auto got = op_sequence(in[t].a, in[t].b, in[t].m, in[t].idx);
      auto ok = same(got, expected[t]);
      if (!ok) {
        failures.add("thread " + std::to_string(t) + " round " + std::to_string(r) + ": " + ok.message());
        return;
      }
    }
  });
  synchronize(dev());
  failures.expect_none();
}

TEST_P(Concurrency, ReadsOfOneSharedTensor) {
  const Tensor shared = int_valued(Shape{300, 200}, 7, dev());
  const std::vector<double> before = shared.to(DType::F64).to_vector<double>();
  const double total = sum(shared.to(DType::F64)).item<double>();
  const std::vector<double> gram = matmul(shared.t(), shared).to(DType::F64).to_vector<double>();
  const std::vector<double> col0 = shared.select(1, 0).contiguous().to(DType::F64).to_vector<double>();

  Failures failures;
  run_threads(failures, [&](int t) {
    for (int r = 0; r < 20; ++r) {
      if (sum(shared.to(DType::F64)).item<double>() != total) failures.add("sum differs");
      if (!same({matmul(shared.t(), shared).to(DType::F64).to_vector<double>()}, {gram}))
        failures.add("gram matrix differs");
      if (shared.select(1, 0).contiguous().to(DType::F64).to_vector<double>() != col0) failures.add("column differs");
      if (shared.to(DType::F64).to_vector<double>() != before) failures.add("shared tensor changed");
    }
  });
  synchronize(dev());
  failures.expect_none();
  EXPECT_EQ(shared.to(DType::F64).to_vector<double>(), before);
}

TEST_P(Concurrency, ManualSeedAndRandFromManyThreads) {
  Failures failures;
  run_threads(failures, [&](int t) {
    for (int r = 0; r < 50; ++r) {
      manual_seed(uint64_t(t * 1000 + r));
      const std::vector<float> u = rand(Shape{257}, DType::F32, dev()).to_vector<float>();
      for (float x : u)
        if (!(x >= 0.0f && x < 1.0f)) failures.add("rand value outside [0, 1): " + std::to_string(x));
      const std::vector<float> n = randn(Shape{33}, DType::F32, dev()).to_vector<float>();
      for (float x : n)
        if (!std::isfinite(x)) failures.add("randn value not finite");
    }
  });
  failures.expect_none();
  // The generator still works deterministically afterwards.
  manual_seed(42);
  const auto a = rand(Shape{16}, DType::F32, dev()).to_vector<float>();
  manual_seed(42);
  EXPECT_EQ(rand(Shape{16}, DType::F32, dev()).to_vector<float>(), a);
}

WICK_INSTANTIATE_DEVICE_TEST(Concurrency);

// File::open maps the file read-only; concurrent opens of one file and reads from the
// resulting tensors must not interfere.
TEST(ConcurrencyFiles, SafetensorsOpenOfTheSameFile) {
  const fs::path dir = fs::temp_directory_path() / ("wick_test_concurrency_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "shared.safetensors";
  const Tensor w = int_valued(Shape{64, 33}, 3, Device::cpu());
  const Tensor ids = Tensor::from_vector<int64_t>({5, -2, 1LL << 40});
  safetensors::save(file, {{"w", w}, {"ids", ids}}, {{"format", "pt"}});
  const std::vector<float> w_values = w.to_vector<float>();

  Failures failures;
  run_threads(failures, [&](int t) {
    for (int r = 0; r < 50; ++r) {
      const safetensors::File f = safetensors::File::open(file);
      if (f.tensor("w").to_vector<float>() != w_values) failures.add("w differs");
      if (f.tensor("ids").to_vector<int64_t>() != std::vector<int64_t>({5, -2, 1LL << 40})) failures.add("ids differ");
      if (sum(f.tensor("w")).item<float>() != sum(w).item<float>()) failures.add("sum of mapped w differs");
    }
  });
  failures.expect_none();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace wick
