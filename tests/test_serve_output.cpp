// `wick serve`'s output side (tools/wick/serve): stop strings over streamed text, OpenAI's
// response and chunk shapes, SSE framing, base64 (RFC 4648's test vectors) and the
// Prometheus exposition of /metrics.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "serve/metrics.h"
#include "serve/openai_response.h"
#include "wick/text/stop_text.h"

namespace wick::serve {
namespace {

using nlohmann::json;

// Feeds pieces through a StopText; returns what it let out (flushed at the end).
std::string run(std::vector<std::string> stops, const std::vector<std::string>& pieces, bool* stopped = nullptr,
                std::vector<std::string>* emitted = nullptr) {
  text::StopText s(std::move(stops));
  std::string out;
  for (const auto& p : pieces) {
    const std::string e = s.push(p);
    if (emitted) emitted->push_back(e);
    out += e;
  }
  out += s.flush();
  if (stopped) *stopped = s.stopped();
  return out;
}

TEST(ServeStopText, CutsBeforeTheStopString) {
  bool stopped = false;
  EXPECT_EQ(run({"END"}, {"hello ", "wor", "ld END and more"}, &stopped), "hello world ");
  EXPECT_TRUE(stopped);
  EXPECT_EQ(run({"END"}, {"no stop here"}, &stopped), "no stop here");
  EXPECT_FALSE(stopped);
  // A stop string split over pieces, one byte at a time.
  EXPECT_EQ(run({"\n\n"}, {"a", "\n", "\n", "b"}, &stopped), "a");
  EXPECT_TRUE(stopped);
  // The earliest of several stop strings ends the text.
  EXPECT_EQ(run({"xyz", "b"}, {"a", "b", "xyz"}), "a");
  EXPECT_EQ(run({"stop"}, {"stop"}), "");  // at the very start
  // Nothing after the stop string comes out, however much more is pushed.
  EXPECT_EQ(run({"!"}, {"hi!", "more", "and more"}), "hi");
}

TEST(ServeStopText, HoldsBackOnlyWhatCouldStartAStop) {
  std::vector<std::string> emitted;
  // "wor" could start "world": held until "x" rules it out.
  EXPECT_EQ(run({"world"}, {"hello wor", "x"}, nullptr, &emitted), "hello worx");
  EXPECT_EQ(emitted, (std::vector<std::string>{"hello ", "worx"}));
  emitted.clear();
  // A held suffix that turns out a false start is released with what follows; the
  // overlapping real stop after it is found ("aab" holds "aa", then "aab" is "a" + "ab").
  EXPECT_EQ(run({"ab"}, {"aa", "ab"}, nullptr, &emitted), "aa");
  EXPECT_EQ(emitted, (std::vector<std::string>{"a", "a"}));
  emitted.clear();
  // Held text comes out at the end when generation stops for another reason.
  EXPECT_EQ(run({"</s>"}, {"text </"}, nullptr, &emitted), "text </");
  EXPECT_EQ(emitted, (std::vector<std::string>{"text "}));
  // Multi-byte characters: a stop string starting with "é" holds back only whole "é".
  emitted.clear();
  EXPECT_EQ(run({"\xc3\xa9t\xc3\xa9"}, {"caf\xc3\xa9", " ok"}, nullptr, &emitted), "caf\xc3\xa9 ok");
  EXPECT_EQ(emitted, (std::vector<std::string>{"caf", "\xc3\xa9 ok"}));
}

const ResponseMeta kChat{Endpoint::Chat, "chatcmpl-7", "tiny.gguf", 1700000000};
const ResponseMeta kCompletion{Endpoint::Completions, "cmpl-7", "tiny.gguf", 1700000000};

TEST(ServeResponses, Completion) {
  const json j = completion_response(kCompletion, "text", nullptr, "length", {5, 3});
  EXPECT_EQ(j, json::parse(R"({"id": "cmpl-7", "object": "text_completion", "created": 1700000000,
      "model": "tiny.gguf", "system_fingerprint": "wick",
      "choices": [{"index": 0, "text": "text", "logprobs": null, "finish_reason": "length"}],
      "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8,
                "prompt_tokens_details": {"cached_tokens": 0}}})"));
}

TEST(ServeResponses, ChatWithLogprobs) {
  const std::vector<TokenLogprob> lps = {{"Hi", -0.25, {{"Hi", -0.25}, {"Yo", -1.5}}},
                                         {"!", -1e30, {}}};  // -inf-like values are clamped
  const json j = completion_response(kChat, "Hi!", &lps, "stop", {4, 2});
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"], json::parse(R"({"role": "assistant", "content": "Hi!", "refusal": null})"));
  EXPECT_EQ(j["choices"][0]["logprobs"], json::parse(R"({"refusal": null, "content": [
      {"token": "Hi", "logprob": -0.25, "bytes": [72, 105], "top_logprobs": [
          {"token": "Hi", "logprob": -0.25, "bytes": [72, 105]}, {"token": "Yo", "logprob": -1.5, "bytes": [89, 111]}]},
      {"token": "!", "logprob": -9999.0, "bytes": [33], "top_logprobs": []}]})"));
}

