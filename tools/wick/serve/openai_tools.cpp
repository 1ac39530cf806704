#include "openai_tools.h"

#include "api_error.h"

namespace wick::serve {

namespace {

bool valid_name(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (const char c : n)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

// The arguments of a call in a request: JSON text of an object (OpenAI's form), or an object.
nlohmann::json arguments_of(const nlohmann::json* a, const std::string& where) {
  if (!a) return nlohmann::json::object();
  nlohmann::json j = a->is_string() ? nlohmann::json::parse(a->get<std::string>(), nullptr, false) : *a;
  if (!j.is_object()) throw ApiError(400, where + ": expected JSON text of an object", where);
  return j;
}

}  // namespace

ToolRequest parse_tools(const Fields& f, const nlohmann::json& messages) {
  ToolRequest t;
  if (const nlohmann::json* tools = f.get("tools")) {
    if (!tools->is_array()) f.wrong_type("tools", "an array");
    if (tools->size() > kMaxTools)
      throw ApiError(
          400, "tools: at most " + std::to_string(kMaxTools) + " tools, got " + std::to_string(tools->size()), "tools");
    for (size_t i = 0; i < tools->size(); ++i) {
      const std::string where = "tools[" + std::to_string(i) + "]";
      const Fields tool((*tools)[i], where);
      if (tool.string("type").value_or("function") != "function")
        throw ApiError(400, where + ".type: only \"function\" tools are supported", "tools");
      const nlohmann::json* fn = tool.get("function");
      if (!fn) throw ApiError(400, where + ".function: required", "tools");
      const Fields func(*fn, where + ".function");
      const std::string name = func.string("name").value_or("");
      if (!valid_name(name))
        throw ApiError(400,
                       where + ".function.name: 1 to 64 of a-z, A-Z, 0-9, _ and -, got '" + name.substr(0, 80) + "'",
                       "tools");
      const nlohmann::json* params = func.get("parameters");
      if (params && !params->is_object())
        throw ApiError(400, where + ".function.parameters: expected a JSON Schema object", "tools");
      t.tools.push_back({name, params ? params->dump() : ""});
      t.tools_json.push_back({{"type", "function"}, {"function", *fn}});
    }
  }
  if (const nlohmann::json* c = f.get("tool_choice")) {
    if (c->is_string()) {
      t.choice = c->get<std::string>();
      if (t.choice != "auto" && t.choice != "none" && t.choice != "required")
        throw ApiError(400,
                       "tool_choice: expected auto, none, required or a function, got '" + t.choice.substr(0, 40) + "'",
                       "tool_choice");
    } else {
      const Fields choice(*c, "tool_choice");
      const nlohmann::json* fn = choice.get("function");
      const std::string name = fn ? Fields(*fn, "tool_choice.function").string("name").value_or("") : "";
      bool known = false;
      for (const auto& tool : t.tools) known = known || tool.name == name;
      if (!known)
        throw ApiError(400, "tool_choice: names no tool of the request: '" + name.substr(0, 80) + "'", "tool_choice");
      t.choice = name;
    }
    if (t.choice == "required" && t.tools.empty())
      throw ApiError(400, "tool_choice: required, but the request has no tools", "tool_choice");
  }
  t.parallel = f.boolean("parallel_tool_calls").value_or(true);
  // The conversation for a tool-aware template: arguments as objects (as transformers and
  // vLLM give them to templates), tool turns as they came.
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    const nlohmann::json& m = messages[i];
    nlohmann::json out = m;
    if (const auto it = m.find("tool_calls"); it != m.end() && !it->is_null()) {
      if (!it->is_array()) throw ApiError(400, where + ".tool_calls: expected an array", where + ".tool_calls");
      out["tool_calls"] = nlohmann::json::array();
      for (size_t k = 0; k < it->size(); ++k) {
        const std::string cw = where + ".tool_calls[" + std::to_string(k) + "]";
        const Fields call((*it)[k], cw);
        const nlohmann::json* fn = call.get("function");
        if (!fn) throw ApiError(400, cw + ".function: required", cw);
        const Fields func(*fn, cw + ".function");
        nlohmann::json c = {{"type", "function"},
                            {"function",
                             {{"name", func.string("name").value_or("")},
                              {"arguments", arguments_of(func.get("arguments"), cw + ".function.arguments")}}}};
        if (auto id = call.string("id")) c["id"] = *id;
        out["tool_calls"].push_back(std::move(c));
      }
      t.history_has_tools = true;
    }
    if (m.value("role", "") == "tool") t.history_has_tools = true;
    t.messages.push_back(std::move(out));
  }
  return t;
}

text::ChatMessage plain_message(const nlohmann::json& m, const std::string& content) {
  text::ChatMessage out{m.value("role", ""), content};
  if (const auto it = m.find("tool_calls"); it != m.end() && it->is_array())
    for (const auto& c : *it) {
      const auto& fn = c.at("function");
      out.content +=
          (out.content.empty() ? "" : "\n") +
          text::write_tool_call({fn.value("name", ""), fn.at("arguments").dump()}, text::ToolCallFormat::Hermes);
    }
  return out;
}

}  // namespace wick::serve
