// The chat-template parser: jinja2's grammar (parser.py) by recursive descent, with the
// nesting depth bounded so that a hostile template fails with one Format error instead of
// exhausting the stack. Statements are parsed in jinja_parser.cpp, expressions in
// jinja_parser_expr.cpp.
#pragma once

#include <initializer_list>
#include <string_view>

#include "text/jinja_ast.h"
#include "text/jinja_lexer.h"
#include "wick/error.h"

namespace wick::text::jinja {

class Parser {
 public:
  Parser(std::string_view src, std::vector<Token> toks, size_t max_depth)
      : src_(src), t_(std::move(toks)), max_depth_(max_depth) {}

  Body parse() {
    Body body = parse_body({});
    if (cur().kind != Tok::Eof) error(cur().pos, "unexpected tag");
    return body;
  }

 private:
  // --- tokens ---
  const Token& cur() const { return t_[i_]; }
  const Token& peek(size_t k = 1) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  const Token& next() { return t_[i_ < t_.size() - 1 ? i_++ : i_]; }
  bool is_op(std::string_view op) const { return cur().kind == Tok::Op && cur().text == op; }
  bool is_name(std::string_view n) const { return cur().kind == Tok::Name && cur().text == n; }
  bool accept_op(std::string_view op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool accept_name(std::string_view n) {
    if (!is_name(n)) return false;
    next();
    return true;
  }
  [[noreturn]] void error(size_t pos, std::string_view what) const {
    fail(ErrorKind::Format, "chat template ", location(src_, pos), ": ", what);
  }
  std::string describe(const Token& t) const {
    switch (t.kind) {
      case Tok::Eof: return "end of template";
      case Tok::BlockEnd: return "'%}'";
      case Tok::VarEnd: return "'}}'";
      case Tok::Name:
      case Tok::Op: return "'" + t.text + "'";
      default: return "a literal";
    }
  }
  void expect_op(std::string_view op) {
    if (!accept_op(op)) error(cur().pos, detail::cat("expected '", op, "', got ", describe(cur())));
  }
  std::string expect_name() {
    if (cur().kind != Tok::Name) error(cur().pos, "expected a name, got " + describe(cur()));
    return next().text;
  }
  void expect_block_end() {
    if (cur().kind != Tok::BlockEnd) error(cur().pos, "expected '%}', got " + describe(cur()));
    next();
  }
  struct Depth {
    Parser& p;
    Depth(Parser& parser, size_t pos) : p(parser) {
      if (++p.depth_ > p.max_depth_) p.error(pos, detail::cat("nesting deeper than ", p.max_depth_, " levels"));
    }
    ~Depth() { --p.depth_; }
  };

  // --- statements ---
  static StmtPtr stmt(Stmt::Kind k, size_t pos) {
    auto s = std::make_unique<Stmt>();
    s->kind = k;
    s->pos = pos;
    return s;
  }
  // --- statements ---
  // Statements up to a {% name %} with name in `ends` (left unconsumed) or the end.
  Body parse_body(std::initializer_list<std::string_view> ends);
  // Consumes "{% name" (the caller checked it is there).
  void take_tag(std::string_view name);
  StmtPtr parse_statement();
  void parse_params(Stmt& s);

  // --- expressions ---
  static ExprPtr make(Expr::Kind k, size_t pos) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->pos = pos;
    return e;
  }
  // Sets a finished node's height and refuses trees taller than max_depth: the loops that
  // build `a + b + c ...`, `x.a.b...` and `x|f|g...` nest without recursing in the parser.
  void seal(Expr& e) const {
    uint32_t h = 0;
    for (const auto& c : e.a)
      if (c) h = std::max(h, c->height);
    for (const auto& kv : e.kwargs) h = std::max(h, kv.second->height);
    e.height = h + 1;
    if (e.height > max_depth_) error(e.pos, detail::cat("expression nesting deeper than ", max_depth_, " levels"));
  }
  // An expression, or a tuple of them when commas follow (`{{ a, b }}`, `for x in a, b`).
  ExprPtr parse_tuple(bool condexpr);
  ExprPtr parse_expression(bool condexpr);
  ExprPtr binary(std::string op, ExprPtr l, ExprPtr r, size_t pos);
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_postfix(ExprPtr e);
  ExprPtr parse_subscript(ExprPtr obj);
  void parse_args(Expr& call);
  ExprPtr parse_call(ExprPtr callee);
  // `| name(args)` filters and `is [not] name args` tests after a unary expression.
  ExprPtr parse_filter_expr(ExprPtr e);
  ExprPtr parse_filter_chain(ExprPtr e, size_t pos);
  ExprPtr parse_test(ExprPtr e);

  std::string_view src_;
  std::vector<Token> t_;
  size_t i_ = 0;
  size_t depth_ = 0;
  size_t max_depth_;
};

}  // namespace wick::text::jinja
