// Tensor-parallel GPT-2 (Gpt2TensorParallel, docs/tensor_parallel.md).
//
// Without a GPU: the sharding arithmetic, by running the ranks' shards (Gpt2Shard) on the
// CPU, one thread each, with a host all_reduce, against the single-device GPT-2 (LlamaModel) and
// transformers' logits (tests/data/gpt2, gen_gpt2.py); and the argument checks, which all
// run before NCCL is touched. With GPUs: N = 1 and N = 2 ranks through NCCL against
// the single-device model on cuda:0 and the oracle. Skipped (with the reason) below the GPUs needed.
//
// Tolerances are max |got - want| relative to the largest |want|, as in test_gpt2.cpp:
// f32 1e-5 against the single-device model (the only difference is the order of the partial sums), 1e-4
// against the oracle; bf16 5e-2 for both (7-bit mantissa, and the all_reduce rounds the
// partial sums to bf16). Measured on the CPU over all cases: f32 <= 7.5e-7 against the single-device model
// (0 for N = 1) and <= 6.2e-7 against the oracle; bf16 <= 1.5e-2 and <= 2.3e-2.
#include <gtest/gtest.h>

#include <barrier>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "models/gpt2_tp_shard.h"
#include "support/golden.h"
#include "wick/io.h"
#include "wick/models/gpt2.h"
#include "wick/models/gpt2_tp.h"
#include "wick/models/llama.h"

namespace wick {
namespace {

namespace fs = std::filesystem;
using models::Gpt2Config;
using models::Gpt2Shard;
using models::Gpt2TensorParallel;

fs::path model_dir(const std::string& name) { return test::data_path("gpt2/" + name); }

struct Oracle {
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::vector<std::vector<double>>> logits;  // [prompt][position][vocab]
};

Oracle oracle(const std::string& name) {
  std::ifstream in(test::data_path("gpt2/" + name + "/expected.json"));
  const auto j = nlohmann::json::parse(in);
  return {j["prompts"].get<std::vector<std::vector<int32_t>>>(),
          j["logits"].get<std::vector<std::vector<std::vector<double>>>>()};
}

Tensor ids_tensor(const std::vector<int32_t>& ids) {
  return Tensor::from_vector(std::vector<int64_t>(ids.begin(), ids.end()), Shape{1, int64_t(ids.size())});
}

std::vector<double> values(const Tensor& t) { return t.to(Device::cpu()).to(DType::F64).to_vector<double>(); }

// max |got - want| / max |want|.
double relative_error(const std::vector<double>& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double worst = 0, scale = 0;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    const double d = std::fabs(got[i] - want[i]);
    if (std::isnan(d)) return INFINITY;  // std::max would drop a NaN
    worst = std::max(worst, d);
    scale = std::max(scale, std::fabs(want[i]));
  }
  return worst / scale;
}

std::vector<double> flat(const std::vector<std::vector<double>>& rows) {
  std::vector<double> out;
  for (const auto& r : rows) out.insert(out.end(), r.begin(), r.end());
  return out;
}

double oracle_tolerance(DType dt) { return dt == DType::F32 ? 1e-4 : 5e-2; }
double model_tolerance(DType dt) { return dt == DType::F32 ? 1e-5 : 5e-2; }

// ---- the shards on the CPU ---------------------------------------------------------------

// all_reduce(Sum) across host threads: each rank publishes its tensor, all sum them in
// rank order (so every rank gets the same bits, as NCCL guarantees), then overwrite.
class HostAllReduce {
 public:
  explicit HostAllReduce(int n) : slots_(size_t(n)), sync_(n) {}
  void operator()(int rank, Tensor& t) {
    slots_[size_t(rank)] = &t;
    sync_.arrive_and_wait();
    Tensor sum = slots_[0]->clone();
    for (size_t r = 1; r < slots_.size(); ++r) sum = sum + *slots_[r];
    sync_.arrive_and_wait();  // everyone has read every slot before anyone overwrites its own
    t.copy_(sum);
  }

 private:
  std::vector<Tensor*> slots_;
  std::barrier<> sync_;
};

// `world` CPU shards of checkpoint `name`, one thread each per forward.
struct CpuTensorParallel {
  std::vector<Gpt2Shard> shards;
  std::vector<Gpt2Shard::KvBuffers> caches;  // per rank, once use_cache was asked for
  int64_t cached = 0;

  CpuTensorParallel(const std::string& name, int world, DType dt) {
    const Gpt2Config c = Gpt2Config::from_json_file(model_dir(name) / "config.json");
    const auto f = safetensors::File::open(model_dir(name) / "model.safetensors");
    for (int r = 0; r < world; ++r) shards.push_back(Gpt2Shard::load(f, c, r, world, Device::cpu(), dt));
  }

