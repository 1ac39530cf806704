// `wick serve`'s request parsing (tools/wick/serve): OpenAI's fields with their defaults,
// types and ranges, every refusal a 400 naming the field, and bounded JSON (nesting,
// invalid UTF-8).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "serve/api_error.h"
#include "serve/openai_request.h"
#include "serve/request_json.h"

namespace wick::serve {
namespace {

using nlohmann::json;

// The ApiError a call throws (status 0 when it throws none).
template <class F>
ApiError error_of(F f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e;
  }
  return ApiError(0, "no error");
}

TEST(ServeRequestJson, ParsesObjects) {
  const json j = parse_request_body(R"({"prompt": "héllo", "max_tokens": 3})");
  EXPECT_EQ(j["prompt"], "h\xc3\xa9llo");
  EXPECT_EQ(j["max_tokens"], 3);
}

TEST(ServeRequestJson, RefusesMalformedBodies) {
  struct Case {
    std::string body, message;
  };
  const Case cases[] = {
      {"", "not valid JSON"},
      {"{\"a\": ", "not valid JSON"},
      {"[1]", "must be a JSON object, got array"},
      {"\"x\"", "must be a JSON object, got string"},
      {"{\"a\": \"\xff\"}", "not valid UTF-8"},
      {"{\"a\": \"\xc3\"}", "not valid UTF-8"},
      {R"({"a": "\ud800"})", "not valid UTF-8"},
      {"{\"a\": 2e999}", "number overflow"},  // found by fuzz_serve_request
  };
  for (const Case& c : cases) {
    const ApiError e = error_of([&] { parse_request_body(c.body); });
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
  }
}

TEST(ServeRequestJson, BoundsNesting) {
  // kMaxJsonDepth - 1 levels inside the top object parse; one more is refused, and so is
  // a million (without exhausting the stack).
  auto nested = [](int n) { return "{\"a\": " + std::string(n, '[') + std::string(n, ']') + "}"; };
  EXPECT_NO_THROW(parse_request_body(nested(kMaxJsonDepth - 1)));
  EXPECT_EQ(error_of([&] { parse_request_body(nested(kMaxJsonDepth)); }).status, 400);
  const ApiError e = error_of([&] { parse_request_body(nested(1'000'000)); });
  EXPECT_NE(std::string(e.what()).find("deeper than 32"), std::string::npos) << e.what();
}

TEST(ServeRequestJson, FieldsNameTheirPath) {
  const json j = json::parse(R"({"o": {"b": "yes", "i": 1.5, "n": 7}, "u": 18446744073709551615})");
  const Fields f(j);
  const Fields o(j["o"], "o");
  ApiError e = error_of([&] { o.boolean("b"); });
  EXPECT_STREQ(e.what(), "o.b: expected a boolean, got string");
  EXPECT_EQ(e.param, "o.b");
  EXPECT_STREQ(error_of([&] { o.integer("i", 0, 10); }).what(), "o.i: expected an integer, got number");
  EXPECT_STREQ(error_of([&] { o.integer("n", 0, 5); }).what(), "o.n: must be in [0, 5], got 7");
  EXPECT_STREQ(error_of([&] { o.integer("n", 8, INT64_MAX); }).what(), "o.n: must be >= 8, got 7");
  EXPECT_EQ(error_of([&] { f.integer("u", 0, INT64_MAX); }).status, 400);
  EXPECT_EQ(o.number("n", 0, 10), 7.0);  // integers are numbers
  EXPECT_FALSE(o.string("missing"));
  EXPECT_EQ(error_of([&] { Fields(json::array(), "x"); }).param, "x");
}

TEST(ServeCompletionRequest, Defaults) {
  const GenerationRequest r = parse_completion_request(json::parse(R"({"prompt": "Hi"})"));
  EXPECT_EQ(r.endpoint, Endpoint::Completions);
  EXPECT_EQ(r.prompt_text, "Hi");
  EXPECT_FALSE(r.prompt_ids);
  EXPECT_FALSE(r.max_tokens);
  EXPECT_EQ(r.sampling.temperature, 1.0);  // OpenAI's default, not greedy
  EXPECT_EQ(r.sampling.top_p, 1.0);
  EXPECT_FALSE(r.seed_given);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.logprobs);
  EXPECT_TRUE(r.stop.empty());
}

