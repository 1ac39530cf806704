// Expressions of the chat-template parser, with jinja2's precedence: conditional, or, and,
// not, comparisons (chained), + -, ~, * / // %, **, unary - +, then postfix (. [] ()),
// filters and tests.
#include "text/jinja_parser.h"

namespace wick::text::jinja {

// An expression, or a tuple of them when commas follow (`{{ a, b }}`, `for x in a, b`).
ExprPtr Parser::parse_tuple(bool condexpr) {
  size_t pos = cur().pos;
  ExprPtr first = parse_expression(condexpr);
  if (!is_op(",")) return first;
  auto tuple = make(Expr::Kind::Tuple, pos);
  tuple->a.push_back(std::move(first));
  while (accept_op(",")) {
    if (cur().kind == Tok::BlockEnd || cur().kind == Tok::VarEnd || is_op(")")) break;
    tuple->a.push_back(parse_expression(condexpr));
  }
  seal(*tuple);
  return tuple;
}

ExprPtr Parser::parse_expression(bool condexpr) {
  Depth d(*this, cur().pos);
  ExprPtr e = parse_or();
  while (condexpr && is_name("if")) {
    size_t pos = cur().pos;
    next();
    auto c = make(Expr::Kind::Cond, pos);
    c->a.push_back(std::move(e));
    c->a.push_back(parse_or());
    c->a.push_back(accept_name("else") ? parse_expression(true) : nullptr);
    seal(*c);
    e = std::move(c);
  }
  return e;
}

ExprPtr Parser::binary(std::string op, ExprPtr l, ExprPtr r, size_t pos) {
  auto b = make(Expr::Kind::Binary, pos);
  b->name = std::move(op);
  b->a.push_back(std::move(l));
  b->a.push_back(std::move(r));
  seal(*b);
  return b;
}

ExprPtr Parser::parse_or() {
  ExprPtr l = parse_and();
  while (is_name("or")) {
    size_t pos = next().pos;
    l = binary("or", std::move(l), parse_and(), pos);
  }
  return l;
}

ExprPtr Parser::parse_and() {
  ExprPtr l = parse_not();
  while (is_name("and")) {
    size_t pos = next().pos;
    l = binary("and", std::move(l), parse_not(), pos);
  }
  return l;
}

ExprPtr Parser::parse_not() {
  if (is_name("not")) {
    Depth d(*this, cur().pos);
    auto u = make(Expr::Kind::Unary, next().pos);
    u->name = "not";
    u->a.push_back(parse_not());
    seal(*u);
    return u;
  }
  return parse_compare();
}

ExprPtr Parser::parse_compare() {
  size_t pos = cur().pos;
  ExprPtr first = parse_math1();
  ExprPtr cmp;
  while (true) {
    std::string op;
    if (cur().kind == Tok::Op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == "<=" ||
                                  cur().text == ">" || cur().text == ">=")) {
      op = next().text;
    } else if (accept_name("in")) {
      op = "in";
    } else if (is_name("not") && peek().kind == Tok::Name && peek().text == "in") {
      next();
      next();
      op = "not in";
    } else {
      break;
    }
    if (!cmp) {
      cmp = make(Expr::Kind::Compare, pos);
      cmp->a.push_back(std::move(first));
    }
    cmp->ops.push_back(op);
    cmp->a.push_back(parse_math1());
  }
  if (!cmp) return first;
  seal(*cmp);
  return cmp;
}

ExprPtr Parser::parse_math1() {
  ExprPtr l = parse_concat();
  while (is_op("+") || is_op("-")) {
    const Token& t = next();
    l = binary(t.text, std::move(l), parse_concat(), t.pos);
  }
  return l;
}

ExprPtr Parser::parse_concat() {
  ExprPtr l = parse_math2();
  while (is_op("~")) {
    size_t pos = next().pos;
    l = binary("~", std::move(l), parse_math2(), pos);
  }
  return l;
}

ExprPtr Parser::parse_math2() {
  ExprPtr l = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const Token& t = next();
    l = binary(t.text, std::move(l), parse_pow(), t.pos);
  }
  return l;
}

ExprPtr Parser::parse_pow() {
  ExprPtr l = parse_unary(true);
  while (is_op("**")) {
    size_t pos = next().pos;
    l = binary("**", std::move(l), parse_unary(true), pos);
  }
  return l;
}

ExprPtr Parser::parse_unary(bool with_filter) {
  Depth d(*this, cur().pos);
  ExprPtr e;
  if (is_op("-") || is_op("+")) {
    const Token& t = next();
    e = make(Expr::Kind::Unary, t.pos);
    e->name = t.text;
    e->a.push_back(parse_unary(false));
    seal(*e);
  } else {
    e = parse_primary();
  }
  e = parse_postfix(std::move(e));
  if (with_filter) e = parse_filter_expr(std::move(e));
  return e;
}

