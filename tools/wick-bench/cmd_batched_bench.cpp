// `wick batched-bench`: batched decoding throughput, as llama.cpp's llama-batched-bench
// measures it. For each npl (parallel sequences): prefill npl prompts of npp tokens, then
// ntg decode steps of one token per sequence; prints the prefill and decode times and the
// aggregate tok/s per npl in llama-batched-bench's table columns.
//
// --mode batch (default) drives the model directly, like llama-batched-bench drives
// llama_decode: prefill in forward_batch calls of at most --max-step-tokens tokens, then one
// step of npl tokens at a time (greedy: the argmax of each row is fed back). --step picks the
// decode step: graph (default; models::BatchDecoder, a CUDA graph per lane count, recorded
// before the timing starts), eager (BatchDecoder op by op) or forward (forward_batch).
// --mode engine runs the same work through serve::Engine (npl requests submitted at once,
// prefill until every request's first token, decode until the last one finishes): what
// `wick serve` adds to the batched forward (threading, sampling, events).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench_commands.h"
#include "commands.h"
#include "subcommands.h"
#include "wick/models/batch_decoder.h"
#include "wick/models/gpt2.h"
#include "wick/models/llama.h"
#include "wick/serve/engine.h"
#include "wick/wick.h"

namespace wick::cli {

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string model, device = "cpu", dtype, mode = "batch", step = "graph", npl = "1,8,32", quant_activation = "q8";
  int64_t npp = 256, ntg = 256, max_step_tokens = 2048, kv_block_size = 16;
  bool json = false;
};

struct Row {
  int64_t npl = 0;
  double t_pp = 0, t_tg = 0;  // seconds
  int64_t tg_tokens = 0;      // tokens generated in t_tg
};

std::vector<int64_t> parse_list(const std::string& list) {
  std::vector<int64_t> out;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');) {
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    WICK_CHECK(used == item.size() && v > 0, InvalidArgument, "batched-bench: -npl takes positive integers, got '",
               item, "'");
    out.push_back(v);
  }
  WICK_CHECK(!out.empty(), InvalidArgument, "batched-bench: -npl is empty");
  return out;
}

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// Arbitrary but fixed prompt tokens, different per sequence.
std::vector<int32_t> prompt(int64_t seq, int64_t n, int64_t vocab) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[size_t(i)] = int32_t((seq * 7919 + i * 104729 + 13) % vocab);
  return t;
}

Row run_batch(const models::CausalLM& m, const Args& a, int64_t npl) {
  // The caches as the server lays them out: slots of one pool (KvCache::pooled), so that the
  // decode steps attend for all sequences in one call.
  models::KvCache layout(a.npp + a.ntg);
  m.reserve_cache(layout);
  std::vector<models::KvCache> caches = models::KvCache::pooled(layout, npl);
  std::vector<std::vector<int32_t>> prompts;
  for (int64_t s = 0; s < npl; ++s) prompts.push_back(prompt(s, a.npp, m.vocab_size()));
  std::vector<int32_t> next(static_cast<size_t>(npl));
  auto argmax_rows = [&](const Tensor& logits, size_t first) {
    const Tensor ids = argmax(logits, -1).to(Device::cpu()).to(DType::I64);
    const auto v = ids.to_vector<int64_t>();
    for (size_t i = 0; i < v.size(); ++i) next[first + i] = int32_t(v[i]);
  };
  const auto t0 = Clock::now();
  // Prefill: forwards of at most max_step_tokens, whole prompts or chunks of them.
  int64_t seq = 0, fed = 0;
  while (seq < npl) {
    std::vector<models::BatchSequence> batch;
    std::vector<size_t> finishing;  // the sequences whose prompt ends in this forward
    for (int64_t budget = a.max_step_tokens; budget > 0 && seq < npl;) {
      const int64_t n = std::min(budget, a.npp - fed);
      batch.push_back(
          {std::span<const int32_t>(prompts[size_t(seq)]).subspan(size_t(fed), size_t(n)), &caches[size_t(seq)]});
      budget -= n;
      fed += n;
      finishing.push_back(fed == a.npp ? size_t(seq) : SIZE_MAX);
      if (fed == a.npp) ++seq, fed = 0;
    }
    const Tensor logits = m.forward_batch(batch);
    const auto v = argmax(logits, -1).to(Device::cpu()).to(DType::I64).to_vector<int64_t>();
    for (size_t i = 0; i < finishing.size(); ++i)
      if (finishing[i] != SIZE_MAX) next[finishing[i]] = int32_t(v[i]);
  }
  synchronize(m.device());
  // Decode: ntg steps of one token per sequence, as llama-batched-bench times them.
  models::BatchDecoder decoder(m, a.step == "graph");
  const bool use_decoder = a.step != "forward" && m.batch_decode_supported();
  if (use_decoder) decoder.prepare(caches[0], npl);
  const auto t1 = Clock::now();
  for (int64_t step = 0; step < a.ntg; ++step) {
    std::vector<models::BatchSequence> batch;
    for (int64_t s = 0; s < npl; ++s)
      batch.push_back({std::span<const int32_t>(&next[size_t(s)], 1), &caches[size_t(s)]});
    argmax_rows(use_decoder ? decoder.step(batch) : m.forward_batch(batch), 0);
  }
  synchronize(m.device());
  return {npl, seconds(t0, t1), seconds(t1, Clock::now()), npl * a.ntg};
}

