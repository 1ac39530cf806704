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

// Builds values straight from the JSON text. (nlohmann's ordered_json finds each new key by a
// linear search, quadratic for a wide object.) A repeated key keeps its first position and
// takes the last value, as Python's json.loads gives it; nesting is bounded like the
// template's values.
class ValueBuilder : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool null() override { return add(jinja::Value(jinja::None{})); }
  bool boolean(bool b) override { return add(jinja::Value(b)); }
  bool number_integer(number_integer_t i) override { return add(jinja::Value(int64_t(i))); }
  bool number_unsigned(number_unsigned_t u) override {
    if (u > uint64_t(INT64_MAX)) fail(ErrorKind::Format, what_, ": integer beyond 64 bits");
    return add(jinja::Value(int64_t(u)));
  }
  bool number_float(number_float_t f, const string_t&) override { return add(jinja::Value(double(f))); }
  bool string(string_t& s) override { return add(jinja::Value(std::move(s))); }
  bool binary(binary_t&) override { fail(ErrorKind::Format, what_, ": binary values are not JSON"); }
  bool start_object(std::size_t) override { return open(true); }
  bool key(string_t& k) override {
    stack_.back().key = std::move(k);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(false); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    fail(ErrorKind::Format, what_, ": not valid JSON (", e.what(), ")");
  }

  explicit ValueBuilder(const char* what) : what_(what) {}
  jinja::Value result;

 private:
  struct Open {
    bool object;
    jinja::List items;
    jinja::DictPtr dict;
    std::string key;
  };
  bool open(bool object) {
    if (stack_.size() >= jinja::kMaxNesting)
      fail(ErrorKind::Format, what_, ": JSON nested deeper than ", jinja::kMaxNesting, " levels");
    stack_.push_back(Open{object, {}, object ? std::make_shared<jinja::Dict>() : nullptr, {}});
    return true;
  }
  bool add(jinja::Value v) {
    if (stack_.empty()) {
      result = std::move(v);
    } else if (stack_.back().object) {
      stack_.back().dict->set(std::move(stack_.back().key), std::move(v));
    } else {
      stack_.back().items.push_back(std::move(v));
    }
    return true;
  }
  bool close() {
    Open top = std::move(stack_.back());
    stack_.pop_back();
    return add(top.object ? jinja::Value::dict(std::move(top.dict)) : jinja::Value::list(std::move(top.items)));
  }

  const char* what_;
  std::vector<Open> stack_;
};

jinja::Dict parse_context(std::string_view json, const char* what) {
  std::string label = std::string("chat template ") + what;
  ValueBuilder builder(label.c_str());
  nlohmann::json::sax_parse(json.begin(), json.end(), &builder);
  if (!builder.result.is_dict()) fail(ErrorKind::Format, label, ": expected a JSON object");
  return builder.result.dict();
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

const std::string& ChatTemplate::source() const { return impl_->source; }

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