ExprPtr Parser::parse_primary() {
  const Token& t = cur();
  if (t.kind == Tok::Name) {
    next();
    auto e = make(Expr::Kind::Literal, t.pos);
    if (t.text == "true" || t.text == "True") {
      e->value = Value(true);
    } else if (t.text == "false" || t.text == "False") {
      e->value = Value(false);
    } else if (t.text == "none" || t.text == "None") {
      e->value = Value(None{});
    } else {
      e->kind = Expr::Kind::Name;
      e->name = t.text;
    }
    return e;
  }
  if (t.kind == Tok::String) {
    std::string s;
    while (cur().kind == Tok::String) s += next().text;  // adjacent literals concatenate
    auto e = make(Expr::Kind::Literal, t.pos);
    e->value = Value(std::move(s));
    return e;
  }
  if (t.kind == Tok::Int || t.kind == Tok::Float) {
    next();
    auto e = make(Expr::Kind::Literal, t.pos);
    e->value = t.kind == Tok::Int ? Value(t.i) : Value(t.f);
    return e;
  }
  if (accept_op("(")) {
    if (accept_op(")")) return make(Expr::Kind::Tuple, t.pos);
    ExprPtr e = parse_tuple(true);
    if (e->kind == Expr::Kind::Tuple) e->pos = t.pos;
    expect_op(")");
    return e;
  }
  if (accept_op("[")) {
    auto e = make(Expr::Kind::List, t.pos);
    while (!is_op("]")) {
      if (!e->a.empty()) expect_op(",");
      if (is_op("]")) break;
      e->a.push_back(parse_expression(true));
    }
    expect_op("]");
    seal(*e);
    return e;
  }
  if (accept_op("{")) {
    auto e = make(Expr::Kind::Dict, t.pos);
    while (!is_op("}")) {
      if (!e->a.empty()) expect_op(",");
      if (is_op("}")) break;
      e->a.push_back(parse_expression(true));
      expect_op(":");
      e->a.push_back(parse_expression(true));
    }
    expect_op("}");
    seal(*e);
    return e;
  }
  error(t.pos, "unexpected " + describe(t) + " in an expression");
}

ExprPtr Parser::parse_postfix(ExprPtr e) {
  while (true) {
    if (is_op(".")) {
      size_t pos = next().pos;
      if (cur().kind == Tok::Int) {
        auto item = make(Expr::Kind::Item, pos);
        item->a.push_back(std::move(e));
        auto idx = make(Expr::Kind::Literal, cur().pos);
        idx->value = Value(next().i);
        item->a.push_back(std::move(idx));
        seal(*item);
        e = std::move(item);
      } else {
        auto attr = make(Expr::Kind::Attr, pos);
        attr->name = expect_name();
        attr->a.push_back(std::move(e));
        seal(*attr);
        e = std::move(attr);
      }
    } else if (is_op("[")) {
      e = parse_subscript(std::move(e));
    } else if (is_op("(")) {
      e = parse_call(std::move(e));
    } else {
      return e;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr obj) {
  size_t pos = next().pos;
  ExprPtr bounds[3];
  int part = 0;
  bool slice = false;
  while (!is_op("]")) {
    if (accept_op(":")) {
      slice = true;
      if (++part > 2) error(cur().pos, "too many ':' in a slice");
      continue;
    }
    if (bounds[part]) error(cur().pos, "expected ':' or ']' in a subscript");
    bounds[part] = parse_expression(true);
  }
  next();
  if (!slice && !bounds[0]) error(pos, "empty subscript");
  auto e = make(slice ? Expr::Kind::Slice : Expr::Kind::Item, pos);
  e->a.push_back(std::move(obj));
  if (slice) {
    for (auto& b : bounds) e->a.push_back(std::move(b));
  } else {
    e->a.push_back(std::move(bounds[0]));
  }
  seal(*e);
  return e;
}

void Parser::parse_args(Expr& call) {
  expect_op("(");
  while (!is_op(")")) {
    if (call.a.size() > 1 || !call.kwargs.empty()) expect_op(",");
    if (is_op(")")) break;
    if (is_op("*") || is_op("**")) error(cur().pos, "*args and **kwargs in calls are not supported");
    if (cur().kind == Tok::Name && peek().kind == Tok::Op && peek().text == "=") {
      std::string k = next().text;
      next();
      call.kwargs.emplace_back(std::move(k), parse_expression(true));
    } else {
      if (!call.kwargs.empty()) error(cur().pos, "positional argument after a keyword argument");
      call.a.push_back(parse_expression(true));
    }
  }
  expect_op(")");
}

ExprPtr Parser::parse_call(ExprPtr callee) {
  auto e = make(Expr::Kind::Call, callee->pos);
  e->a.push_back(std::move(callee));
  parse_args(*e);
  seal(*e);
  return e;
}

// `| name(args)` filters and `is [not] name args` tests after a unary expression.
ExprPtr Parser::parse_filter_expr(ExprPtr e) {
  while (true) {
    if (is_op("|")) {
      e = parse_filter_chain(std::move(e), cur().pos);
    } else if (is_name("is")) {
      e = parse_test(std::move(e));
    } else if (is_op("(")) {
      e = parse_call(std::move(e));
    } else {
      return e;
    }
  }
}

ExprPtr Parser::parse_filter_chain(ExprPtr e, size_t pos) {
  bool first = e == nullptr;  // {% filter name %} starts without a '|'
  while (first || is_op("|")) {
    if (!first) next();
    first = false;
    auto f = make(Expr::Kind::Filter, pos);
    f->name = expect_name();
    f->a.push_back(std::move(e));
    if (is_op("(")) parse_args(*f);
    seal(*f);
    e = std::move(f);
    pos = cur().pos;
  }
  return e;
}

ExprPtr Parser::parse_test(ExprPtr e) {
  auto t = make(Expr::Kind::Test, next().pos);
  t->negated = accept_name("not");
  t->name = expect_name();
  t->a.push_back(std::move(e));
  const Token& c = cur();
  if (is_op("(")) {
    parse_args(*t);
  } else if ((c.kind == Tok::Name || c.kind == Tok::String || c.kind == Tok::Int || c.kind == Tok::Float ||
              is_op("[") || is_op("{")) &&
             !is_name("else") && !is_name("or") && !is_name("and")) {
    if (is_name("is")) error(c.pos, "tests cannot be chained with 'is'");
    t->a.push_back(parse_postfix(parse_primary()));  // `is divisibleby 3`, `is sameas none`
  }
  seal(*t);
  return t;
}

}  // namespace wick::text::jinja
