// Constrained decoding through the engine (Request::grammar, Generator::grammar): a tiny
// random-weight model sampled at temperature 1, so that only the constraint makes its
// output a sentence; the outputs are checked by the grammar and by an independent parser.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "serve/constrain.h"
#include "support/devices.h"
#include "support/llama_oracle.h"
#include "wick/models/llama.h"
#include "wick/serve/engine.h"
#include "wick/serve/generator.h"
#include "wick/text/grammar.h"
#include "wick/text/tokenizer.h"

using namespace wick;

namespace {

// Short documents: the fixture's context is 128 positions of single-byte tokens.
constexpr const char* kRecord =
    R"g(root ::= "{\"id\": " id ", \"name\": \"" [a-z]{1,6} "\", \"tags\": [" (tag ("," tag){0,2})? "]}"
id ::= "0" | [1-9] [0-9]{0,2}
tag ::= "\"" [A-Z] [a-z]{0,3} "\"" | "null" | "true")g";

struct Fixture {
  models::LlamaModel model = models::LlamaModel::load(test::llama_dir("llama3"));
  text::Tokenizer tokenizer = text::Tokenizer::from_folder(test::llama_dir("llama3"));
  std::shared_ptr<const text::TokenTable> tokens = std::make_shared<const text::TokenTable>(tokenizer);
  std::vector<int32_t> prompt = tokenizer.encode("Give me a record:");
  std::vector<int32_t> stops{2};  // config.json eos_token_id (the tokenizer files name none)
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

// An engine stepped by the test (no thread of its own) over the fixture's 128 positions.
serve::EngineOptions stepped_options(int64_t parallel, std::shared_ptr<const text::TokenTable> tokens) {
  serve::EngineOptions eo;
  eo.parallel = parallel;
  eo.ctx_size = 128;
  eo.thread = false;
  eo.tokens = std::move(tokens);
  return eo;
}

// The fixture's prompt sampled at temperature 1 under a grammar, ending at its stop token.
serve::Request sampled_request(const Fixture& f, int64_t max_tokens, uint64_t seed, const text::Grammar& g) {
  serve::Request r;
  r.prompt = f.prompt;
  r.max_tokens = max_tokens;
  r.sampling.temperature = 1.0;
  r.sampling.seed = seed;
  r.stop_tokens = f.stops;
  r.grammar = g;
  return r;
}

std::string bytes_of(const text::TokenTable& t, const std::vector<int32_t>& ids) {
  std::string out;
  for (const int32_t id : ids) out += t.bytes(id);
  return out;
}

}  // namespace

TEST(Constrained, SampledOutputsAreSentencesOfTheGrammar) {
  Fixture& f = fixture();
  const text::Grammar g = text::Grammar::from_gbnf(kRecord);
  for (uint64_t seed = 0; seed < 12; ++seed) {
    models::SamplingOptions so;
    so.temperature = 1.0;
    so.seed = seed;
    serve::Generator gen(f.model, so);
    gen.grammar(g, f.tokens);
    std::vector<int32_t> out;
    gen.generate(
        f.prompt, 100, [&](int32_t id) { out.push_back(id); }, f.stops);
    const std::string text = bytes_of(*f.tokens, out);
    ASSERT_TRUE(g.accepts(text)) << "seed " << seed << ": " << text;
    const auto doc = nlohmann::json::parse(text);  // independent of the grammar engine
    EXPECT_TRUE(doc.at("id").is_number_integer());
    EXPECT_LE(doc.at("tags").size(), 3u);
    // Without the grammar the same seed gives something else (the constraint did the work).
    serve::Generator free(f.model, so);
    std::vector<int32_t> loose;
    free.generate(
        f.prompt, 100, [&](int32_t id) { loose.push_back(id); }, f.stops);
    EXPECT_FALSE(g.accepts(bytes_of(*f.tokens, loose)));
  }
}

TEST(Constrained, AGrammarThatAllowsEveryTextChangesNothingWhileTheOutputIsText) {
  Fixture& f = fixture();
  // Every UTF-8 text: the mask holds every token that keeps the bytes valid UTF-8, so greedy
  // picks what it picks alone until the free run's bytes stop being text.
  const text::Grammar any = text::Grammar::from_gbnf(R"(root ::= .*)");
  serve::Generator plain(f.model, {});
  std::vector<int32_t> a, b;
  plain.generate(
      f.prompt, 40, [&](int32_t id) { a.push_back(id); }, f.stops);
  serve::Generator constrained(f.model, {});
  constrained.grammar(any, f.tokens);
  constrained.generate(
      f.prompt, 40, [&](int32_t id) { b.push_back(id); }, f.stops);
  size_t text = 0;
  while (text < a.size() && any.accepts_prefix(bytes_of(*f.tokens, {a.begin(), a.begin() + long(text) + 1}))) ++text;
  ASSERT_GE(text, 5u);
  ASSERT_GT(b.size(), text);
  EXPECT_EQ(std::vector<int32_t>(a.begin(), a.begin() + long(text)),
            std::vector<int32_t>(b.begin(), b.begin() + long(text)));
  EXPECT_TRUE(any.accepts_prefix(bytes_of(*f.tokens, b)));
}

TEST(Constrained, GreedyPicksTheBestAllowedTokenAndEndsWithTheSentence) {
  Fixture& f = fixture();
  const text::Grammar yes_no = text::Grammar::from_gbnf(R"(root ::= "yes" | "no")");
  serve::Generator gen(f.model, {});
  gen.grammar(yes_no, f.tokens);
  std::vector<int32_t> out;
  // No stop tokens at all: the generation ends because nothing can follow the sentence.
  gen.generate(f.prompt, 50, [&](int32_t id) { out.push_back(id); });
  const std::string text = bytes_of(*f.tokens, out);
  EXPECT_TRUE(text == "yes" || text == "no") << text;
  // The first token is the argmax over the tokens the grammar allows first ('y', 'n').
  const std::vector<int64_t> ids(f.prompt.begin(), f.prompt.end());
  const Tensor logits = f.model.forward(Tensor::from_vector(ids, Shape{1, int64_t(ids.size())}), nullptr, true);
  const std::vector<float> last = logits.contiguous().to(DType::F32).to_vector<float>();
  const int32_t y = *f.tokenizer.token_id("y"), n = *f.tokenizer.token_id("n");
  EXPECT_EQ(out.front(), last[size_t(y)] >= last[size_t(n)] ? y : n);
}

TEST(Constrained, RequestsWithoutATokenTableAreRefused) {
  Fixture& f = fixture();
  serve::EngineOptions eo;
  eo.parallel = 1;
  eo.ctx_size = 64;
  eo.thread = false;
  serve::Engine engine(f.model, eo);
  serve::Request r;
  r.prompt = f.prompt;
  r.grammar = text::Grammar::from_gbnf(R"(root ::= "a")");
  EXPECT_THROW(engine.submit(r, [](const serve::TokenEvent&) {}), Error);
  serve::Generator gen(f.model, {});
  EXPECT_THROW(gen.grammar(r.grammar, nullptr), Error);
}

TEST(Constrained, ManySequencesInOneBatchEachFollowTheirGrammar) {
  Fixture& f = fixture();
  const serve::EngineOptions eo = stepped_options(6, f.tokens);
  serve::Engine engine(f.model, eo);
  const std::vector<text::Grammar> grammars{text::Grammar::from_gbnf(kRecord),
                                            text::Grammar::from_gbnf(R"(root ::= [0-9]{3} "-" [0-9]{4})"),
                                            text::Grammar::from_gbnf(R"(root ::= ("ab" | "cd")+ "!")")};
  std::vector<std::vector<int32_t>> outs(12);
  std::vector<serve::FinishReason> ends(12);
  for (size_t k = 0; k < outs.size(); ++k) {
    const serve::Request r = sampled_request(f, 100, k, grammars[k % 3]);
    ASSERT_TRUE(engine.submit(r, [&, k](const serve::TokenEvent& ev) {
      if (ev.token >= 0) outs[k].push_back(ev.token);
      if (ev.finish != serve::FinishReason::None) ends[k] = ev.finish;
    }));
  }
  engine.run_until_idle();
  for (size_t k = 0; k < outs.size(); ++k) {
    const std::string text = bytes_of(*f.tokens, outs[k]);
    if (ends[k] == serve::FinishReason::Length) {
      EXPECT_TRUE(grammars[k % 3].accepts_prefix(text)) << k << ": " << text;
      EXPECT_EQ(k % 3, 2u) << "only the unbounded grammar may run out of tokens";
    } else {
      EXPECT_EQ(ends[k], serve::FinishReason::Stop) << k;
      EXPECT_TRUE(grammars[k % 3].accepts(text)) << k << ": " << text;
    }
  }
}

// Greedy constrained rows take the masked argmax on the model's device (the packed mask
// unpacked there); each token is checked against the logits of a plain forward over the
// text so far and an allowed set found without masks: the tokens whose bytes keep the text
// a prefix of a sentence (Grammar::accepts_prefix), the stop token when it is a sentence.
class ConstrainedDevices : public test::DeviceTest {};

TEST_P(ConstrainedDevices, GreedyStepsPickTheBestTokenTheGrammarAllows) {
  Fixture& f = fixture();
  models::LlamaLoadOptions lo;
  lo.device = dev();
  lo.dtype = DType::F32;
  const auto model = models::LlamaModel::load(test::llama_dir("llama3"), lo);
  const serve::EngineOptions eo = stepped_options(3, f.tokens);
  serve::Engine engine(model, eo);
  const std::vector<text::Grammar> grammars{text::Grammar::from_gbnf(kRecord),
                                            text::Grammar::from_gbnf(R"(root ::= [0-9]{3} "-" [0-9]{4})"),
                                            text::Grammar::from_gbnf(R"(root ::= ("ab" | "cd" | "e")+ "!")")};
  std::vector<std::vector<int32_t>> outs(grammars.size());
  for (size_t k = 0; k < grammars.size(); ++k) {
    serve::Request r;
    r.prompt = f.prompt;
    r.max_tokens = 40;
    r.stop_tokens = f.stops;
    r.grammar = grammars[k];
    ASSERT_TRUE(engine.submit(r, [&, k](const serve::TokenEvent& ev) {
      if (ev.token >= 0) outs[k].push_back(ev.token);
    }));
  }
  engine.run_until_idle();
  const int64_t vocab = model.vocab_size();
  for (size_t k = 0; k < grammars.size(); ++k) {
    ASSERT_FALSE(outs[k].empty()) << k;
    std::vector<int32_t> ids(f.prompt);
    std::string text;
    for (size_t t = 0; t <= outs[k].size(); ++t) {
      const std::vector<int64_t> ids64(ids.begin(), ids.end());
      const Tensor logits =
          model.forward(Tensor::from_vector(ids64, Shape{1, int64_t(ids64.size())}).to(dev()), nullptr, true);
      const std::vector<float> last = logits.contiguous().to(Device::cpu()).to(DType::F32).to_vector<float>();
      float best = -INFINITY;
      for (int32_t id = 0; id < vocab; ++id) {
        const bool allowed = id == f.stops[0] ? grammars[k].accepts(text)
                                              : id < int32_t(f.tokens->vocab_size()) &&
                                                    grammars[k].accepts_prefix(text + f.tokens->bytes(id));
        if (allowed) best = std::max(best, last[size_t(id)]);
      }
      ASSERT_GT(best, -INFINITY) << k << ": a dead end after " << text;
      // The last step's pick is the stop token (not emitted) unless max_tokens ended it.
      const int32_t pick = t < outs[k].size() ? outs[k][t] : f.stops[0];
      if (t == outs[k].size() && !grammars[k].accepts(text)) break;  // ended by max_tokens
      const bool allowed =
          pick == f.stops[0] ? grammars[k].accepts(text) : grammars[k].accepts_prefix(text + f.tokens->bytes(pick));
      ASSERT_TRUE(allowed) << k << ": token " << pick << " after " << text;
      EXPECT_NEAR(last[size_t(pick)], best, 1e-3f * std::max(1.0f, std::abs(best))) << k << " after " << text;
      if (t == outs[k].size()) break;
      ids.push_back(pick);
      text += f.tokens->bytes(pick);
    }
    EXPECT_TRUE(grammars[k].accepts_prefix(text)) << k << ": " << text;
  }
}

WICK_INSTANTIATE_DEVICE_TEST(ConstrainedDevices);

// A free prefix (a thinking model's reasoning) before the grammar: the output opens with the
// marker, runs free up to the closing one, then is a sentence; no stop before it. The
// closing byte is favoured (logit_bias) so that the random model reaches it.
TEST(Constrained, AFreePrefixComesBeforeTheSentence) {
  Fixture& f = fixture();
  const serve::EngineOptions eo = stepped_options(4, f.tokens);
  serve::Engine engine(f.model, eo);
  const text::Grammar g = text::Grammar::from_gbnf(kRecord);
  const int32_t close = *f.tokenizer.token_id(">");
  std::vector<std::string> texts(8);
  std::vector<serve::FinishReason> ends(8);
  for (size_t k = 0; k < texts.size(); ++k) {
    serve::Request r = sampled_request(f, 110, 100 + k, g);
    r.sampling.logit_bias = {{close, 4.0}, {f.stops[0], 6.0}};  // the stop must wait for the sentence
    r.grammar_prefix = text::FreePrefix{k % 2 ? "" : "<r", ">"};
    ASSERT_TRUE(engine.submit(r, [&, k](const serve::TokenEvent& ev) {
      if (ev.token >= 0) texts[k] += f.tokens->bytes(ev.token);
      if (ev.finish != serve::FinishReason::None) ends[k] = ev.finish;
    }));
  }
  engine.run_until_idle();
  int closed = 0;
  for (size_t k = 0; k < texts.size(); ++k) {
    const std::string& text = texts[k];
    const std::string open = k % 2 ? "" : "<r";
    ASSERT_TRUE(text.starts_with(open)) << k << ": " << text;
    const size_t at = text.find('>', open.size());
    if (ends[k] == serve::FinishReason::Length && at == std::string::npos) continue;
    ASSERT_NE(at, std::string::npos) << k << ": ended before the sentence: " << text;
    const std::string answer = text.substr(at + 1);
    if (ends[k] == serve::FinishReason::Length) {
      EXPECT_TRUE(g.accepts_prefix(answer)) << k << ": " << text;
      continue;
    }
    EXPECT_EQ(ends[k], serve::FinishReason::Stop) << k;
    ASSERT_TRUE(g.accepts(answer)) << k << ": " << text;
    EXPECT_TRUE(nlohmann::json::parse(answer).at("id").is_number_integer());
    ++closed;
  }
  EXPECT_GE(closed, 4);
  serve::Request bad;
  bad.prompt = f.prompt;
  bad.grammar_prefix = text::FreePrefix{"<", ">"};
  EXPECT_THROW(engine.submit(bad, [](const serve::TokenEvent&) {}), Error);  // no grammar
  bad.grammar = g;
  bad.grammar_prefix = text::FreePrefix{"<", ""};
  EXPECT_THROW(engine.submit(bad, [](const serve::TokenEvent&) {}), Error);  // no closing marker
}

// masked_argmax alone (src/serve/constrain.h), against the first maximum over the allowed
// ids computed here: rows whose indices fit a byte (uploaded with the masks) and rows that
// do not (an index list of their own), a vocabulary that is not a multiple of 8 or 32.
TEST_P(ConstrainedDevices, MaskedArgmaxIsTheFirstMaximumOfTheAllowedIds) {
  constexpr int64_t kRows = 300, kVocab = 77;
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-4, 4);
  std::vector<float> host(size_t(kRows * kVocab));
  for (float& x : host) x = std::round(u(rng) * 4) / 4;  // ties happen: the first maximum wins
  const Tensor logits = Tensor::from_vector(host, Shape{kRows, kVocab}).to(dev());
  const Tensor bits = serve::bit_table(dev());
  for (const std::vector<int64_t>& rows : {std::vector<int64_t>{3, 17, 255}, std::vector<int64_t>{5, 299, 0, 256}}) {
    std::vector<std::vector<uint32_t>> masks(rows.size(), std::vector<uint32_t>((kVocab + 31) / 32));
    for (size_t r = 0; r < rows.size(); ++r)
      for (int64_t id = 0; id < kVocab; ++id)
        if (rng() % 3 == 0 || id == int64_t(r)) masks[r][size_t(id) / 32] |= 1u << (id % 32);
    std::vector<const std::vector<uint32_t>*> ptrs;
    for (const auto& m : masks) ptrs.push_back(&m);
    const std::vector<int64_t> got =
        serve::masked_argmax(logits, rows, ptrs, bits).to(Device::cpu()).to(DType::I64).to_vector<int64_t>();
    ASSERT_EQ(got.size(), rows.size());
    for (size_t r = 0; r < rows.size(); ++r) {
      int64_t best = -1;
      for (int64_t id = 0; id < kVocab; ++id)
        if ((masks[r][size_t(id) / 32] >> (id % 32)) & 1)
          if (best < 0 || host[size_t(rows[r] * kVocab + id)] > host[size_t(rows[r] * kVocab + best)]) best = id;
      EXPECT_EQ(got[r], best) << "row " << rows[r];
    }
  }
}
