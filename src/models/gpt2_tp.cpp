// Gpt2TensorParallel: argument checks, one Gpt2Shard and one NCCL communicator per device,
// and one host thread per rank for each forward pass.
//
// Why the embeddings, layer norms and LM head are replicated rather than split: they are a
// small share of the FLOPs at GPT-2 sizes except the LM head, and replicating them keeps
// the forward pass at two all_reduces per block with nothing else to gather. Splitting the
// LM head by vocabulary (each rank a slice of the logits, then an all_gather or a
// distributed softmax/argmax) is the natural follow-up for large vocabularies.
#include "wick/models/gpt2_tp.h"

#include <exception>
#include <set>
#include <thread>

#include "gpt2_tp_shard.h"
#include "gpt2_weights.h"
#include "wick/distributed.h"
#include "wick/io.h"

namespace wick::models {

struct Gpt2TensorParallel::State {
  Gpt2Config config;
  std::vector<Device> devices;
  DType dtype = DType::F32;
  std::vector<Communicator> comms;  // comms[r] on devices[r]
  std::vector<Gpt2Shard> shards;    // shards[r] on devices[r]
};

Gpt2TensorParallel::Gpt2TensorParallel(std::unique_ptr<State> state) : state_(std::move(state)) {}
Gpt2TensorParallel::Gpt2TensorParallel(Gpt2TensorParallel&&) noexcept = default;
Gpt2TensorParallel& Gpt2TensorParallel::operator=(Gpt2TensorParallel&&) noexcept = default;
Gpt2TensorParallel::~Gpt2TensorParallel() = default;

const Gpt2Config& Gpt2TensorParallel::config() const { return state_->config; }
const std::vector<Device>& Gpt2TensorParallel::devices() const { return state_->devices; }
DType Gpt2TensorParallel::dtype() const { return state_->dtype; }

Gpt2TensorParallel Gpt2TensorParallel::load(const std::filesystem::path& dir, const std::vector<Device>& devices,
                                            DType dtype) {
  // Everything that can be wrong with the arguments is checked before NCCL is touched.
  WICK_CHECK(!devices.empty(), InvalidArgument, "gpt2 tensor parallel: no devices given");
  std::set<int> seen;
  for (const Device& d : devices) {
    WICK_CHECK(d.is_cuda(), InvalidArgument, "gpt2 tensor parallel: ", d,
               " is not a CUDA device (the ranks communicate through NCCL)");
    WICK_CHECK(seen.insert(d.index).second, InvalidArgument, "gpt2 tensor parallel: ", d, " listed twice");
  }
  WICK_CHECK(is_float(dtype), DTypeMismatch, "gpt2 tensor parallel: compute dtype must be f32, f16 or bf16, got ",
             dtype);
  auto state = std::make_unique<State>();
  state->config = Gpt2Config::from_json_file(dir / "config.json");
  state->devices = devices;
  state->dtype = dtype;
  const int world = int(devices.size());
  check_tensor_parallel_sizes(state->config, world);
  const auto file = safetensors::File::open(dir / "model.safetensors");
  gpt2_weights::check_layer_count(file, state->config);

  state->comms = Communicator::init_local(devices);
  for (int r = 0; r < world; ++r)
    state->shards.push_back(Gpt2Shard::load(file, state->config, r, world, devices[size_t(r)], dtype));
  return Gpt2TensorParallel(std::move(state));
}

Tensor Gpt2TensorParallel::forward(const Tensor& ids, bool last_only) { return run(ids, nullptr, last_only); }

Tensor Gpt2TensorParallel::forward(const Tensor& ids, Gpt2TpCache& cache, bool last_only) {
  return run(ids, &cache, last_only);
}

Tensor Gpt2TensorParallel::run(const Tensor& ids, Gpt2TpCache* cache, bool last_only) {
  // The checks a single-device forward makes, here on the caller's thread: a rank that failed
  // alone would leave the others waiting in an all_reduce.
  const Gpt2Config& c = state_->config;
  WICK_CHECK(ids.defined() && ids.rank() == 2, ShapeMismatch,
             "gpt2 tensor parallel: ids must have shape (batch, seq), got ",
             ids.defined() ? ids.shape().to_string() : "undefined");
  const int64_t B = ids.dim(0), T = ids.dim(1);
  WICK_CHECK(T > 0, InvalidArgument, "gpt2 tensor parallel: ids must hold at least one position, got shape ",
             ids.shape());
  const int64_t past = cache ? cache->length_ : 0;
  WICK_CHECK(past + T <= c.n_positions, InvalidArgument, "gpt2 tensor parallel: ", past, " cached + ", T,
             " new positions exceed n_positions ", c.n_positions);
  const int world = world_size();
  if (cache) {
    // Buffers from another model, dtype, device list or batch size are only replaced while
    // the cache is empty.
    const auto& s0 = state_->shards[0];
    const Shape want{B, c.n_head / world, c.n_positions, c.head_dim()};
    const bool fits = cache->k_.size() == size_t(world) && cache->k_[0].size() == size_t(c.n_layer) &&
                      cache->k_[0][0].shape() == want && cache->k_[0][0].dtype() == state_->dtype &&
                      cache->k_[0][0].device() == s0.device && cache->k_.back()[0].device() == state_->devices.back();
    if (!fits) {
      WICK_CHECK(past == 0, ShapeMismatch, "gpt2 tensor parallel: the cache holds ", past, " positions of batch ",
                 cache->batch_, " from another model, dtype, device list or batch size (ids ", ids.shape(),
                 "); clear() it first");
      cache->k_.clear();
      cache->v_.clear();
      for (const Gpt2Shard& s : state_->shards) {
        Gpt2Shard::KvBuffers b = s.empty_cache(B);
        cache->k_.push_back(std::move(b.k));
        cache->v_.push_back(std::move(b.v));
      }
      cache->batch_ = B;
    }
  }
  // On the host once, so that every rank copies it to its own device from there.
  const Tensor host_ids = ids.to(Device::cpu());

  std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
  Tensor logits;
  auto run_rank = [&](int r) {
    try {
      Communicator& comm = state_->comms[size_t(r)];
      Gpt2Shard::KvBuffers buffers;
      if (cache) buffers = {cache->k_[size_t(r)], cache->v_[size_t(r)]};  // handles to the same storage
      Tensor out = state_->shards[size_t(r)].forward(
          host_ids, last_only, [&comm](Tensor& t) { comm.all_reduce(t, ReduceKind::Sum); }, cache ? &buffers : nullptr,
          past);
      if (r == 0) logits = std::move(out);
    } catch (...) {
      errors[size_t(r)] = std::current_exception();
    }
  };
  if (world == 1) {
    run_rank(0);  // a one-rank all_reduce never waits for another thread
  } else {
    std::vector<std::jthread> threads;
    threads.reserve(size_t(world));
    for (int r = 0; r < world; ++r) threads.emplace_back(run_rank, r);
  }  // the jthreads join here

  for (int r = 0; r < world; ++r) {
    if (!errors[size_t(r)]) continue;
    const std::string where = "gpt2 tensor parallel: rank " + std::to_string(r) + " on " + devices()[size_t(r)].str();
    try {
      std::rethrow_exception(errors[size_t(r)]);
    } catch (const Error& e) {
      throw Error(e.kind(), where + ": " + e.what());
    } catch (const std::exception& e) {
      fail(ErrorKind::Device, where, ": ", e.what());
    } catch (...) {
      fail(ErrorKind::Device, where, ": an exception that is not a std::exception");
    }
  }
  if (cache) cache->length_ = past + T;
  return logits;
}

}  // namespace wick::models
