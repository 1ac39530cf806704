#include "wick/text/tool_calls.h"

#include <nlohmann/json.hpp>
#include <optional>

#include "text/marker_text.h"
#include "wick/error.h"
#include "wick/text/json_schema.h"

namespace wick::text {

namespace {

using Json = nlohmann::ordered_json;  // arguments keep the order the model wrote them in

constexpr std::string_view kHermesOpen = "<tool_call>", kHermesClose = "</tool_call>";
constexpr std::string_view kMistralMarker = "[TOOL_CALLS]", kPythonTag = "<|python_tag|>";

// {"name": "...", "arguments"|"parameters": {...}} as a call; nullopt for anything else.
std::optional<ToolCall> call_of(const Json& j) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return std::nullopt;
  const Json* args = j.contains("arguments") ? &j["arguments"] : j.contains("parameters") ? &j["parameters"] : nullptr;
  if (args && args->is_string()) {  // some models write the arguments as JSON text
    const Json parsed = Json::parse(args->get<std::string>(), nullptr, false);
    if (!parsed.is_object()) return std::nullopt;
    return ToolCall{j["name"].get<std::string>(), parsed.dump()};
  }
  if (args && !args->is_object()) return std::nullopt;
  return ToolCall{j["name"].get<std::string>(), args ? args->dump() : "{}"};
}

std::optional<Json> parse_json(std::string_view s) {
  Json j = Json::parse(s, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

ToolCallReply parse_hermes(std::string_view reply) {
  ToolCallReply out;
  std::string content;
  size_t at = 0;
  for (;;) {
    const size_t open = reply.find(kHermesOpen, at);
    if (open == std::string_view::npos) break;
    const size_t close = reply.find(kHermesClose, open);
    const size_t body = open + kHermesOpen.size();
    const std::optional<Json> j = parse_json(
        trim_blank(reply.substr(body, close == std::string_view::npos ? std::string_view::npos : close - body)));
    const std::optional<ToolCall> call = j ? call_of(*j) : std::nullopt;
    if (!call) break;  // not a call: the rest is text
    content += reply.substr(at, open - at);
    out.calls.push_back(*call);
    at = close == std::string_view::npos ? reply.size() : close + kHermesClose.size();
  }
  content += reply.substr(at);
  out.content = std::string(trim_blank(content));
  return out;
}

// A JSON array of calls, or one call object; nullopt unless every element is a call.
std::optional<std::vector<ToolCall>> calls_of(const Json& j) {
  std::vector<ToolCall> calls;
  if (j.is_array()) {
    for (const Json& e : j) {
      std::optional<ToolCall> c = call_of(e);
      if (!c) return std::nullopt;
      calls.push_back(std::move(*c));
    }
    return calls.empty() ? std::nullopt : std::optional(calls);
  }
  std::optional<ToolCall> c = call_of(j);
  if (!c) return std::nullopt;
  return std::vector<ToolCall>{std::move(*c)};
}

}  // namespace

ToolCallFormat tool_call_format(std::string_view t) {
  if (t.find(kHermesOpen) != std::string_view::npos) return ToolCallFormat::Hermes;
  if (t.find(kMistralMarker) != std::string_view::npos) return ToolCallFormat::Mistral;
  if (t.find(kPythonTag) != std::string_view::npos || t.find("\"parameters\"") != std::string_view::npos)
    return ToolCallFormat::Llama3;
  return ToolCallFormat::Hermes;
}

bool template_takes_tools(std::string_view t) { return t.find("tools") != std::string_view::npos; }

ToolCallReply parse_tool_calls(std::string_view reply, ToolCallFormat format) {
  if (format == ToolCallFormat::Hermes) return parse_hermes(reply);
  std::string_view body = trim_blank(reply);
  const std::string_view marker = format == ToolCallFormat::Mistral ? kMistralMarker : kPythonTag;
  if (body.starts_with(marker)) body = trim_blank(body.substr(marker.size()));
  if (const std::optional<Json> j = parse_json(body))
    if (std::optional<std::vector<ToolCall>> calls = calls_of(*j)) return {"", std::move(*calls)};
  return {std::string(trim_blank(reply)), {}};
}

std::string ToolCallStream::push(std::string_view piece) {
  reply_ += piece;
  if (holding_) return {};
  while (released_ < reply_.size() && content_.empty() && is_blank(reply_[released_])) ++released_;
  size_t limit = reply_.size();
  if (format_ == ToolCallFormat::Hermes) {
    const size_t open = reply_.find(kHermesOpen, released_);
    if (open != std::string::npos) {
      holding_ = true;
      limit = open;
    } else {
      limit -= partial_marker(reply_, kHermesOpen);
    }
  } else if (content_.empty()) {
    // A call is the whole reply: decided by how the reply opens.
    const std::string_view start = std::string_view(reply_).substr(released_);
    const std::string_view marker = format_ == ToolCallFormat::Mistral ? kMistralMarker : kPythonTag;
    if (start.empty()) return {};
    if (start[0] == '{' || start[0] == '[' || start.starts_with(marker)) {
      holding_ = true;
      return {};
    }
    if (marker.starts_with(start)) return {};  // perhaps the marker, not known yet
  }
  while (limit > released_ && is_blank(reply_[limit - 1])) --limit;
  if (limit <= released_) return {};
  std::string out = reply_.substr(released_, limit - released_);
  released_ = limit;
  content_ += out;
  return out;
}

ToolCallReply ToolCallStream::finish() {
  ToolCallReply r = parse_tool_calls(reply_, format_);
  // What was released opens the content (see the class comment); the rest goes now.
  if (r.content.starts_with(content_)) r.content.erase(0, content_.size());
  return r;
}

std::string write_tool_call(const ToolCall& call, ToolCallFormat format) {
  Json j;
  j["name"] = call.name;
  Json args = Json::parse(call.arguments, nullptr, false);
  j[format == ToolCallFormat::Llama3 ? "parameters" : "arguments"] = args.is_discarded() ? Json(call.arguments) : args;
  switch (format) {
    case ToolCallFormat::Hermes: return std::string(kHermesOpen) + "\n" + j.dump() + "\n" + std::string(kHermesClose);
    case ToolCallFormat::Llama3: return j.dump();
    case ToolCallFormat::Mistral: return std::string(kMistralMarker) + Json::array({j}).dump();
  }
  return j.dump();
}

namespace {
// $refs of a tool's parameters point into the parameters: moved under the union schema.
void rebase_refs(Json& j, const std::string& base) {
  if (j.is_object()) {
    for (auto& [key, value] : j.items()) {
      if (key == "$ref" && value.is_string() && value.get<std::string>().starts_with("#"))
        value = base + value.get<std::string>().substr(1);
      else
        rebase_refs(value, base);
    }
  } else if (j.is_array()) {
    for (Json& e : j) rebase_refs(e, base);
  }
}
}  // namespace

std::string tool_call_gbnf(std::span<const ToolSpec> tools, ToolCallFormat format, int max_calls) {
  WICK_CHECK(!tools.empty(), InvalidArgument, "tool calls: no tools to call");
  WICK_CHECK(max_calls >= 1, InvalidArgument, "tool calls: max_calls must be >= 1, got ", max_calls);
  const char* args_key = format == ToolCallFormat::Llama3 ? "parameters" : "arguments";
  Json any = Json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string_view p = trim_blank(tools[i].parameters);
    Json params = p.empty() ? Json::object() : Json::parse(p, nullptr, false);
    WICK_CHECK(params.is_object(), InvalidArgument, "tool '", tools[i].name,
               "': parameters must be a JSON Schema object");
    if (params.empty()) params = Json{{"type", "object"}};
    rebase_refs(params, "#/anyOf/" + std::to_string(i) + "/properties/" + args_key);
    Json call = {{"type", "object"},
                 {"properties", {{"name", {{"const", tools[i].name}}}, {args_key, params}}},
                 {"required", {"name", args_key}},
                 {"additionalProperties", false}};
    any.push_back(std::move(call));
  }
  std::string gbnf;
  try {
    gbnf = json_schema_to_gbnf(Json{{"anyOf", any}}.dump());
  } catch (const Error& e) {
    fail(e.kind(), "tool calls: ", e.what());
  }
  // The schema's start rule becomes one call; the reply wraps the calls.
  WICK_CHECK(gbnf.starts_with("root ::= "), Internal, "tool calls: the schema grammar does not start with root");
  gbnf = "wick-tool-call ::= " + gbnf.substr(9);
  const std::string more = std::to_string(max_calls - 1);
  switch (format) {
    case ToolCallFormat::Hermes:
      return "root ::= \"<tool_call>\\n\" wick-tool-call \"\\n</tool_call>\" (\"\\n<tool_call>\\n\" wick-tool-call "
             "\"\\n</tool_call>\"){0," +
             more + "}\n" + gbnf;
    case ToolCallFormat::Llama3: return "root ::= wick-tool-call\n" + gbnf;
    case ToolCallFormat::Mistral:
      return "root ::= \"[\" wick-tool-call (\", \" wick-tool-call){0," + more + "} \"]\"\n" + gbnf;
  }
  return gbnf;
}

std::string tools_system_prompt(std::string_view tools_json) {
  // Short: it comes before every turn of a conversation with tools. One function per line,
  // without OpenAI's {"type": "function", "function": ...} wrapper.
  std::string listed;
  const Json tools = Json::parse(tools_json, nullptr, false);
  if (tools.is_array()) {
    for (const Json& t : tools) listed += (t.contains("function") ? t["function"] : t).dump() + "\n";
  } else {
    listed = std::string(tools_json) + "\n";
  }
  return "You may call these functions:\n<tools>\n" + listed +
         "</tools>\nTo call one, reply with <tool_call>\n{\"name\": <name>, \"arguments\": <object>}\n"
         "</tool_call>";
}

}  // namespace wick::text
