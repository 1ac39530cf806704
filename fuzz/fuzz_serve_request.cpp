// libFuzzer target: `wick serve`'s request bodies (tools/wick/serve). The first byte picks
// the endpoint (completions, chat, embeddings), the rest is the HTTP body. Parsing either
// accepts the request or throws serve::ApiError with a 4xx status; nothing else may be
// thrown, and what is accepted satisfies the bounds the engine relies on. The text of an
// accepted request also goes through StopText with its stop strings, in pieces, checking
// that what comes out is a prefix of what went in and holds no stop string.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "serve/api_error.h"
#include "serve/openai_request.h"
#include "serve/request_json.h"
#include "wick/text/stop_text.h"

namespace {

using namespace wick::serve;

void check_stops(const GenerationRequest& r, std::string_view text) {
  wick::text::StopText s(r.stop);
  std::string out;
  for (size_t i = 0; i < text.size(); i += 3) out += s.push(text.substr(i, 3));
  out += s.flush();
  if (text.substr(0, out.size()) != out) __builtin_trap();
  for (const auto& stop : r.stop)
    if (out.find(stop) != std::string::npos) __builtin_trap();
}

void check_generation(const GenerationRequest& r) {
  const auto& s = r.sampling;
  if (!(s.temperature == 0 || (s.temperature >= wick::models::kMinTemperature && s.temperature <= 2))) __builtin_trap();
  if (!(s.top_p > 0 && s.top_p <= 1) || s.top_k < 0 || !(s.min_p >= 0 && s.min_p <= 1)) __builtin_trap();
  if (r.max_tokens && *r.max_tokens < 1) __builtin_trap();
  if (r.stop.size() > kMaxStops || r.top_logprobs < 0 || r.top_logprobs > kMaxTopLogprobs) __builtin_trap();
  wick::models::check_sampling_options(s);  // what the engine checks again: must accept
  check_stops(r, r.endpoint == Endpoint::Chat ? (r.messages.empty() ? "" : r.messages[0].content) : r.prompt_text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    const nlohmann::json j = parse_request_body(body);
    switch (data[0] % 3) {
      case 0: check_generation(parse_completion_request(j)); break;
      case 1: check_generation(parse_chat_request(j)); break;
      default: {
        const EmbeddingRequest e = parse_embedding_request(j);
        if (e.inputs.empty() || e.inputs.size() > kMaxEmbeddingInputs) __builtin_trap();
      }
    }
  } catch (const ApiError& e) {
    if (e.status < 400 || e.status > 499) __builtin_trap();
  }
  return 0;
}