  // Rank 0's logits; with use_cache, ids follow the cached positions and are added to them.
  Tensor forward(const Tensor& ids, bool last_only = false, bool use_cache = false) {
    const int world = int(shards.size());
    if (use_cache && caches.empty())
      for (const Gpt2Shard& s : shards) caches.push_back(s.empty_cache(ids.dim(0)));
    HostAllReduce reduce(world);
    Tensor logits;
    std::vector<std::string> errors(static_cast<size_t>(world));
    {
      std::vector<std::jthread> threads;
      for (int r = 0; r < world; ++r)
        threads.emplace_back([&, r] {
          try {
            Tensor out = shards[size_t(r)].forward(
                ids, last_only, [&, r](Tensor& t) { reduce(r, t); }, use_cache ? &caches[size_t(r)] : nullptr,
                use_cache ? cached : 0);
            if (r == 0)
              logits = out;
            else if (out.defined())
              errors[size_t(r)] = "rank " + std::to_string(r) + " returned logits";
          } catch (const std::exception& e) {
            errors[size_t(r)] = e.what();
          }
        });
    }
    for (const auto& e : errors) EXPECT_EQ(e, "");
    if (use_cache) cached += ids.dim(1);
    return logits;
  }
};

Tensor cpu_tensor_parallel(const std::string& name, int world, DType dt, const Tensor& ids, bool last_only = false) {
  return CpuTensorParallel(name, world, dt).forward(ids, last_only);
}

struct Case {
  std::string name;
  int world;
};
// Every split each checkpoint allows: tiny2l 2 heads, erf3l 4, wide1l 3.
const std::vector<Case> kCpuCases = {{"tiny2l", 1}, {"tiny2l", 2}, {"erf3l", 2}, {"erf3l", 4}, {"wide1l", 3}};

TEST(Gpt2TensorParallelCpu, ShardsMatchTheSingleDeviceModelAndTheOracle) {
  for (DType dt : {DType::F32, DType::BF16})
    for (const Case& k : kCpuCases) {
      SCOPED_TRACE(k.name + " world " + std::to_string(k.world) + " " + std::string(dtype_name(dt)));
      const auto model = models::LlamaModel::load(model_dir(k.name), {.device = Device::cpu(), .dtype = dt});
      const Oracle o = oracle(k.name);
      for (size_t p = 0; p < o.prompts.size(); ++p) {
        const Tensor ids = ids_tensor(o.prompts[p]);
        const Tensor got = cpu_tensor_parallel(k.name, k.world, dt, ids);
        ASSERT_EQ(got.shape(), Shape({1, int64_t(o.prompts[p].size()), model.config().vocab_size}));
        EXPECT_EQ(got.dtype(), dt);
        EXPECT_LE(relative_error(values(got), values(model.forward(ids))), model_tolerance(dt)) << "prompt " << p;
        EXPECT_LE(relative_error(values(got), flat(o.logits[p])), oracle_tolerance(dt)) << "prompt " << p;
      }
    }
}

TEST(Gpt2TensorParallelCpu, LastOnlyAndBatches) {
  const auto model = models::LlamaModel::load(model_dir("erf3l"));
  const Oracle o = oracle("erf3l");
  const size_t T = std::min(o.prompts[0].size(), o.prompts[1].size());
  std::vector<int64_t> ids(o.prompts[0].begin(), o.prompts[0].begin() + long(T));
  ids.insert(ids.end(), o.prompts[1].begin(), o.prompts[1].begin() + long(T));
  const Tensor batch = Tensor::from_vector(ids, Shape{2, int64_t(T)});
  const Tensor full = cpu_tensor_parallel("erf3l", 4, DType::F32, batch);
  EXPECT_LE(relative_error(values(full), values(model.forward(batch))), 1e-5);
  const Tensor last = cpu_tensor_parallel("erf3l", 2, DType::F32, batch, /*last_only=*/true);
  ASSERT_EQ(last.shape(), Shape({2, 1, 512}));
  EXPECT_LE(relative_error(values(last), values(model.forward(batch, nullptr, true))), 1e-5);
  EXPECT_LE(relative_error(values(last.select(0, 1)), o.logits[1][T - 1]), 1e-4);
}

TEST(Gpt2TensorParallelCpu, KvCacheStepsMatchTheOracle) {
  for (const Case& k : {Case{"tiny2l", 2}, Case{"erf3l", 4}, Case{"wide1l", 3}}) {
    SCOPED_TRACE(k.name + " world " + std::to_string(k.world));
    const Oracle o = oracle(k.name);
    const auto& prompt = o.prompts[0];
    // Prefill 3 tokens, then one at a time; each step's logits are a row of the oracle's.
    CpuTensorParallel tp(k.name, k.world, DType::F32);
    const Tensor head = tp.forward(ids_tensor({prompt[0], prompt[1], prompt[2]}), false, /*use_cache=*/true);
    EXPECT_LE(relative_error(values(head), flat({o.logits[0][0], o.logits[0][1], o.logits[0][2]})), 1e-4);
    for (size_t t = 3; t < prompt.size(); ++t) {
      const Tensor step = tp.forward(ids_tensor({prompt[t]}), false, true);
      ASSERT_EQ(step.shape(), Shape({1, 1, 512}));
      EXPECT_LE(relative_error(values(step), o.logits[0][t]), 1e-4) << "position " << t;
    }
  }
}

// ---- argument checks: all before NCCL, so they run without a GPU --------------------------

TEST(Gpt2TensorParallelArgs, BadDeviceListsAndSizes) {
  const fs::path dir = model_dir("tiny2l");
  EXPECT_WICK_ERROR(Gpt2TensorParallel::load(dir, {}), InvalidArgument, "no devices given");
  EXPECT_WICK_ERROR(Gpt2TensorParallel::load(dir, {Device::cpu()}), InvalidArgument, "cpu is not a CUDA device");
  EXPECT_WICK_ERROR(Gpt2TensorParallel::load(dir, {Device::cuda(0), Device::cpu()}), InvalidArgument,
                    "cpu is not a CUDA device");
  EXPECT_WICK_ERROR(Gpt2TensorParallel::load(dir, {Device::cuda(0), Device::cuda(0)}), InvalidArgument,
                    "cuda:0 listed twice");
  EXPECT_WICK_ERROR(Gpt2TensorParallel::load(dir, {Device::cuda(0)}, DType::I64), DTypeMismatch,
                    "f32, f16 or bf16, got i64");
  EXPECT_WICK_ERROR(Gpt2TensorParallel::load(model_dir("no-such-model"), {Device::cuda(0)}), Io, "cannot open config");
  // wide1l has 3 heads; tiny2l 2 heads, erf3l 4.
  EXPECT_WICK_ERROR(Gpt2TensorParallel::load(model_dir("wide1l"), {Device::cuda(0), Device::cuda(1)}), InvalidArgument,
                    "n_head 3 is not divisible by the 2 devices");
  EXPECT_WICK_ERROR(Gpt2TensorParallel::load(dir, {Device::cuda(0), Device::cuda(1), Device::cuda(2)}), InvalidArgument,
                    "n_head 2 is not divisible by the 3 devices");
  const auto odd_mlp = Gpt2Config::from_json_string(R"({"n_embd": 32, "n_head": 2, "n_inner": 129})");
  EXPECT_WICK_ERROR(models::check_tensor_parallel_sizes(odd_mlp, 2), InvalidArgument,
                    "MLP width 129 is not divisible by the 2 devices");
  const Gpt2Config c = Gpt2Config::from_json_file(dir / "config.json");
  const auto f = safetensors::File::open(dir / "model.safetensors");
  EXPECT_WICK_ERROR(Gpt2Shard::load(f, c, 2, 2, Device::cpu(), DType::F32), InvalidArgument,
                    "rank 2 outside world size 2");
}

// ---- on GPUs, through NCCL -----------------------------------------------------------------

void expect_matches_single_device(int world) {
  std::vector<Device> devices;
  for (int i = 0; i < world; ++i) devices.push_back(Device::cuda(i));
  for (DType dt : {DType::F32, DType::BF16})
    for (const std::string name : {"tiny2l", "erf3l", "wide1l"}) {
      const Gpt2Config c = Gpt2Config::from_json_file(model_dir(name) / "config.json");
      if (c.n_head % world != 0) continue;  // wide1l (3 heads) does not split in 2
      SCOPED_TRACE(name + " world " + std::to_string(world) + " " + std::string(dtype_name(dt)));
      auto tp = Gpt2TensorParallel::load(model_dir(name), devices, dt);
      EXPECT_EQ(tp.world_size(), world);
      const auto model = models::LlamaModel::load(model_dir(name), {.device = Device::cuda(0), .dtype = dt});
      const Oracle o = oracle(name);
      for (size_t p = 0; p < o.prompts.size(); ++p) {
        const Tensor ids = ids_tensor(o.prompts[p]);
        const Tensor got = tp.forward(ids);
        ASSERT_EQ(got.shape(), Shape({1, int64_t(o.prompts[p].size()), c.vocab_size}));
        EXPECT_EQ(got.dtype(), dt);
        EXPECT_EQ(got.device(), Device::cuda(0));
        EXPECT_LE(relative_error(values(got), values(model.forward(ids))), model_tolerance(dt)) << "prompt " << p;
        EXPECT_LE(relative_error(values(got), flat(o.logits[p])), oracle_tolerance(dt)) << "prompt " << p;
        // ids already on a GPU, and last_only.
        const Tensor last = tp.forward(ids.to(Device::cuda(world - 1)), /*last_only=*/true);
        ASSERT_EQ(last.shape(), Shape({1, 1, c.vocab_size}));
        EXPECT_LE(relative_error(values(last), o.logits[p].back()), oracle_tolerance(dt)) << "prompt " << p;
      }
    }
}

TEST(Gpt2TensorParallelGpu, OneRankMatchesTheSingleDeviceModel) {
  if (cuda_device_count() < 1) GTEST_SKIP() << "needs 1 CUDA device (" << cuda_device_count() << " present)";
  expect_matches_single_device(1);
}

TEST(Gpt2TensorParallelGpu, TwoRanksMatchTheSingleDeviceModel) {
  if (cuda_device_count() < 2) GTEST_SKIP() << "needs 2 CUDA devices (" << cuda_device_count() << " present)";
  expect_matches_single_device(2);
}

TEST(Gpt2TensorParallelGpu, KvCacheStepsMatchTheFullForward) {
  if (cuda_device_count() < 1) GTEST_SKIP() << "needs 1 CUDA device (" << cuda_device_count() << " present)";
  const int world = std::min(cuda_device_count(), 2);
  std::vector<Device> devices;
  for (int i = 0; i < world; ++i) devices.push_back(Device::cuda(i));
  auto tp = Gpt2TensorParallel::load(model_dir("erf3l"), devices);
  const Oracle o = oracle("erf3l");
  const auto& prompt = o.prompts[0];
  models::Gpt2TpCache cache;
  const Tensor head = tp.forward(ids_tensor({prompt[0], prompt[1], prompt[2]}), cache);
  EXPECT_EQ(cache.length(), 3);
  EXPECT_LE(relative_error(values(head), flat({o.logits[0][0], o.logits[0][1], o.logits[0][2]})), 1e-4);
  for (size_t t = 3; t < prompt.size(); ++t) {
    const Tensor step = tp.forward(ids_tensor({prompt[t]}), cache, t + 1 == prompt.size());
    ASSERT_EQ(step.shape(), Shape({1, 1, 512}));
    EXPECT_LE(relative_error(values(step), o.logits[0][t]), 1e-4) << "position " << t;
  }
  EXPECT_EQ(cache.length(), int64_t(prompt.size()));
  EXPECT_WICK_ERROR(tp.forward(ids_tensor(std::vector<int32_t>(48, 1)), cache), InvalidArgument,
                    "cached + 48 new positions exceed n_positions 48");
  EXPECT_WICK_ERROR(tp.forward(Tensor::from_vector(std::vector<int64_t>{1, 2}, Shape{2, 1}), cache), ShapeMismatch,
                    "clear() it first");
  cache.clear();
  EXPECT_LE(relative_error(values(tp.forward(ids_tensor(prompt), cache)), flat(o.logits[0])), 1e-4);
  EXPECT_EQ(cache.length(), int64_t(prompt.size()));
}

TEST(Gpt2TensorParallelGpu, BadIdsAreRejectedBeforeTheRanksStart) {
  if (cuda_device_count() < 1) GTEST_SKIP() << "needs 1 CUDA device (" << cuda_device_count() << " present)";
  const int world = std::min(cuda_device_count(), 2);
  std::vector<Device> devices;
  for (int i = 0; i < world; ++i) devices.push_back(Device::cuda(i));
  auto tp = Gpt2TensorParallel::load(model_dir("tiny2l"), devices);  // n_positions 64
  EXPECT_WICK_ERROR(tp.forward(Tensor::from_vector(std::vector<int64_t>{1, 2})), ShapeMismatch, "(batch, seq)");
  EXPECT_WICK_ERROR(tp.forward(Tensor::empty({1, 0}, DType::I64)), InvalidArgument, "at least one position");
  EXPECT_WICK_ERROR(tp.forward(ids_tensor(std::vector<int32_t>(65, 1))), InvalidArgument,
                    "0 cached + 65 new positions exceed n_positions 64");
  // An error inside the ranks (float ids: embedding rejects them on every rank alike) comes
  // back as wick::Error naming the rank, and the model still works afterwards.
  EXPECT_WICK_ERROR(tp.forward(Tensor::from_vector(std::vector<float>{1, 2}, Shape{1, 2})), DTypeMismatch,
                    "gpt2 tensor parallel: rank 0 on cuda:0: embedding");
  EXPECT_EQ(tp.forward(ids_tensor({1, 2, 3})).shape(), Shape({1, 3, 512}));
}

}  // namespace
}  // namespace wick
