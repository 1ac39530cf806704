// The value type of the chat-template interpreter: Python's data model as far as jinja2
// templates observe it (truthiness, str() and repr() printing, ==, ordering), with lists and
// dicts shared by reference as in Python (namespace attributes and loop objects mutate them).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace wick::text::jinja {

struct Value;
struct Dict;
struct CallArgs;
class Renderer;

using List = std::vector<Value>;
using ListPtr = std::shared_ptr<List>;
using DictPtr = std::shared_ptr<Dict>;

// jinja2's default Undefined: prints empty, is falsy, iterates as empty; any attribute, item,
// arithmetic or call on it is an error naming `name`.
struct Undefined {
  std::string name;
};
struct None {};

struct Callable {
  std::string name;
  std::function<Value(CallArgs&, Renderer&)> fn;
};
using CallablePtr = std::shared_ptr<const Callable>;

struct Value {
  std::variant<Undefined, None, bool, int64_t, double, std::string, ListPtr, DictPtr, CallablePtr> v;
  bool tuple = false;  // a List printed as a tuple ("(1, 2)"), as dictsort/items pairs are
  uint32_t depth = 0;  // container nesting, bounded so that printing/comparing/freeing never overflows the stack

  Value() : v(Undefined{}) {}
  Value(Undefined u) : v(std::move(u)) {}
  Value(None n) : v(n) {}
  Value(bool b) : v(b) {}
  Value(int64_t i) : v(i) {}
  Value(int i) : v(int64_t{i}) {}
  Value(double d) : v(d) {}
  Value(std::string s) : v(std::move(s)) {}
  Value(const char* s) : v(std::string(s)) {}
  Value(ListPtr l, bool is_tuple = false) : v(std::move(l)), tuple(is_tuple) {}
  Value(DictPtr d) : v(std::move(d)) {}
  Value(CallablePtr c) : v(std::move(c)) {}
  // An Undefined whose use fails with `message` ("'x' is undefined").
  static Value undefined(std::string message) { return Value(Undefined{std::move(message)}); }
  // New containers: their depth is one more than their deepest item's (at most kMaxNesting).
  static Value list(List items = {}, bool is_tuple = false);
  static Value dict(DictPtr d);

  bool is_undefined() const { return std::holds_alternative<Undefined>(v); }
  bool is_none() const { return std::holds_alternative<None>(v); }
  bool is_bool() const { return std::holds_alternative<bool>(v); }
  bool is_int() const { return std::holds_alternative<int64_t>(v); }
  bool is_float() const { return std::holds_alternative<double>(v); }
  bool is_number() const { return is_int() || is_float() || is_bool(); }  // Python: bool is an int
  bool is_string() const { return std::holds_alternative<std::string>(v); }
  bool is_list() const { return std::holds_alternative<ListPtr>(v); }
  bool is_dict() const { return std::holds_alternative<DictPtr>(v); }
  bool is_callable() const { return std::holds_alternative<CallablePtr>(v); }

  const std::string& str() const { return std::get<std::string>(v); }
  const List& items() const { return *std::get<ListPtr>(v); }
  List& items_mut() const { return *std::get<ListPtr>(v); }
  Dict& dict() const { return *std::get<DictPtr>(v); }
  const Callable& callable() const { return *std::get<CallablePtr>(v); }
  const std::string& undefined_name() const { return std::get<Undefined>(v).name; }
  // int64 of an int or bool (Python's int(True) == 1).
  int64_t as_int() const { return is_bool() ? int64_t{std::get<bool>(v)} : std::get<int64_t>(v); }
  double as_double() const { return is_float() ? std::get<double>(v) : double(as_int()); }
};

// An insertion-ordered dict with string keys (JSON objects, dict literals, namespaces).
inline constexpr uint32_t kMaxNesting = 512;

// Names -> values in insertion order (dicts, scopes). Small tables are searched linearly;
// past 16 entries a hash index is built on demand, so a context or template with many keys
// costs time proportional to its size, not its square.
struct NamedValues {
  std::vector<std::pair<std::string, Value>> entries;

  const Value* find(std::string_view key) const;
  void set(std::string key, Value value);

 private:
  mutable std::unordered_map<std::string_view, size_t> index_;  // keys point into entries' heap strings
  mutable size_t indexed_ = 0;                                  // entries covered by index_
  mutable const void* indexed_data_ = nullptr;                  // entries.data() when indexed
};

struct Dict : NamedValues {
  bool is_namespace = false;  // namespace(): attributes may be assigned with `set ns.x = ...`
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // Argument `index` by position, else by keyword `name`, else nullptr.
  const Value* get(size_t index, std::string_view name) const;
  // Fails naming `fn` when there are more than `max_positional` positional arguments or a
  // keyword outside `allowed` (a comma-separated list).
  void check(std::string_view fn, size_t max_positional, std::string_view allowed) const;
};

bool truthy(const Value& v);
// Python's str(v): what {{ v }} prints ("True", "None", "[1, 'a']", "1.0"); Undefined is "".
std::string to_str(const Value& v);
// Python's repr(v): strings quoted as Python quotes them.
std::string to_repr(const Value& v, uint32_t depth = 0);
// Python's repr of a float: the shortest digits that round-trip, "1.0", "1e+16", "inf".
std::string float_repr(double d);
// Python's ==: 1 == 1.0 == True, lists and dicts element-wise, Undefined only equals Undefined.
bool equals(const Value& a, const Value& b, uint32_t depth = 0);
// Fails when a recursive walk (repr, ==, tojson) goes deeper than kMaxNesting: a container
// that contains itself through a namespace.
void check_nesting(uint32_t depth);

// The recursive walks over values (repr, ==, ordering, tojson) visit every node, and a value
// can share its sub-lists ([a, a] nested 30 times is small to build, 2^30 nodes to print), so
// while a WalkBudget is alive (a render) each walk charges it: walk() per node visited (with
// check_nesting), walk_bytes() for the text a walk has printed so far.
class WalkBudget {
 public:
  WalkBudget(size_t nodes, size_t max_bytes);
  ~WalkBudget();
  WalkBudget(const WalkBudget&) = delete;
  WalkBudget& operator=(const WalkBudget&) = delete;

  size_t nodes_left, max_bytes;

 private:
  WalkBudget* saved_;
};
void walk(uint32_t depth);
void walk_bytes(size_t printed);
// The Python type name used in error messages ("str", "int", "list", "dict", "NoneType").
std::string_view type_name(const Value& v);

}  // namespace wick::text::jinja