Row run_engine(const models::CausalLM& m, const Args& a, int64_t npl) {
  serve::EngineOptions o;
  o.parallel = npl;
  o.cuda_graphs = a.step == "graph";
  o.ctx_size = a.npp + a.ntg;  // ntg - 1 tokens are fed back
  o.max_queue = npl;
  o.prefill_chunk = a.npp;
  o.max_step_tokens = std::max(a.max_step_tokens, npl);
  o.block_size = a.kv_block_size;
  serve::Engine engine(m, o);
  std::mutex mu;
  std::condition_variable cv;
  int64_t first = 0, finished = 0;
  Clock::time_point t_first, t_done;
  const auto t0 = Clock::now();
  for (int64_t s = 0; s < npl; ++s) {
    serve::Request r;
    r.prompt = prompt(s, a.npp, m.vocab_size());
    r.max_tokens = a.ntg;
    auto on_event = [&, seen = false](const serve::TokenEvent& e) mutable {
      const std::lock_guard<std::mutex> lock(mu);
      if (!seen && (seen = true) && ++first == npl) t_first = Clock::now();
      if (e.finish != serve::FinishReason::None && ++finished == npl) t_done = Clock::now();
      cv.notify_all();
    };
    WICK_CHECK(engine.submit(std::move(r), on_event).has_value(), Internal, "batched-bench: the engine refused");
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return finished == npl; });
  // The first token of each request comes with its prefill: the decode time is the rest.
  return {npl, seconds(t0, t_first), seconds(t_first, t_done), npl * (a.ntg - 1)};
}

// The network alone (no tokenizer: the bench feeds token ids): a GGUF file or a Hugging
// Face folder of any architecture of the table (GPT-2 too).
std::unique_ptr<models::CausalLM> load(const Args& a) {
  const Device device = Device::parse(a.device);
  const std::optional<DType> dtype = a.dtype.empty() ? std::nullopt : std::optional(dtype_from_name(a.dtype));
  models::LlamaLoadOptions o;
  o.device = device;
  o.dtype = dtype;
  o.quant_activation = quant_activation_from_name(a.quant_activation);
  return std::make_unique<models::LlamaModel>(models::LlamaModel::load(a.model, o));
}

