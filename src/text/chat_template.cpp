// ChatTemplate: parse once into a syntax tree, render many times (each render has its own
// evaluator state, so rendering is const and thread-safe).
#include "wick/text/chat_template.h"

#include <nlohmann/json.hpp>

#include "text/jinja_eval.h"
#include "text/jinja_lexer.h"

namespace wick::text {

struct ChatTemplate::Impl {
  std::string source;  // normalized: error locations refer to it
  jinja::Body body;
  ChatTemplateLimits limits;

  std::string run(const jinja::Dict& context) const {
    return guarded([&] {
      jinja::Renderer r(source, limits);
      return r.render(body, context);
    });
  }

  // The API promises wick::Error only: anything else the standard library might throw is
  // turned into one.
  template <class F>
  static auto guarded(F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const Error&) {
      throw;
    } catch (const std::bad_alloc&) {
      fail(ErrorKind::OutOfMemory, "chat template: out of memory");
    } catch (const std::exception& e) {
      fail(ErrorKind::Internal, "chat template: ", e.what());
    }
  }
};

namespace {

using Json = nlohmann::ordered_json;

jinja::Value from_json(const Json& j, uint32_t depth) {
  jinja::check_nesting(depth);
  switch (j.type()) {
    case Json::value_t::null: return jinja::Value(jinja::None{});
    case Json::value_t::boolean: return jinja::Value(j.get<bool>());
    case Json::value_t::number_integer: return jinja::Value(j.get<int64_t>());
    case Json::value_t::number_unsigned:
      if (j.get<uint64_t>() > uint64_t(INT64_MAX))
        fail(ErrorKind::Format, "chat template context: integer beyond 64 bits");
      return jinja::Value(int64_t(j.get<uint64_t>()));
    case Json::value_t::number_float: return jinja::Value(j.get<double>());
    case Json::value_t::string: return jinja::Value(j.get<std::string>());
    case Json::value_t::array: {
      jinja::List items;
      items.reserve(j.size());
      for (const Json& x : j) items.push_back(from_json(x, depth + 1));
      return jinja::Value::list(std::move(items));
    }
    case Json::value_t::object: {
      auto d = std::make_shared<jinja::Dict>();
      for (auto it = j.begin(); it != j.end(); ++it) d->set(it.key(), from_json(it.value(), depth + 1));
      return jinja::Value::dict(std::move(d));
    }
    default: fail(ErrorKind::Format, "chat template context: unsupported JSON value");
  }
}

jinja::Dict parse_context(std::string_view json, const char* what) {
  Json j = Json::parse(json.begin(), json.end(), nullptr, false);
  if (j.is_discarded()) fail(ErrorKind::Format, "chat template ", what, ": not valid JSON");
  if (!j.is_object()) fail(ErrorKind::Format, "chat template ", what, ": expected a JSON object");
  jinja::Value v = from_json(j, 0);
  return v.dict();
}

void set_default(jinja::Dict& d, const char* key, jinja::Value v) {
  if (!d.find(key)) d.set(key, std::move(v));
}

}  // namespace

ChatTemplate ChatTemplate::parse(std::string_view source, const ChatTemplateLimits& limits) {
  auto impl = std::make_shared<Impl>();
  impl->source = jinja::normalize_newlines(source);
  impl->limits = limits;
  impl->body = Impl::guarded([&] { return jinja::parse_template(impl->source, limits.max_depth); });
  return ChatTemplate(std::move(impl));
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, const ChatTemplateOptions& options) const {
  jinja::List list;
  for (const ChatMessage& m : messages) {
    auto d = std::make_shared<jinja::Dict>();
    d->set("role", jinja::Value(m.role));
    d->set("content", jinja::Value(m.content));
    list.push_back(jinja::Value::dict(std::move(d)));
  }
  jinja::Dict context;
  context.set("messages", jinja::Value::list(std::move(list)));
  context.set("tools", jinja::Value(jinja::None{}));
  context.set("documents", jinja::Value(jinja::None{}));
  context.set("add_generation_prompt", jinja::Value(options.add_generation_prompt));
  context.set("bos_token", jinja::Value(options.bos_token));
  context.set("eos_token", jinja::Value(options.eos_token));
  if (!options.extra_context_json.empty())
    for (auto& [k, v] : parse_context(options.extra_context_json, "extra_context_json").entries) context.set(k, v);
  return impl_->run(context);
}

std::string ChatTemplate::render_json(std::string_view context_json) const {
  jinja::Dict context = parse_context(context_json, "context");
  set_default(context, "tools", jinja::Value(jinja::None{}));
  set_default(context, "documents", jinja::Value(jinja::None{}));
  set_default(context, "add_generation_prompt", jinja::Value(false));
  return impl_->run(context);
}

}  // namespace wick::text
