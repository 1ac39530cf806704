// `wick gpt2-bench`: the median time of one GPT-2 forward pass over a (batch, seq)
// block of token ids, on one device (LlamaModel, the architecture table's GPT-2 row) or tensor-parallel over several
// GPUs (Gpt2TensorParallel). Prints one JSON object; bench/gpt2_tp_h200.py runs it for 1 and for all GPUs and tabulates
// the speedup.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <variant>

#include "bench_commands.h"
#include "commands.h"
#include "subcommands.h"
#include "wick/models/gpt2.h"
#include "wick/models/gpt2_tp.h"
#include "wick/models/llama.h"
#include "wick/wick.h"

namespace wick::cli {

namespace {

struct Args {
  std::string model, devices = "cuda:0", dtype = "bf16";
  int64_t batch = 8, seq = 1024;
  int iters = 10, warmup = 2;
  bool last_only = false;
};

std::vector<Device> parse_devices(const std::string& list) {
  std::vector<Device> out;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(Device::parse(item));
  WICK_CHECK(!out.empty(), InvalidArgument, "gpt2-bench: --devices is empty");
  return out;
}

int run_gpt2_bench(const Args& a) {
  const std::vector<Device> devices = parse_devices(a.devices);
  const DType dtype = dtype_from_name(a.dtype);
  WICK_CHECK(a.batch > 0 && a.seq > 0 && a.iters > 0 && a.warmup >= 0, InvalidArgument,
             "gpt2-bench: --batch, --seq and --iters must be positive");
  // One device: the plain model; several: one rank per device.
  // One device: the model of the architecture table (LlamaModel's GPT-2 row); several: one
  // tensor-parallel rank per device.
  std::variant<models::LlamaModel, models::Gpt2TensorParallel> model =
      devices.size() == 1 ? std::variant<models::LlamaModel, models::Gpt2TensorParallel>(
                                models::LlamaModel::load(a.model, {.device = devices[0], .dtype = dtype}))
                          : std::variant<models::LlamaModel, models::Gpt2TensorParallel>(
                                models::Gpt2TensorParallel::load(a.model, devices, dtype));
  const auto [context, vocab] = std::visit(
      [](auto& m) {
        if constexpr (std::is_same_v<std::decay_t<decltype(m)>, models::LlamaModel>)
          return std::pair{m.config().context_length, m.config().vocab_size};
        else
          return std::pair{m.config().n_positions, m.config().vocab_size};
      },
      model);
  WICK_CHECK(a.seq <= context, InvalidArgument, "gpt2-bench: --seq ", a.seq, " exceeds n_positions ", context);

  // Arbitrary but fixed token ids spread over the vocabulary.
  std::vector<int64_t> ids(size_t(a.batch * a.seq));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int64_t((i * 7919 + 13) % size_t(vocab));
  const Tensor tokens = Tensor::from_vector(ids, Shape{a.batch, a.seq});
  auto forward = [&] {
    const Tensor logits = std::visit(
        [&](auto& m) {
          if constexpr (std::is_same_v<std::decay_t<decltype(m)>, models::LlamaModel>)
            return m.forward(tokens, nullptr, a.last_only);
          else
            return m.forward(tokens, a.last_only);
        },
        model);
    for (const Device& d : devices) synchronize(d);  // the step ends when every rank's work does
    return logits;
  };
  for (int i = 0; i < a.warmup; ++i) forward();
  std::vector<double> ms;
  for (int i = 0; i < a.iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    forward();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  const double median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);

  nlohmann::json j;
  j["model"] = a.model;
  for (const Device& d : devices) j["devices"].push_back(d.str());
  j["world_size"] = devices.size();
  j["mode"] = devices.size() == 1 ? "single" : "tensor_parallel";
  j["dtype"] = a.dtype;
  j["batch"] = a.batch;
  j["seq"] = a.seq;
  j["last_only"] = a.last_only;
  j["iters"] = a.iters;
  j["median_ms"] = median;
  j["min_ms"] = ms.front();
  j["tokens_per_s"] = double(a.batch * a.seq) / (median / 1e3);
  std::printf("%s\n", j.dump(2).c_str());
  return 0;
}

}  // namespace

Runner add_gpt2_bench(CLI::App& app) {
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand("gpt2-bench", bench_command_about("gpt2-bench"));
  sub->add_option("--model", a->model, "GPT-2 folder (config.json + model.safetensors)")->required();
  sub->add_option("--devices", a->devices, "comma-separated devices, e.g. cuda:0 or cuda:0,cuda:1 (default cuda:0)");
  sub->add_option("--batch", a->batch, "sequences per forward (default 8)");
  sub->add_option("--seq", a->seq, "tokens per sequence (default 1024)");
  sub->add_option("--dtype", a->dtype, "bf16, f16 or f32 (default bf16)")->check(CLI::IsMember({"f32", "f16", "bf16"}));
  sub->add_option("--iters", a->iters, "timed forward passes; the median is reported (default 10)");
  sub->add_option("--warmup", a->warmup, "untimed forward passes first (default 2)");
  sub->add_flag("--last-only", a->last_only, "LM head on the last position only (as generation does)");
  return [a] { return run_gpt2_bench(*a); };
}

}  // namespace wick::cli
