// OpenAI's tool calling in a chat request: `tools`, `tool_choice`, `parallel_tool_calls`,
// and the conversation's tool turns (assistant `tool_calls`, `tool` messages), read into
// what the chat template and the grammar need.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "request_json.h"
#include "wick/text/chat_template.h"
#include "wick/text/tool_calls.h"

namespace wick::serve {

inline constexpr size_t kMaxTools = 128;  // OpenAI's bound on `tools`

struct ToolRequest {
  std::vector<text::ToolSpec> tools;
  nlohmann::json tools_json = nlohmann::json::array();  // the tools as a template reads them
  std::string choice = "auto";                          // auto, none, required, or a tool's name
  bool parallel = true;                                 // parallel_tool_calls
  // The conversation as a tool-aware template reads it (assistant tool_calls with arguments
  // as objects, tool turns with tool_call_id), and whether it has any tool parts.
  nlohmann::json messages = nlohmann::json::array();
  bool history_has_tools = false;
  bool active() const { return !tools.empty() && choice != "none"; }
  bool forced() const { return !tools.empty() && choice != "none" && choice != "auto"; }
};

// Reads tools / tool_choice / parallel_tool_calls and the messages' tool parts. ApiError
// 400 naming the field: more than kMaxTools tools, a function without a valid name
// ([a-zA-Z0-9_-], 1-64 characters) or whose parameters are not an object, tool_choice naming
// no given tool, arguments that are not JSON text of an object.
ToolRequest parse_tools(const Fields& f, const nlohmann::json& messages);

// A message's plain form for templates that take no tools: an assistant turn's calls written
// after its text, Hermes-style (text::write_tool_call).
text::ChatMessage plain_message(const nlohmann::json& message, const std::string& content);

}  // namespace wick::serve
