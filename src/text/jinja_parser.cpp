// The chat-template parser: jinja2's grammar (parser.py) by recursive descent, with the
// nesting depth bounded so that a hostile template fails with one Format error instead of
// exhausting the stack.
#include <string_view>

#include "text/jinja_ast.h"
#include "text/jinja_lexer.h"
#include "wick/error.h"

namespace wick::text::jinja {
namespace {

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
  // Statements up to a {% name %} with name in `ends` (left unconsumed) or the end.
  Body parse_body(std::initializer_list<std::string_view> ends) {
    Depth d(*this, cur().pos);
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.kind == Tok::Eof) {
        if (ends.size()) error(t.pos, detail::cat("unexpected end of template, expected '{% ", *ends.begin(), " %}'"));
        return body;
      }
      if (t.kind == Tok::Text) {
        auto s = std::make_unique<Stmt>(Stmt{Stmt::Kind::Text, t.pos});
        s->text = t.text;
        body.push_back(std::move(s));
        next();
      } else if (t.kind == Tok::VarBegin) {
        next();
        auto s = std::make_unique<Stmt>(Stmt{Stmt::Kind::Output, t.pos});
        s->expr = parse_tuple(true);
        if (cur().kind != Tok::VarEnd) error(cur().pos, "expected '}}', got " + describe(cur()));
        next();
        body.push_back(std::move(s));
      } else if (t.kind == Tok::BlockBegin) {
        const Token& name = peek();
        if (name.kind != Tok::Name) error(name.pos, "expected a statement name after '{%'");
        for (std::string_view e : ends)
          if (name.text == e) return body;
        next();
        body.push_back(parse_statement());
      } else {
        error(t.pos, "unexpected token " + describe(t));
      }
    }
  }
  // Consumes "{% name" (the caller checked it is there).
  void take_tag(std::string_view name) {
    next();
    if (!accept_name(name)) error(cur().pos, detail::cat("expected '", name, "'"));
  }
  StmtPtr parse_statement() {
    const Token& t = next();
    const std::string& n = t.text;
    auto s = std::make_unique<Stmt>(Stmt{Stmt::Kind::Text, t.pos});
    if (n == "if") {
      s->kind = Stmt::Kind::If;
      s->conds.push_back(parse_tuple(true));
      expect_block_end();
      s->bodies.push_back(parse_body({"elif", "else", "endif"}));
      while (true) {
        next();
        std::string which = next().text;
        if (which == "elif") {
          s->conds.push_back(parse_tuple(true));
          expect_block_end();
          s->bodies.push_back(parse_body({"elif", "else", "endif"}));
        } else if (which == "else") {
          expect_block_end();
          s->else_body = parse_body({"endif"});
          take_tag("endif");
          break;
        } else {
          break;
        }
      }
      expect_block_end();
    } else if (n == "for") {
      s->kind = Stmt::Kind::For;
      do s->names.push_back(expect_name());
      while (accept_op(","));
      if (!accept_name("in")) error(cur().pos, "expected 'in' in a for statement");
      s->expr = parse_tuple(false);
      if (accept_name("if")) s->cond = parse_expression(true);
      if (is_name("recursive")) error(cur().pos, "recursive for loops are not supported");
      expect_block_end();
      s->body = parse_body({"endfor", "else"});
      if (peek().text == "else") {
        take_tag("else");
        expect_block_end();
        s->else_body = parse_body({"endfor"});
      }
      take_tag("endfor");
      expect_block_end();
    } else if (n == "set") {
      s->kind = Stmt::Kind::Set;
      s->names.push_back(expect_name());
      if (accept_op(".")) {
        s->attr = expect_name();
      } else {
        while (accept_op(",")) s->names.push_back(expect_name());
      }
      if (accept_op("=")) {
        s->expr = parse_tuple(true);
        expect_block_end();
      } else {
        if (s->names.size() != 1 || !s->attr.empty()) error(cur().pos, "expected '=' in a set statement");
        s->kind = Stmt::Kind::SetBlock;
        if (accept_op("|")) s->filter = parse_filter_chain(nullptr, cur().pos);
        expect_block_end();
        s->body = parse_body({"endset"});
        take_tag("endset");
        expect_block_end();
      }
    } else if (n == "macro" || n == "call") {
      bool macro = n == "macro";
      s->kind = macro ? Stmt::Kind::Macro : Stmt::Kind::CallBlock;
      if (macro) s->names.push_back(expect_name());
      if (macro || is_op("(")) parse_params(*s);
      if (!macro) {
        s->expr = parse_expression(true);
        if (s->expr->kind != Expr::Kind::Call) error(s->expr->pos, "expected a call after 'call'");
      }
      expect_block_end();
      s->body = parse_body({macro ? "endmacro" : "endcall"});
      take_tag(macro ? "endmacro" : "endcall");
      expect_block_end();
    } else if (n == "filter") {
      s->kind = Stmt::Kind::FilterBlock;
      s->filter = parse_filter_chain(nullptr, cur().pos);
      expect_block_end();
      s->body = parse_body({"endfilter"});
      take_tag("endfilter");
      expect_block_end();
    } else if (n == "generation") {
      // transformers' AssistantTracker tag: marks generated text, renders its body as is.
      s->kind = Stmt::Kind::Block;
      expect_block_end();
      s->body = parse_body({"endgeneration"});
      take_tag("endgeneration");
      expect_block_end();
    } else if (n == "break" || n == "continue") {
      s->kind = n == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue;
      expect_block_end();
    } else {
      error(t.pos, detail::cat("unknown or unsupported tag '", n, "'"));
    }
    return s;
  }
  void parse_params(Stmt& s) {
    expect_op("(");
    while (!is_op(")")) {
      if (!s.params.empty()) expect_op(",");
      if (is_op(")")) break;
      s.params.push_back(expect_name());
      s.defaults.push_back(accept_op("=") ? parse_expression(true) : nullptr);
    }
    expect_op(")");
  }

  // --- expressions ---
  ExprPtr make(Expr::Kind k, size_t pos) { return std::make_unique<Expr>(Expr{k, pos}); }
  // An expression, or a tuple of them when commas follow (`{{ a, b }}`, `for x in a, b`).
  ExprPtr parse_tuple(bool condexpr) {
    size_t pos = cur().pos;
    ExprPtr first = parse_expression(condexpr);
    if (!is_op(",")) return first;
    auto tuple = make(Expr::Kind::Tuple, pos);
    tuple->a.push_back(std::move(first));
    while (accept_op(",")) {
      if (cur().kind == Tok::BlockEnd || cur().kind == Tok::VarEnd || is_op(")")) break;
      tuple->a.push_back(parse_expression(condexpr));
    }
    return tuple;
  }
  ExprPtr parse_expression(bool condexpr) {
    Depth d(*this, cur().pos);
    ExprPtr e = parse_or();
    while (condexpr && is_name("if")) {
      size_t pos = cur().pos;
      next();
      auto c = make(Expr::Kind::Cond, pos);
      c->a.push_back(std::move(e));
      c->a.push_back(parse_or());
      c->a.push_back(accept_name("else") ? parse_expression(true) : nullptr);
      e = std::move(c);
    }
    return e;
  }
  ExprPtr binary(std::string op, ExprPtr l, ExprPtr r, size_t pos) {
    auto b = make(Expr::Kind::Binary, pos);
    b->name = std::move(op);
    b->a.push_back(std::move(l));
    b->a.push_back(std::move(r));
    return b;
  }
  ExprPtr parse_or() {
    ExprPtr l = parse_and();
    while (is_name("or")) {
      size_t pos = next().pos;
      l = binary("or", std::move(l), parse_and(), pos);
    }
    return l;
  }
  ExprPtr parse_and() {
    ExprPtr l = parse_not();
    while (is_name("and")) {
      size_t pos = next().pos;
      l = binary("and", std::move(l), parse_not(), pos);
    }
    return l;
  }
  ExprPtr parse_not() {
    if (is_name("not")) {
      Depth d(*this, cur().pos);
      auto u = make(Expr::Kind::Unary, next().pos);
      u->name = "not";
      u->a.push_back(parse_not());
      return u;
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    size_t pos = cur().pos;
    ExprPtr first = parse_math1();
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (cur().kind == Tok::Op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                    cur().text == "<=" || cur().text == ">" || cur().text == ">=")) {
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
    return cmp ? std::move(cmp) : std::move(first);
  }
  ExprPtr parse_math1() {
    ExprPtr l = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& t = next();
      l = binary(t.text, std::move(l), parse_concat(), t.pos);
    }
    return l;
  }
  ExprPtr parse_concat() {
    ExprPtr l = parse_math2();
    while (is_op("~")) {
      size_t pos = next().pos;
      l = binary("~", std::move(l), parse_math2(), pos);
    }
    return l;
  }
  ExprPtr parse_math2() {
    ExprPtr l = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& t = next();
      l = binary(t.text, std::move(l), parse_pow(), t.pos);
    }
    return l;
  }
  ExprPtr parse_pow() {
    ExprPtr l = parse_unary(true);
    while (is_op("**")) {
      size_t pos = next().pos;
      l = binary("**", std::move(l), parse_unary(true), pos);
    }
    return l;
  }
  ExprPtr parse_unary(bool with_filter) {
    Depth d(*this, cur().pos);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      const Token& t = next();
      e = make(Expr::Kind::Unary, t.pos);
      e->name = t.text;
      e->a.push_back(parse_unary(false));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }
  ExprPtr parse_primary() {
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
      return e;
    }
    error(t.pos, "unexpected " + describe(t) + " in an expression");
  }
  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      if (is_op(".")) {
        size_t pos = next().pos;
        if (cur().kind == Tok::Int) {
          auto item = make(Expr::Kind::Item, pos);
          item->a.push_back(std::move(e));
          auto idx = make(Expr::Kind::Literal, cur().pos);
          idx->value = Value(next().i);
          item->a.push_back(std::move(idx));
          e = std::move(item);
        } else {
          auto attr = make(Expr::Kind::Attr, pos);
          attr->name = expect_name();
          attr->a.push_back(std::move(e));
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
  ExprPtr parse_subscript(ExprPtr obj) {
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
    return e;
  }
  void parse_args(Expr& call) {
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
  ExprPtr parse_call(ExprPtr callee) {
    auto e = make(Expr::Kind::Call, callee->pos);
    e->a.push_back(std::move(callee));
    parse_args(*e);
    return e;
  }
  // `| name(args)` filters and `is [not] name args` tests after a unary expression.
  ExprPtr parse_filter_expr(ExprPtr e) {
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
  ExprPtr parse_filter_chain(ExprPtr e, size_t pos) {
    bool first = e == nullptr;  // {% filter name %} starts without a '|'
    while (first || is_op("|")) {
      if (!first) next();
      first = false;
      auto f = make(Expr::Kind::Filter, pos);
      f->name = expect_name();
      f->a.push_back(std::move(e));
      if (is_op("(")) parse_args(*f);
      e = std::move(f);
      pos = cur().pos;
    }
    return e;
  }
  ExprPtr parse_test(ExprPtr e) {
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
    return t;
  }

  std::string_view src_;
  std::vector<Token> t_;
  size_t i_ = 0;
  size_t depth_ = 0;
  size_t max_depth_;
};

}  // namespace

Body parse_template(std::string_view source, size_t max_depth) {
  return Parser(source, tokenize(source), max_depth).parse();
}

}  // namespace wick::text::jinja
