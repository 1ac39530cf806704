// Statements of the chat-template parser (the grammar is jinja2's parser.py).
#include "text/jinja_parser.h"

namespace wick::text::jinja {

// --- statements ---
// Statements up to a {% name %} with name in `ends` (left unconsumed) or the end.
Body Parser::parse_body(std::initializer_list<std::string_view> ends) {
  Depth d(*this, cur().pos);
  Body body;
  while (true) {
    const Token& t = cur();
    if (t.kind == Tok::Eof) {
      if (ends.size()) error(t.pos, detail::cat("unexpected end of template, expected '{% ", *ends.begin(), " %}'"));
      return body;
    }
    if (t.kind == Tok::Text) {
      auto s = stmt(Stmt::Kind::Text, t.pos);
      s->text = t.text;
      body.push_back(std::move(s));
      next();
    } else if (t.kind == Tok::VarBegin) {
      next();
      auto s = stmt(Stmt::Kind::Output, t.pos);
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
void Parser::take_tag(std::string_view name) {
  next();
  if (!accept_name(name)) error(cur().pos, detail::cat("expected '", name, "'"));
}

StmtPtr Parser::parse_statement() {
  const Token& t = next();
  const std::string& n = t.text;
  auto s = stmt(Stmt::Kind::Text, t.pos);
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

void Parser::parse_params(Stmt& s) {
  expect_op("(");
  while (!is_op(")")) {
    if (!s.params.empty()) expect_op(",");
    if (is_op(")")) break;
    s.params.push_back(expect_name());
    s.defaults.push_back(accept_op("=") ? parse_expression(true) : nullptr);
  }
  expect_op(")");
}

Body parse_template(std::string_view source, size_t max_depth) {
  return Parser(source, tokenize(source), max_depth).parse();
}

}  // namespace wick::text::jinja