TEST(ServeResponses, CompletionLogprobsAreParallelArrays) {
  const std::vector<TokenLogprob> lps = {{"ab", -0.5, {{"ab", -0.5}}}, {"c", -2, {{"c", -2}, {"d", -3}}}};
  const json j = completion_response(kCompletion, "abc", &lps, "length", {1, 2});
  EXPECT_EQ(j["choices"][0]["logprobs"], json::parse(R"({"tokens": ["ab", "c"], "token_logprobs": [-0.5, -2.0],
      "top_logprobs": [{"ab": -0.5}, {"c": -2.0, "d": -3.0}], "text_offset": [0, 2]})"));
}

TEST(ServeResponses, ChatStreamChunks) {
  // OpenAI's order: the role, content deltas, an empty delta with the finish reason, then
  // (include_usage) a chunk with no choices and the usage; every other chunk has usage null.
  EXPECT_EQ(role_delta(kChat, true), json::parse(R"({"id": "chatcmpl-7", "object": "chat.completion.chunk",
      "created": 1700000000, "model": "tiny.gguf", "system_fingerprint": "wick", "usage": null,
      "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": null,
                   "finish_reason": null}]})"));
  EXPECT_EQ(stream_chunk(kChat, "Hel", nullptr, nullptr, false)["choices"][0],
            json::parse(R"({"index": 0, "delta": {"content": "Hel"}, "logprobs": null, "finish_reason": null})"));
  const json last = stream_chunk(kChat, "", nullptr, "stop", true);
  EXPECT_EQ(last["choices"][0], json::parse(R"({"index": 0, "delta": {}, "logprobs": null, "finish_reason": "stop"})"));
  EXPECT_TRUE(last.contains("usage") && last["usage"].is_null());
  const json usage = usage_chunk(kChat, {3, 4});
  EXPECT_EQ(usage["choices"], json::array());
  const json usage2 = usage_chunk(kChat, {3, 4, 2});
  EXPECT_EQ(usage2["usage"], json::parse(R"({"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7,
                                            "prompt_tokens_details": {"cached_tokens": 2}})"));
  EXPECT_FALSE(stream_chunk(kChat, "x", nullptr, nullptr, false).contains("usage"));
}

TEST(ServeResponses, CompletionStreamChunks) {
  const json c = stream_chunk(kCompletion, "abc", nullptr, nullptr, false);
  EXPECT_EQ(c["object"], "text_completion");
  EXPECT_EQ(c["choices"][0], json::parse(R"({"index": 0, "text": "abc", "logprobs": null, "finish_reason": null})"));
}

TEST(ServeResponses, SseFraming) {
  EXPECT_EQ(sse_event(json{{"a", "x\ny"}}), "data: {\"a\":\"x\\ny\"}\n\n");  // newlines escaped: one line
  EXPECT_EQ(kSseDone, "data: [DONE]\n\n");
}