int run_batched_bench(const Args& a) {
  WICK_CHECK(a.npp > 0 && a.ntg > 0 && a.max_step_tokens > 0, InvalidArgument,
             "batched-bench: -npp, -ntg and --max-step-tokens must be positive");
  WICK_CHECK(a.mode == "batch" || a.mode == "engine", InvalidArgument, "batched-bench: --mode is batch or engine, got ",
             a.mode);
  WICK_CHECK(a.step == "graph" || a.step == "eager" || a.step == "forward", InvalidArgument,
             "batched-bench: --step is graph, eager or forward, got ", a.step);
  const std::vector<int64_t> npls = parse_list(a.npl);
  const std::unique_ptr<models::CausalLM> model = load(a);
  const models::CausalLM& m = *model;
  WICK_CHECK(a.npp + a.ntg <= m.context_length(), InvalidArgument, "batched-bench: -npp ", a.npp, " + -ntg ", a.ntg,
             " exceed the model's context ", m.context_length());
  // Warm-up (first-touch allocations, thread pool start): one small batch, not timed.
  Args warm = a;
  warm.npp = std::min<int64_t>(a.npp, 8);
  warm.ntg = 2;
  (void)run_batch(m, warm, 2);

  nlohmann::json rows = nlohmann::json::array();
  if (!a.json) {
    std::printf("model %s, device %s, dtype %s, mode %s, step %s\n\n", a.model.c_str(), m.device().str().c_str(),
                std::string(dtype_name(m.dtype())).c_str(), a.mode.c_str(), a.step.c_str());
    std::printf(
        "|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |\n");
    std::printf(
        "|-------|--------|------|--------|----------|----------|----------|----------|----------|----------|\n");
  }
  for (const int64_t npl : npls) {
    const Row r = a.mode == "batch" ? run_batch(m, a, npl) : run_engine(m, a, npl);
    // As llama-batched-bench counts: every prompt token, every generated token.
    const double pp = double(npl * a.npp), tg = double(r.tg_tokens), t = r.t_pp + r.t_tg;
    if (a.json) {
      rows.push_back({{"npp", a.npp},
                      {"ntg", a.ntg},
                      {"npl", npl},
                      {"t_pp", r.t_pp},
                      {"s_pp", pp / r.t_pp},
                      {"t_tg", r.t_tg},
                      {"s_tg", tg / r.t_tg},
                      {"t", t},
                      {"s", (pp + tg) / t}});
    } else {
      std::printf("| %5lld | %6lld | %4lld | %6lld | %8.3f | %8.2f | %8.3f | %8.2f | %8.3f | %8.2f |\n",
                  (long long)a.npp, (long long)a.ntg, (long long)npl, (long long)(npl * (a.npp + a.ntg)), r.t_pp,
                  pp / r.t_pp, r.t_tg, tg / r.t_tg, t, (pp + tg) / t);
      std::fflush(stdout);
    }
  }
  if (a.json) std::printf("%s\n", rows.dump(2).c_str());
  return 0;
}

}  // namespace

Runner add_batched_bench(CLI::App& app) {
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand("batched-bench", bench_command_about("batched-bench"));
  sub->add_option("--model", a->model, "a GGUF file or a Hugging Face folder")->required();
  sub->add_option("--device", a->device, "cpu or cuda:N (default cpu)");
  sub->add_option("--dtype", a->dtype, "compute dtype f32, f16 or bf16 (default: the model's default)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  add_quant_activation_option(sub, a->quant_activation);
  sub->add_option("-p,--npp", a->npp, "prompt tokens per sequence (-npp as llama-batched-bench; default 256)");
  sub->add_option("-n,--ntg", a->ntg, "generated tokens per sequence (default 256)");
  sub->add_option("-l,--npl", a->npl, "comma-separated parallel sequence counts (default 1,8,32)");
  sub->add_option("--max-step-tokens", a->max_step_tokens, "tokens of one prefill forward at most (default 2048)");
  sub->add_option("--mode", a->mode, "batch: the model directly (default); engine: through serve::Engine");
  sub->add_option("--kv-block-size", a->kv_block_size, "engine mode: positions per KV cache block (default 16)");
  sub->add_option("--step", a->step,
                  "the decode step of --mode batch: graph (recorded batched step, default), eager, forward");
  sub->add_flag("--json", a->json, "one JSON array instead of the table");
  return [a] { return run_batched_bench(*a); };
}

}  // namespace wick::cli
