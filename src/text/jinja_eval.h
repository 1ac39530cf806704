// The chat-template evaluator: runs a parsed template over a context, with the limits of
// ChatTemplateLimits charged as it goes.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "text/jinja_ast.h"
#include "wick/error.h"
#include "wick/text/chat_template.h"

namespace wick::text::jinja {

// An error that already names its template location (inner nodes locate first).
class TemplateError : public Error {
 public:
  using Error::Error;
};

struct Scope {
  Scope* parent = nullptr;
  NamedValues vars;
  std::shared_ptr<bool> alive;  // made when a macro closes over this scope; false once it is gone

  explicit Scope(Scope* p = nullptr) : parent(p) {}
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  ~Scope() {
    if (alive) *alive = false;
  }
  const Value* find(std::string_view name) const;
  void set(std::string name, Value v);
  // A flag that turns false when this scope ends (for closures that may outlive it).
  std::shared_ptr<bool> alive_flag() {
    if (!alive) alive = std::make_shared<bool>(true);
    return alive;
  }
};

class Renderer {
 public:
  Renderer(std::string_view source, const ChatTemplateLimits& limits) : src_(source), limits_(limits) {}

  // Renders `body` with the context's variables over the globals.
  std::string render(const Body& body, const Dict& context);

  Value eval(const Expr& e);
  Value call(const Value& callee, CallArgs& args);
  // Calls filter `name` (jinja_filters.cpp) / test `name` on v.
  Value filter(const std::string& name, const Value& v, CallArgs& args);
  bool test(const std::string& name, const Value& v, CallArgs& args);

  // Budget checks: a string about to be built, items of a list about to be built, one step.
  void charge_string(size_t bytes);
  void charge_items(size_t items);
  void step() {
    if (++steps_ > limits_.max_steps)
      fail(ErrorKind::InvalidArgument, "the template ran more than ", limits_.max_steps,
           " steps (ChatTemplateLimits::max_steps)");
    if ((steps_ & 1023) == 0) check_time();
  }
  void check_time() const;
  std::string where(size_t pos) const;
  // Fails once the evaluator's recursion has used limits.max_stack_bytes of stack. The
  // budget stands for a depth of recursion that a normal build's frames fit in; under
  // AddressSanitizer every frame is several times larger (redzones), so the same depth is
  // allowed proportionally more bytes rather than failing templates that render elsewhere.
  void check_stack() const {
#if defined(__SANITIZE_ADDRESS__)  // GCC's word for it
    constexpr size_t kFrameGrowth = 4;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)  // clang's
    constexpr size_t kFrameGrowth = 4;
#else
    constexpr size_t kFrameGrowth = 1;
#endif
#else
    constexpr size_t kFrameGrowth = 1;
#endif
    const char* here = static_cast<const char*>(__builtin_frame_address(0));
    if (stack_base_ && size_t(stack_base_ - here) / kFrameGrowth > limits_.max_stack_bytes)
      fail(ErrorKind::InvalidArgument, "the template's recursion used more than ", limits_.max_stack_bytes,
           " bytes of stack (ChatTemplateLimits::max_stack_bytes)");
  }
  const ChatTemplateLimits& limits() const { return limits_; }
  // Namespaces made during a render: emptied at its end, which frees any reference cycle a
  // template made through them (`set ns.self = ns`).
  void own(const DictPtr& ns) { namespaces_.push_back(ns); }
  ~Renderer() {
    for (auto& ns : namespaces_) ns->entries.clear();
  }

 private:
  enum class Flow { Normal, Break, Continue };
  Flow exec(const Body& body, Scope& scope);
  Flow exec_stmt(const Stmt& s, Scope& scope);
  Flow exec_for(const Stmt& s, Scope& scope);
  void exec_set(const Stmt& s, Scope& scope);
  std::string capture(const Body& body, Scope& scope);
  Value eval_node(const Expr& e);
  Value eval_call(const Expr& e);
  Value make_macro(const Stmt& s, Scope& scope);
  void charge_built(size_t bytes);
  void args_of(const Expr& e, size_t first, CallArgs& out);
  void emit(std::string_view text);

  std::string_view src_;
  const ChatTemplateLimits& limits_;
  std::vector<DictPtr> namespaces_;
  std::string out_;
  Scope* scope_ = nullptr;  // innermost scope while evaluating
  Scope* root_ = nullptr;
  const char* stack_base_ = nullptr;  // the stack at render(); stacks grow down on our targets
  const Value* pending_ = nullptr;    // the text a {% filter %} or {% set %} block filters
  size_t steps_ = 0, depth_ = 0, built_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

using FilterFn = Value (*)(const Value&, CallArgs&, Renderer&);
// The sequence filters of jinja_filters_seq.cpp; null for other names.
FilterFn sequence_filter(const std::string& name);
// The `attribute="a.b"` of map/selectattr/sort/join: dotted, integer parts index lists.
Value attr_path(const Value& v, const std::string& path);
// A keyword-or-positional flag argument of a filter (`reverse=true`).
inline bool flag_arg(const CallArgs& a, size_t i, std::string_view name) {
  const Value* v = a.get(i, name);
  return v && truthy(*v);
}

// Operators and lookups with Python's semantics (jinja_ops.cpp).
Value binary_op(const std::string& op, const Value& a, const Value& b, Renderer& r);
bool compare_op(const std::string& op, const Value& a, const Value& b);
// -1/0/1 by Python's < (for sort); fails on unorderable types.
int compare_values(const Value& a, const Value& b);
Value get_attr(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);
Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step, Renderer& r);
// The items a for loop or a filter sees: list items, dict keys, string characters.
// Charged to r as a list of that many items (a string's characters included).
List iterate(const Value& v, Renderer& r);
size_t length_of(const Value& v);
// A callable value named `name` (a bound method, a global function) that runs f.
Value callable(std::string name, std::function<Value(CallArgs&, Renderer&)> f);
// A bound method of a str, dict or list (jinja_methods.cpp); an Undefined without a message
// when there is none (get_attr words the error only when the lookup fails as a whole).
Value method_of(const Value& self, const std::string& name);
// The bound str method `name` of s (jinja_strings.cpp); as method_of when there is none.
Value str_method_of(const std::string& s, const std::string& name);
// The globals: range, namespace, dict, joiner, raise_exception, strftime_now.
void add_globals(Scope& scope);
// Python's json.dumps(v, ensure_ascii, indent, separators, sort_keys) (jinja_json.cpp).
std::string to_json(const Value& v, int indent, bool ensure_ascii, bool sort_keys, std::string_view item_sep,
                    std::string_view key_sep);

// UTF-8 strings as Python sees them: code points (jinja_strings.cpp).
std::u32string to_u32(std::string_view s);
std::string from_u32(std::u32string_view s);
size_t code_points(std::string_view s);
std::string lower_str(std::string_view s);

}  // namespace wick::text::jinja