TEST(ServeResponses, Base64) {
  // RFC 4648, section 10.
  const std::pair<const char*, const char*> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [in, out] : vectors) EXPECT_EQ(base64_encode(in), out) << in;
  EXPECT_EQ(base64_encode(std::string("\xff\xfe\x00", 3)), "//4A");
}

TEST(ServeResponses, Embeddings) {
  const std::vector<float> v = {1.0f, -2.0f, 0.5f, 0.0f};
  const json f = embeddings_response("minilm", v, 2, false, 6);
  EXPECT_EQ(f, json::parse(R"({"object": "list", "model": "minilm",
      "data": [{"object": "embedding", "index": 0, "embedding": [1.0, -2.0]},
               {"object": "embedding", "index": 1, "embedding": [0.5, 0.0]}],
      "usage": {"prompt_tokens": 6, "total_tokens": 6}})"));
  // base64 of little-endian float32: 1.0 = 00 00 80 3f, -2.0 = 00 00 00 c0.
  const json b = embeddings_response("minilm", v, 2, true, 6);
  EXPECT_EQ(b["data"][0]["embedding"], base64_encode(std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8)));
}

TEST(ServeMetrics, PrometheusText) {
  Metrics m;
  m.count_request("/v1/completions", 200);
  m.count_request("/v1/completions", 200);
  m.count_request("other", 404);
  m.observe_time_to_first_token(0.003);
  m.observe_time_to_first_token(0.2);
  m.observe_time_to_first_token(100);
  m.observe_inter_token_latency(0.001);
  m.count_disconnect();
  EngineStats e;
  e.queued = 2;
  e.running = 3;
  e.kv_used = 40;
  e.kv_capacity = 1024;
  e.generated_tokens = 77;
  e.cached_prompt_tokens = 5;
  e.last_step_batch = 3;
  const std::string text = m.render(e);
  auto has = [&](const std::string& line) { return text.find(line + "\n") != std::string::npos; };
  EXPECT_TRUE(has("# TYPE wick_http_requests_total counter"));
  EXPECT_TRUE(has("wick_http_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 2"));
  EXPECT_TRUE(has("wick_http_requests_total{endpoint=\"other\",status=\"404\"} 1"));
  EXPECT_TRUE(has("wick_client_disconnects_total 1"));
  EXPECT_TRUE(has("# TYPE wick_queue_length gauge"));
  EXPECT_TRUE(has("wick_queue_length 2"));
  EXPECT_TRUE(has("wick_running 3"));
  EXPECT_TRUE(has("wick_batch_size 3"));
  EXPECT_TRUE(has("wick_kv_used_positions 40"));
  EXPECT_TRUE(has("wick_kv_capacity_positions 1024"));
  EXPECT_TRUE(has("wick_generated_tokens_total 77"));
  EXPECT_TRUE(has("wick_cached_prompt_tokens_total 5"));
  // Buckets are cumulative; +Inf equals the count; the sum is exact.
  EXPECT_TRUE(has("# TYPE wick_time_to_first_token_seconds histogram"));
  EXPECT_TRUE(has("wick_time_to_first_token_seconds_bucket{le=\"0.005\"} 1"));
  EXPECT_TRUE(has("wick_time_to_first_token_seconds_bucket{le=\"0.25\"} 2"));
  EXPECT_TRUE(has("wick_time_to_first_token_seconds_bucket{le=\"60\"} 2"));
  EXPECT_TRUE(has("wick_time_to_first_token_seconds_bucket{le=\"+Inf\"} 3"));
  EXPECT_TRUE(has("wick_time_to_first_token_seconds_count 3"));
  EXPECT_TRUE(has("wick_time_to_first_token_seconds_sum 100.203"));
  EXPECT_TRUE(has("wick_inter_token_latency_seconds_bucket{le=\"0.001\"} 1"));
  // Every sample line is "name{labels} value" under a TYPE line of its family.
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = text.find('\n', pos);
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind("# ", 0) == 0) continue;
    ASSERT_NE(line.find(' '), std::string::npos) << line;
    EXPECT_EQ(line.find(' '), line.rfind(' ')) << line;
  }
}

}  // namespace
}  // namespace wick::serve
