// The chat-template syntax tree: expressions and statements as jinja2's parser builds them.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja_value.h"

namespace wick::text::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    Literal,  // value
    Name,     // name
    List,     // a = items
    Tuple,    // a = items
    Dict,     // a = key0, value0, key1, value1, ...
    Attr,     // a[0].name
    Item,     // a[0][a[1]]
    Slice,    // a[0][a[1]:a[2]:a[3]], absent bounds null
    Call,     // a[0](a[1..], kwargs)
    Filter,   // a[0] | name(a[1..], kwargs); a[0] null inside {% filter %}
    Test,     // a[0] is [not] name(a[1..], kwargs)
    Unary,    // name ("-", "+", "not") a[0]
    Binary,   // a[0] name a[1]: + - * / // % ** ~ and or
    Compare,  // a[0] ops[0] a[1] ops[1] a[2] ... (chained as in Python)
    Cond,     // a[0] if a[1] else a[2] (a[2] null: undefined)
  };
  Kind kind = Kind::Literal;
  size_t pos = 0;
  Value value;
  std::string name;
  bool negated = false;
  uint32_t height = 1;  // of this subtree, bounded by the parser (evaluating and freeing recurse)
  std::vector<ExprPtr> a;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind {
    Text,         // text
    Output,       // {{ expr }}
    If,           // conds[i] -> bodies[i]; else_body
    For,          // for names in expr [if cond]: body, else_body
    Set,          // set names (or names[0].attr) = expr
    SetBlock,     // set names[0] %} body {% endset (filter: optional Filter chain)
    Macro,        // macro names[0](params = defaults) body
    CallBlock,    // call(params) expr %} body (the caller)
    FilterBlock,  // filter filter %} body
    Block,        // a transparent body ({% generation %})
    Break,
    Continue,
  };
  Kind kind = Kind::Text;
  size_t pos = 0;
  std::string text;
  std::string attr;  // Set: the namespace attribute of `set ns.attr = ...`
  std::vector<std::string> names;
  ExprPtr expr, cond, filter;
  std::vector<ExprPtr> conds;
  std::vector<Body> bodies;
  Body body, else_body;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // one per param, null when required
};

// Parses tokens of `source` (for error locations). Throws wick::Error Format.
Body parse_template(std::string_view source, size_t max_depth);

}  // namespace wick::text::jinja
