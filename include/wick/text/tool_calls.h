// Tool calling in a model's own syntax: which syntax a chat template uses, the calls parsed
// back out of a reply, a call written the model's way (for history turns), and the grammar
// of a reply that is only calls (OpenAI's tool_choice "required" or a named function).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wick::text {

enum class ToolCallFormat {
  Hermes,   // <tool_call>{"name": ..., "arguments": {...}}</tool_call>, one block per call
            // (Qwen2.5/3, Hermes; also how a model whose template takes no tools is asked)
  Llama3,   // {"name": ..., "parameters": {...}} as the whole reply, after <|python_tag|> or
            // not (Llama 3.1 / 3.2's JSON tool calling)
  Mistral,  // [TOOL_CALLS] [{"name": ..., "arguments": {...}}, ...]
};

// The syntax a chat template writes its tool calls in (Hermes when it names none).
ToolCallFormat tool_call_format(std::string_view chat_template);
// Whether the template renders a `tools` list at all (else the server describes the tools
// in a system turn of its own, tools_system_prompt).
bool template_takes_tools(std::string_view chat_template);

struct ToolCall {
  std::string name;
  std::string arguments;  // JSON text of an object
};
struct ToolCallReply {
  std::string content;  // the reply's text outside the calls, trimmed
  std::vector<ToolCall> calls;
};
// The calls of a reply, in order; text that is not a well-formed call (not JSON, no name,
// arguments not an object) stays content.
ToolCallReply parse_tool_calls(std::string_view reply, ToolCallFormat format);
// A reply with tool calls as it is generated (what a streamed reply sends): the text that
// cannot belong to a call goes out as it comes, the rest is held until the end. Hermes: the
// text before the first <tool_call> (less what may be the start of one); Llama 3 and
// Mistral: a reply that does not open with a call ({, [, <|python_tag|>, [TOOL_CALLS]).
// Whitespace at either end of the released text is held, so that what push() released
// followed by finish()'s content is parse_tool_calls(reply)'s content.
class ToolCallStream {
 public:
  explicit ToolCallStream(ToolCallFormat format) : format_(format) {}
  // The next piece of the reply: the content that may go out now.
  std::string push(std::string_view piece);
  // The end: the calls and the content not released yet.
  ToolCallReply finish();

 private:
  ToolCallFormat format_;
  std::string reply_;
  size_t released_ = 0;   // bytes of reply_ released or skipped (leading whitespace)
  std::string content_;   // what push() released
  bool holding_ = false;  // a call may have begun: nothing more until the end
};

// A call as the model would write it (Hermes: its <tool_call> block).
std::string write_tool_call(const ToolCall& call, ToolCallFormat format);

struct ToolSpec {
  std::string name;
  std::string parameters;  // JSON Schema text of the arguments ("" or "{}": any object)
};
// GBNF of a reply that is 1 to max_calls calls of these tools, each naming one of them and
// giving arguments valid under its parameters (json_schema.h; its errors name the tool).
// Mistral's [TOOL_CALLS] is a special token no grammar emits: its calls are a bare array.
std::string tool_call_gbnf(std::span<const ToolSpec> tools, ToolCallFormat format, int max_calls);

// For a template that takes no tools: a system turn listing them (OpenAI's `tools` array as
// JSON text) and asking for Hermes-style calls.
std::string tools_system_prompt(std::string_view tools_json);

}  // namespace wick::text