TEST(ServeCompletionRequest, ReadsEveryParameter) {
  const GenerationRequest r = parse_completion_request(json::parse(R"({
      "model": "m", "prompt": ["Hi"], "max_tokens": 5, "temperature": 0.5, "top_p": 0.9, "top_k": 40,
      "min_p": 0.05, "presence_penalty": 1.5, "frequency_penalty": -0.5, "seed": -1, "stop": "\n",
      "n": 1, "stream": true, "stream_options": {"include_usage": true}, "logprobs": 3,
      "user": "ignored", "unknown_field": {"deep": [1, 2]}})"));
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.prompt_text, "Hi");
  EXPECT_EQ(r.max_tokens, 5);
  EXPECT_EQ(r.sampling.temperature, 0.5);
  EXPECT_EQ(r.sampling.top_p, 0.9);
  EXPECT_EQ(r.sampling.top_k, 40);
  EXPECT_EQ(r.sampling.min_p, 0.05);
  EXPECT_EQ(r.sampling.presence_penalty, 1.5);
  EXPECT_EQ(r.sampling.frequency_penalty, -0.5);
  EXPECT_EQ(r.sampling.seed, UINT64_MAX);  // -1 as 64 bits
  EXPECT_TRUE(r.seed_given);
  EXPECT_EQ(r.stop, std::vector<std::string>{"\n"});
  EXPECT_TRUE(r.stream && r.include_usage);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 3);
}

