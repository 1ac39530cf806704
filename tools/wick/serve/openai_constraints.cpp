#include "openai_constraints.h"

#include <functional>
#include <vector>

#include "api_error.h"
#include "wick/text/json_schema.h"

namespace wick::serve {

namespace {

// A GBNF literal of a choice (guided_choice): the text as written (GBNF literals are UTF-8,
// as request strings are), with '"', '\\' and control characters as \xHH.
std::string gbnf_literal(const std::string& s) {
  static const char* kHex = "0123456789abcdef";
  std::string out = "\"";
  for (const char c : s) {
    const auto b = uint8_t(c);
    if (b < 0x20 || c == '"' || c == '\\') {
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 15];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// where: the message's prefix (the schema's place); the param is the request field.
text::Grammar compile(const std::string& where, const std::function<std::string()>& gbnf) {
  try {
    return text::Grammar::from_gbnf(gbnf());
  } catch (const Error& e) {
    throw ApiError(400, where + ": " + e.what(), where.substr(0, where.find('.')));
  }
}

}  // namespace

std::optional<text::Grammar> parse_output_constraint(const Fields& f, std::string_view raw) {
  // A schema's text with its keys in the order written: the body parsed again, keeping
  // order (only when a schema is there; raw was already checked by parse_request_body).
  std::optional<nlohmann::ordered_json> ordered;
  auto schema_text = [&](const nlohmann::json& sorted, std::initializer_list<const char*> path) {
    if (raw.empty()) return sorted.dump();
    if (!ordered) ordered = nlohmann::ordered_json::parse(raw);
    const nlohmann::ordered_json* at = &*ordered;
    for (const char* key : path) at = &(*at)[key];
    return at->dump();
  };
  std::vector<std::string> given;
  std::optional<text::Grammar> out;
  auto take = [&](const std::string& field, text::Grammar g) {
    given.push_back(field);
    if (given.size() > 1)
      throw ApiError(400, given[0] + " and " + given[1] + ": give one output constraint, not several", field);
    out = std::move(g);
  };
  if (const nlohmann::json* rf = f.get("response_format")) {
    const Fields r(*rf, "response_format");
    const std::optional<std::string> type = r.string("type");
    if (!type) throw ApiError(400, "response_format.type: required", "response_format");
    if (*type == "json_object") {
      take("response_format", compile("response_format", [] { return text::any_json_gbnf(true); }));
    } else if (*type == "json_schema") {
      const nlohmann::json* js = r.get("json_schema");
      if (!js) throw ApiError(400, "response_format.json_schema: required for type json_schema", "response_format");
      const Fields j(*js, "response_format.json_schema");
      const nlohmann::json* schema = j.get("schema");
      text::JsonSchemaOptions o;
      o.strict = j.boolean("strict").value_or(false);
      // No schema: any JSON value.
      const std::string text = schema ? schema_text(*schema, {"response_format", "json_schema", "schema"}) : "{}";
      take("response_format",
           compile("response_format.json_schema.schema", [&] { return text::json_schema_to_gbnf(text, o); }));
    } else if (*type != "text") {
      throw ApiError(400, "response_format.type: expected text, json_object or json_schema, got " + type->substr(0, 40),
                     "response_format");
    }
  }
  for (const char* name : {"json_schema", "guided_json"}) {
    if (const nlohmann::json* s = f.get(name)) {
      if (!s->is_object() && !s->is_boolean() && !s->is_string()) f.wrong_type(name, "a JSON Schema");
      const std::string text = s->is_string() ? s->get<std::string>() : schema_text(*s, {name});
      take(name, compile(name, [&] { return text::json_schema_to_gbnf(text); }));
    }
  }
  for (const char* name : {"grammar", "guided_grammar"})
    if (auto g = f.string(name)) take(name, compile(name, [&] { return *g; }));
  if (auto p = f.string("guided_regex"))
    take("guided_regex", compile("guided_regex", [&] { return text::regex_to_gbnf(*p); }));
  if (const nlohmann::json* c = f.get("guided_choice")) {
    if (!c->is_array() || c->empty()) f.wrong_type("guided_choice", "a non-empty array of strings");
    std::string gbnf = "root ::= ";
    for (size_t i = 0; i < c->size(); ++i) {
      if (!(*c)[i].is_string()) f.wrong_type("guided_choice", "a non-empty array of strings");
      gbnf += (i ? " | " : "") + gbnf_literal((*c)[i].get<std::string>());
    }
    take("guided_choice", compile("guided_choice", [&] { return gbnf; }));
  }
  return out;
}

}  // namespace wick::serve
