// The chat-template evaluator: statements, scopes, calls and macros. Scoping follows jinja2:
// a for loop's body is its own scope (a `set` inside does not leak out, hence namespace()),
// if blocks share their parent's, and macros see their arguments over the template's top level.
#include "text/jinja_eval.h"

#include "text/jinja_lexer.h"

namespace wick::text::jinja {

const Value* Scope::find(std::string_view name) const {
  for (const Scope* s = this; s; s = s->parent)
    if (const Value* v = s->vars.find(name)) return v;
  return nullptr;
}

void Scope::set(std::string name, Value v) { vars.set(std::move(name), std::move(v)); }

std::string Renderer::where(size_t pos) const { return "chat template " + location(src_, pos) + ": "; }

void Renderer::charge_string(size_t bytes) {
  if (bytes > limits_.max_output_bytes)
    fail(ErrorKind::InvalidArgument, "a string of ", bytes, " bytes exceeds the ", limits_.max_output_bytes,
         "-byte limit (ChatTemplateLimits::max_output_bytes)");
  charge_built(bytes);
}

// Everything a render builds (strings and list slots) counts against one budget, which
// bounds its memory even when each single value is within its own limit.
void Renderer::charge_built(size_t bytes) {
  built_ += bytes;
  if (built_ / 16 > limits_.max_output_bytes)
    fail(ErrorKind::InvalidArgument, "the template built more than ", 16 * limits_.max_output_bytes,
         " bytes of strings (16 x ChatTemplateLimits::max_output_bytes)");
}

void Renderer::check_time() const {
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (secs > limits_.max_seconds)
    fail(ErrorKind::InvalidArgument, "the template ran longer than ", limits_.max_seconds,
         " s (ChatTemplateLimits::max_seconds)");
}

void Renderer::charge_items(size_t items) {
  if (items > limits_.max_container_items)
    fail(ErrorKind::InvalidArgument, "a list of ", items, " items exceeds the ", limits_.max_container_items,
         "-item limit (ChatTemplateLimits::max_container_items)");
  charge_built(items * sizeof(Value));
}

void Renderer::emit(std::string_view text) {
  if (out_.size() + text.size() > limits_.max_output_bytes)
    fail(ErrorKind::InvalidArgument, "the output exceeds ", limits_.max_output_bytes,
         " bytes (ChatTemplateLimits::max_output_bytes)");
  out_ += text;
}

std::string Renderer::render(const Body& body, const Dict& context) {
  Scope root;
  add_globals(root);
  for (const auto& [k, v] : context.entries) root.set(k, v);
  WalkBudget budget(limits_.max_steps, limits_.max_output_bytes);
  root_ = scope_ = &root;
  stack_base_ = static_cast<const char*>(__builtin_frame_address(0));
  exec(body, root);
  return std::move(out_);
}

Renderer::Flow Renderer::exec(const Body& body, Scope& scope) {
  for (const StmtPtr& s : body) {
    Flow f;
    try {
      f = exec_stmt(*s, scope);
    } catch (const TemplateError&) {
      throw;
    } catch (const Error& e) {
      throw TemplateError(e.kind(), where(s->pos) + e.what());
    }
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

std::string Renderer::capture(const Body& body, Scope& scope) {
  std::string saved = std::move(out_);
  out_.clear();
  Flow f = exec(body, scope);
  std::string got = std::move(out_);
  out_ = std::move(saved);
  if (f != Flow::Normal) fail(ErrorKind::InvalidArgument, "break/continue outside a for loop");
  charge_string(got.size());
  return got;
}

Renderer::Flow Renderer::exec_stmt(const Stmt& s, Scope& scope) {
  step();
  check_stack();
  Scope* saved = scope_;
  scope_ = &scope;
  struct Restore {
    Scope*& p;
    Scope* v;
    ~Restore() { p = v; }
  } restore{scope_, saved};
  switch (s.kind) {
    case Stmt::Kind::Text: emit(s.text); break;
    case Stmt::Kind::Output: emit(to_str(eval(*s.expr))); break;
    case Stmt::Kind::If:
      for (size_t i = 0; i < s.conds.size(); ++i)
        if (truthy(eval(*s.conds[i]))) return exec(s.bodies[i], scope);
      return exec(s.else_body, scope);
    case Stmt::Kind::For: return exec_for(s, scope);
    case Stmt::Kind::Set: exec_set(s, scope); break;
    case Stmt::Kind::SetBlock: {
      Value v(capture(s.body, scope));
      if (s.filter) {
        pending_ = &v;
        v = eval(*s.filter);
      }
      scope.set(s.names[0], std::move(v));
      break;
    }
    case Stmt::Kind::Macro: scope.set(s.names[0], make_macro(s, scope)); break;
    case Stmt::Kind::CallBlock: {
      // caller() renders the block's body; it refuses to run once the block is over (a
      // template could have stored it in a namespace).
      auto alive = std::make_shared<bool>(true);
      auto c = std::make_shared<Callable>();
      c->name = "caller";
      Scope* outer = &scope;
      c->fn = [&s, outer, alive](CallArgs& args, Renderer& r) -> Value {
        if (!*alive) fail(ErrorKind::InvalidArgument, "caller() called after its call block ended");
        Scope inner{outer};
        for (size_t i = 0; i < s.params.size(); ++i) {
          const Value* a = args.get(i, s.params[i]);
          inner.set(s.params[i], a               ? *a
                                 : s.defaults[i] ? r.eval(*s.defaults[i])
                                                 : Value::undefined("'" + s.params[i] + "' is undefined"));
        }
        return Value(r.capture(s.body, inner));
      };
      const Expr& call_expr = *s.expr;
      Value callee = eval(*call_expr.a[0]);
      CallArgs args;
      args_of(call_expr, 1, args);
      args.keyword.emplace_back("caller", Value(CallablePtr(c)));
      Value result;
      try {
        result = call(callee, args);
      } catch (...) {
        *alive = false;
        throw;
      }
      *alive = false;
      emit(to_str(result));
      break;
    }
    case Stmt::Kind::FilterBlock: {
      Value v(capture(s.body, scope));
      pending_ = &v;
      emit(to_str(eval(*s.filter)));
      break;
    }
    case Stmt::Kind::Block: return exec(s.body, scope);
    case Stmt::Kind::Break: return Flow::Break;
    case Stmt::Kind::Continue: return Flow::Continue;
  }
  return Flow::Normal;
}

namespace {
// Binds `names` to `v`, unpacking a sequence when there are several (`for k, v in ...`).
void bind_names(Scope& scope, const std::vector<std::string>& names, const Value& v, Renderer& r) {
  if (names.size() == 1) {
    scope.set(names[0], v);
    return;
  }
  List items = iterate(v, r);
  if (items.size() != names.size())
    fail(ErrorKind::InvalidArgument, items.size() < names.size() ? "not enough" : "too many",
         " values to unpack (expected ", names.size(), ", got ", items.size(), ")");
  for (size_t i = 0; i < names.size(); ++i) scope.set(names[i], items[i]);
}
}  // namespace

Renderer::Flow Renderer::exec_for(const Stmt& s, Scope& scope) {
  List all = iterate(eval(*s.expr), *this);
  if (s.cond) {
    // `for x in y if cond`: the loop (and loop.length) sees only the items that pass.
    List kept;
    for (const Value& item : all) {
      step();
      Scope probe{&scope};
      bind_names(probe, s.names, item, *this);
      scope_ = &probe;
      bool keep = truthy(eval(*s.cond));
      scope_ = &scope;
      if (keep) kept.push_back(item);
    }
    all = std::move(kept);
  }
  if (all.empty()) return exec(s.else_body, scope);
  const int64_t n = int64_t(all.size());
  auto cycle = std::make_shared<Callable>();
  cycle->name = "loop.cycle";
  auto index = std::make_shared<int64_t>(0);
  cycle->fn = [index](CallArgs& args, Renderer&) -> Value {
    if (args.positional.empty()) fail(ErrorKind::InvalidArgument, "loop.cycle() needs at least one value");
    return args.positional[size_t(*index) % args.positional.size()];
  };
  for (int64_t i = 0; i < n; ++i) {
    step();
    *index = i;
    auto loop = std::make_shared<Dict>();  // the items' depth is not needed: loop is never nested
    loop->entries = {{"index", Value(i + 1)},
                     {"index0", Value(i)},
                     {"revindex", Value(n - i)},
                     {"revindex0", Value(n - i - 1)},
                     {"first", Value(i == 0)},
                     {"last", Value(i == n - 1)},
                     {"length", Value(n)},
                     {"depth", Value(1)},
                     {"depth0", Value(0)},
                     {"previtem", i > 0 ? all[size_t(i - 1)] : Value::undefined("there is no previous item")},
                     {"nextitem", i + 1 < n ? all[size_t(i + 1)] : Value::undefined("there is no next item")},
                     {"cycle", Value(CallablePtr(cycle))}};
    Scope body{&scope};
    body.set("loop", Value::dict(loop));
    bind_names(body, s.names, all[size_t(i)], *this);
    if (exec(s.body, body) == Flow::Break) break;
  }
  return Flow::Normal;
}

void Renderer::exec_set(const Stmt& s, Scope& scope) {
  Value v = eval(*s.expr);
  if (!s.attr.empty()) {
    const Value* target = scope.find(s.names[0]);
    if (!target || !target->is_dict() || !target->dict().is_namespace)
      fail(ErrorKind::InvalidArgument, "cannot assign attribute '", s.attr, "' on '", s.names[0],
           "': it is not a namespace()");
    target->dict().set(s.attr, std::move(v));
    return;
  }
  bind_names(scope, s.names, v, *this);
}

// A macro sees its arguments over the scope it was defined in (a loop's variables too), as
// jinja2's macros close over theirs; called after that scope ended (stored in a namespace
// and called after the loop), it fails instead of reading freed memory.
Value Renderer::make_macro(const Stmt& s, Scope& defining) {
  auto c = std::make_shared<Callable>();
  c->name = s.names[0];
  Scope* outer = &defining;
  c->fn = [&s, outer, alive = defining.alive_flag()](CallArgs& args, Renderer& r) -> Value {
    if (!*alive)
      fail(ErrorKind::InvalidArgument, "macro '", s.names[0], "' called after the scope it was defined in ended");
    if (args.positional.size() > s.params.size())
      fail(ErrorKind::InvalidArgument, "macro '", s.names[0], "' takes not more than ", s.params.size(),
           " argument(s)");
    if (++r.depth_ > r.limits_.max_depth)
      fail(ErrorKind::InvalidArgument, "macro calls nested deeper than ", r.limits_.max_depth,
           " (ChatTemplateLimits::max_depth)");
    struct Leave {
      size_t& d;
      ~Leave() { --d; }
    } leave{r.depth_};
    Scope inner{outer};
    for (const auto& [k, v] : args.keyword) {
      bool known = k == "caller";
      for (const auto& p : s.params) known = known || p == k;
      if (!known) fail(ErrorKind::InvalidArgument, "macro '", s.names[0], "' takes no keyword argument '", k, "'");
    }
    Scope* saved = r.scope_;
    r.scope_ = &inner;
    for (size_t i = 0; i < s.params.size(); ++i) {
      const Value* a = args.get(i, s.params[i]);
      inner.set(s.params[i], a               ? *a
                             : s.defaults[i] ? r.eval(*s.defaults[i])
                                             : Value::undefined("'" + s.params[i] + "' is undefined"));
    }
    r.scope_ = saved;
    if (const Value* caller = args.get(size_t(-1), "caller")) inner.set("caller", *caller);
    return Value(r.capture(s.body, inner));
  };
  return Value(CallablePtr(c));
}

Value Renderer::eval(const Expr& e) {
  step();
  check_stack();
  try {
    return eval_node(e);
  } catch (const TemplateError&) {
    throw;
  } catch (const Error& err) {
    throw TemplateError(err.kind(), where(e.pos) + err.what());
  }
}

void Renderer::args_of(const Expr& e, size_t first, CallArgs& out) {
  for (size_t i = first; i < e.a.size(); ++i) out.positional.push_back(eval(*e.a[i]));
  for (const auto& [k, v] : e.kwargs) out.keyword.emplace_back(k, eval(*v));
}

Value Renderer::call(const Value& callee, CallArgs& args) {
  if (callee.is_undefined()) fail(ErrorKind::InvalidArgument, callee.undefined_name());
  if (!callee.is_callable()) fail(ErrorKind::InvalidArgument, "'", type_name(callee), "' object is not callable");
  return callee.callable().fn(args, *this);
}

Value Renderer::eval_node(const Expr& e) {
  using K = Expr::Kind;
  switch (e.kind) {
    case K::Literal: return e.value;
    case K::Name: {
      const Value* v = scope_->find(e.name);
      return v ? *v : Value::undefined("'" + e.name + "' is undefined");
    }
    case K::List:
    case K::Tuple: {
      charge_items(e.a.size());
      List items;
      for (const auto& x : e.a) items.push_back(eval(*x));
      return Value::list(std::move(items), e.kind == K::Tuple);
    }
    case K::Dict: {
      auto d = std::make_shared<Dict>();
      for (size_t i = 0; i + 1 < e.a.size(); i += 2) {
        Value k = eval(*e.a[i]);
        if (!k.is_string()) fail(ErrorKind::Unsupported, "dict keys other than strings are not supported");
        d->set(k.str(), eval(*e.a[i + 1]));
      }
      return Value::dict(std::move(d));
    }
    case K::Attr: return get_attr(eval(*e.a[0]), e.name);
    case K::Item: return get_item(eval(*e.a[0]), eval(*e.a[1]));
    case K::Slice: {
      Value obj = eval(*e.a[0]);
      Value b[3];
      for (int i = 0; i < 3; ++i) b[i] = e.a[1 + i] ? eval(*e.a[1 + i]) : Value(None{});
      return get_slice(obj, b[0], b[1], b[2], *this);
    }
    case K::Call: {
      Value callee = eval(*e.a[0]);
      CallArgs args;
      args_of(e, 1, args);
      return call(callee, args);
    }
    case K::Filter: {
      Value v;
      if (e.a[0]) {
        v = eval(*e.a[0]);
      } else {
        v = *pending_;
      }
      CallArgs args;
      args_of(e, 1, args);
      return filter(e.name, v, args);
    }
    case K::Test: {
      Value v = eval(*e.a[0]);
      CallArgs args;
      args_of(e, 1, args);
      return Value(test(e.name, v, args) != e.negated);
    }
    case K::Unary: {
      Value v = eval(*e.a[0]);
      if (e.name == "not") return Value(!truthy(v));
      if (v.is_float()) return Value(e.name == "-" ? -v.as_double() : v.as_double());
      if (v.is_int() || v.is_bool()) {
        if (e.name == "-" && v.as_int() == INT64_MIN) fail(ErrorKind::InvalidArgument, "integer overflow");
        return Value(e.name == "-" ? -v.as_int() : v.as_int());
      }
      fail(ErrorKind::InvalidArgument, "bad operand type for unary ", e.name, ": '", type_name(v), "'");
    }
    case K::Binary: {
      Value l = eval(*e.a[0]);
      if (e.name == "and") return truthy(l) ? eval(*e.a[1]) : l;
      if (e.name == "or") return truthy(l) ? l : eval(*e.a[1]);
      return binary_op(e.name, l, eval(*e.a[1]), *this);
    }
    case K::Compare: {
      Value l = eval(*e.a[0]);
      for (size_t i = 0; i < e.ops.size(); ++i) {
        Value r = eval(*e.a[i + 1]);
        if (!compare_op(e.ops[i], l, r)) return Value(false);
        l = std::move(r);
      }
      return Value(true);
    }
    case K::Cond:
      if (truthy(eval(*e.a[1]))) return eval(*e.a[0]);
      return e.a[2] ? eval(*e.a[2]) : Value::undefined("the conditional expression evaluated to false and had no else");
  }
  fail(ErrorKind::Internal, "unknown expression node");
}

}  // namespace wick::text::jinja