TEST(ServeCompletionRequest, PromptForms) {
  EXPECT_EQ(*parse_completion_request(json::parse(R"({"prompt": [1, 2, 3]})")).prompt_ids,
            (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(*parse_completion_request(json::parse(R"({"prompt": [[7]]})")).prompt_ids, std::vector<int32_t>{7});
  EXPECT_EQ(parse_completion_request(json::parse(R"({"prompt": "x", "temperature": 0.00001})")).sampling.temperature,
            0.0);  // below kMinTemperature: greedy, as it would be in effect
  // max_completion_tokens, the newer name, wins over max_tokens.
  EXPECT_EQ(parse_completion_request(json::parse(R"({"prompt": "x", "max_tokens": 3, "max_completion_tokens": 9})"))
                .max_tokens,
            9);
  // null means "not given".
  EXPECT_FALSE(parse_completion_request(json::parse(R"({"prompt": "x", "max_tokens": null})")).max_tokens);
  // top_p 0 keeps only the most probable token (top_k 1), whatever top_k says.
  const auto p0 = parse_completion_request(json::parse(R"({"prompt": "x", "top_p": 0, "top_k": 40})")).sampling;
  EXPECT_EQ(p0.top_p, 1.0);
  EXPECT_EQ(p0.top_k, 1);
  // Seeds span 64 bits, unsigned ones too.
  EXPECT_EQ(parse_completion_request(json::parse(R"({"prompt": "x", "seed": 18446744073709551615})")).sampling.seed,
            UINT64_MAX);
  EXPECT_EQ(parse_completion_request(json::parse(R"({"prompt": "x", "seed": 9223372036854775808})")).sampling.seed,
            uint64_t(1) << 63);
  EXPECT_EQ(parse_completion_request(json::parse(R"({"prompt": "x", "seed": 7})")).sampling.seed, 7u);
  // logit_bias: string keys of token ids.
  const auto lb =
      parse_completion_request(json::parse(R"({"prompt": "x", "logit_bias": {"50256": -100, "7": 2.5}})")).sampling;
  auto biases = lb.logit_bias;
  std::sort(biases.begin(), biases.end());
  EXPECT_EQ(biases, (std::vector<std::pair<int32_t, double>>{{7, 2.5}, {50256, -100.0}}));
  // Output constraints compile into the request's grammar.
  const auto constrained = parse_chat_request(
      json::parse(R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_object"}})"));
  ASSERT_TRUE(constrained.grammar.has_value());
  EXPECT_TRUE(constrained.grammar->accepts(R"({"a": [1, true]})"));
  EXPECT_FALSE(constrained.grammar->accepts("[1]"));
  const auto choice = parse_completion_request(json::parse(R"({"prompt": "x", "guided_choice": ["yes", "n\"o"]})"));
  EXPECT_TRUE(choice.grammar->accepts("n\"o"));
  EXPECT_FALSE(choice.grammar->accepts("maybe"));
  // tools: an empty list is no tools; response_format text is the default.
  EXPECT_NO_THROW(parse_chat_request(json::parse(
      R"({"messages": [{"role": "user", "content": "x"}], "tools": [], "response_format": {"type": "text"}})")));
}

TEST(ServeCompletionRequest, RefusalsNameTheField) {
  struct Case {
    const char* body;
    const char* param;
  };
  const Case cases[] = {
      {R"({})", "prompt"},
      {R"({"prompt": 5})", "prompt"},
      {R"({"prompt": ["a", "b"]})", "prompt"},
      {R"({"prompt": [1, -2]})", "prompt"},
      {R"({"prompt": "x", "max_tokens": -1})", "max_tokens"},
      {R"({"prompt": "x", "max_tokens": 0})", "max_tokens"},
      {R"({"prompt": "x", "max_tokens": "4"})", "max_tokens"},
      {R"({"prompt": "x", "max_completion_tokens": true})", "max_completion_tokens"},
      {R"({"prompt": "x", "temperature": 2.5})", "temperature"},
      {R"({"prompt": "x", "temperature": "0"})", "temperature"},
      {R"({"prompt": "x", "top_p": -0.1})", "top_p"},
      {R"({"prompt": "x", "seed": 18446744073709551616})", "seed"},
      {R"({"prompt": "x", "top_p": 1.1})", "top_p"},
      {R"({"prompt": "x", "top_k": -1})", "top_k"},
      {R"({"prompt": "x", "min_p": 2})", "min_p"},
      {R"({"prompt": "x", "presence_penalty": 3})", "presence_penalty"},
      {R"({"prompt": "x", "frequency_penalty": -2.5})", "frequency_penalty"},
      {R"({"prompt": "x", "seed": 1.5})", "seed"},
      {R"({"prompt": "x", "logit_bias": [1]})", "logit_bias"},
      {R"({"prompt": "x", "logit_bias": {"a": 1}})", "logit_bias"},
      {R"({"prompt": "x", "logit_bias": {"-1": 1}})", "logit_bias"},
      {R"({"prompt": "x", "logit_bias": {"3": 101}})", "logit_bias"},
      {R"({"prompt": "x", "logit_bias": {"3": "1"}})", "logit_bias"},
      {R"({"prompt": "x", "logit_bias": {"99999999999": 1}})", "logit_bias"},
      {R"({"prompt": "x", "logit_bias": {" 5": 1}})", "logit_bias"},  // strtoll would skip the space
      {R"({"prompt": "x", "logit_bias": {" +5": 1}})", "logit_bias"},
      {R"({"prompt": "x", "response_format": {"type": null}})", "response_format"},  // was a 500
      {R"({"prompt": "x", "response_format": {"type": 1}})", "response_format.type"},
      {R"({"prompt": "x", "response_format": {}})", "response_format"},
      {R"({"prompt": "x", "tools": [{"type": "function"}]})", "tools"},
      {R"({"prompt": "x", "response_format": {"type": "json_schema"}})", "response_format"},
      {R"({"prompt": "x", "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": {"$ref": "#/x"}}}})",
       "response_format"},
      {R"({"prompt": "x", "response_format": {"type": "yaml"}})", "response_format"},
      {R"({"prompt": "x", "grammar": "root ::= (", "response_format": {"type": "text"}})", "grammar"},
      {R"({"prompt": "x", "guided_regex": "(a"})", "guided_regex"},
      {R"({"prompt": "x", "guided_choice": []})", "guided_choice"},
      {R"({"prompt": "x", "grammar": "root ::= \"a\"", "json_schema": {}})", "grammar"},
      {R"({"prompt": "x", "n": 2})", "n"},
      {R"({"prompt": "x", "stop": 1})", "stop"},
      {R"({"prompt": "x", "stop": [""]})", "stop"},
      {R"({"prompt": "x", "stop": ["a", 1]})", "stop"},
      {R"({"prompt": "x", "stop": ["a", "b", "c", "d", "e"]})", "stop"},
      {R"({"prompt": "x", "stream": 1})", "stream"},
      {R"({"prompt": "x", "stream_options": []})", "stream_options"},
      {R"({"prompt": "x", "stream_options": {"include_usage": "y"}})", "stream_options.include_usage"},
      {R"({"prompt": "x", "logprobs": 21})", "logprobs"},
      {R"({"prompt": "x", "echo": true})", "echo"},
      {R"({"prompt": "x", "best_of": 3})", "best_of"},
      {R"({"prompt": "x", "model": 4})", "model"},
  };
  for (const Case& c : cases) {
    const ApiError e = error_of([&] { parse_completion_request(json::parse(c.body)); });
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << ": " << e.what();
  }
}

TEST(ServeChatRequest, Messages) {
  const GenerationRequest r = parse_chat_request(json::parse(R"({"messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Hello "}, {"type": "text", "text": "there"}]},
      {"role": "assistant", "content": null, "tool_calls": []}],
      "logprobs": true, "top_logprobs": 2, "max_completion_tokens": 7})"));
  EXPECT_EQ(r.endpoint, Endpoint::Chat);
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[1].content, "Hello there");
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 2);
  EXPECT_EQ(r.max_tokens, 7);
}

