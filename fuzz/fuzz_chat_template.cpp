// libFuzzer target: any byte string as a chat template (and, after a NUL byte, as the JSON
// context to render it with) either renders or raises wick::Error; it never crashes, hangs
// or grows memory past the limits (deep nesting, self-referencing namespaces, huge ranges
// and repetitions all once had a way to). A template that renders renders the same twice.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "wick/error.h"
#include "wick/text/chat_template.h"

namespace {

constexpr std::string_view kDefaultContext =
    R"({"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},)"
    R"( {"role": "assistant", "content": "yo", "tool_calls": [{"id": "abcdefghi", "type": "function",)"
    R"( "function": {"name": "f", "arguments": {"x": 1}}}]}, {"role": "tool", "content": "r"}],)"
    R"( "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],)"
    R"( "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\0');
  const std::string_view source = input.substr(0, split);
  const std::string_view context = split == std::string_view::npos ? kDefaultContext : input.substr(split + 1);
  // Small limits keep each run fast; the limits themselves are what is being exercised.
  wick::text::ChatTemplateLimits limits;
  limits.max_steps = 200'000;
  limits.max_output_bytes = 1 << 20;
  limits.max_container_items = 1 << 16;
  limits.max_seconds = 1.0;
  try {
    const auto t = wick::text::ChatTemplate::parse(source, limits);
    const std::string a = t.render_json(context);
    if (a.size() > limits.max_output_bytes) __builtin_trap();
    // strftime_now is the one source of variation between two renders.
    if (source.find("strftime_now") == std::string_view::npos && t.render_json(context) != a) __builtin_trap();
  } catch (const wick::Error&) {
  }
  return 0;
}