TEST(ServeChatRequest, RefusalsNameTheField) {
  struct Case {
    const char* body;
    const char* param;
  };
  const Case cases[] = {
      {R"({})", "messages"},
      {R"({"messages": {}})", "messages"},
      {R"({"messages": []})", "messages"},
      {R"({"messages": [3]})", "messages[0]"},
      {R"({"messages": [{"content": "x"}]})", "messages[0].role"},
      {R"({"messages": [{"role": 1, "content": "x"}]})", "messages[0].role"},
      {R"({"messages": [{"role": "user", "content": 1}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", "messages[0].content[0].type"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": 3})", "logprobs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", "top_logprobs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 21})", "top_logprobs"},
  };
  for (const Case& c : cases) {
    const ApiError e = error_of([&] { parse_chat_request(json::parse(c.body)); });
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << ": " << e.what();
  }
}

TEST(ServeEmbeddingRequest, Inputs) {
  EmbeddingRequest r = parse_embedding_request(json::parse(R"({"input": "one", "model": "m"})"));
  EXPECT_EQ(r.inputs, std::vector<std::string>{"one"});
  EXPECT_EQ(r.model, "m");
  EXPECT_FALSE(r.base64);
  r = parse_embedding_request(json::parse(R"({"input": ["a", "b"], "encoding_format": "base64", "dimensions": 384})"));
  EXPECT_EQ(r.inputs.size(), 2u);
  EXPECT_TRUE(r.base64);
  EXPECT_EQ(r.dimensions, 384);
  for (const char* body :
       {R"({})", R"({"input": []})", R"({"input": [[1, 2]]})", R"({"input": ""})", R"({"input": 5})"})
    EXPECT_EQ(error_of([&] { parse_embedding_request(json::parse(body)); }).param, "input") << body;
  EXPECT_EQ(
      error_of([&] { parse_embedding_request(json::parse(R"({"input": "a", "encoding_format": "hex"})")); }).param,
      "encoding_format");
  json many = {{"input", json::array()}};
  for (size_t i = 0; i <= kMaxEmbeddingInputs; ++i) many["input"].push_back("x");
  EXPECT_EQ(error_of([&] { parse_embedding_request(many); }).status, 400);
}

TEST(ServeApiError, Shapes) {
  const json j = error_body(ApiError(404, "no such model", "model", "model_not_found"));
  EXPECT_EQ(j, json::parse(R"({"error": {"message": "no such model", "type": "not_found_error",
                                          "param": "model", "code": "model_not_found"}})"));
  EXPECT_EQ(error_body(429, "busy")["error"]["param"], nullptr);
  EXPECT_STREQ(error_type(429), "rate_limit_error");
  EXPECT_STREQ(error_type(401), "authentication_error");
  EXPECT_STREQ(error_type(503), "server_error");
  EXPECT_EQ(status_of(Error(ErrorKind::OutOfMemory, "x")), 503);
  EXPECT_EQ(status_of(Error(ErrorKind::InvalidArgument, "x")), 400);
  EXPECT_EQ(status_of(Error(ErrorKind::Device, "x")), 500);
  EXPECT_EQ(dump(json("a\xff")), "\"a\xef\xbf\xbd\"");  // invalid UTF-8 out: U+FFFD, no throw
}

}  // namespace
}  // namespace wick::serve
