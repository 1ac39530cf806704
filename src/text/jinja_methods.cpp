// Methods of dict and list values (`d.items()`, `d.get(k)`) and the global functions
// transformers' environment provides (range, namespace, dict, joiner, raise_exception,
// strftime_now). String methods are in jinja_strings.cpp.
#include <ctime>

#include "text/jinja_eval.h"

namespace wick::text::jinja {

Value callable(std::string name, std::function<Value(CallArgs&, Renderer&)> f) {
  auto c = std::make_shared<Callable>();
  c->name = std::move(name);
  c->fn = std::move(f);
  return Value(CallablePtr(c));
}

namespace {

Value unsafe(const Value& self, const std::string& name) {
  // ImmutableSandboxedEnvironment refuses methods that modify a list or dict.
  std::string msg = "access to attribute '" + name + "' of '" + std::string(type_name(self)) +
                    "' object is unsafe (the sandbox forbids modifying it)";
  return callable(name, [msg](CallArgs&, Renderer&) -> Value { fail(ErrorKind::InvalidArgument, msg); });
}

}  // namespace

Value method_of(const Value& self, const std::string& name) {
  if (self.is_string()) return str_method_of(self.str(), name);
  if (self.is_dict()) {
    Value d = self;
    if (name == "items" || name == "keys" || name == "values")
      return callable(name, [d, name](CallArgs&, Renderer& r) {
        List out;
        r.charge_items(d.dict().entries.size());
        for (const auto& [k, v] : d.dict().entries) {
          if (name == "items")
            out.push_back(Value::list({Value(k), v}, true));
          else
            out.push_back(name == "keys" ? Value(k) : v);
        }
        return Value::list(std::move(out));
      });
    if (name == "get")
      return callable(name, [d](CallArgs& a, Renderer&) {
        a.check("get", 2, "");
        if (a.positional.empty()) fail(ErrorKind::InvalidArgument, "get() takes at least one argument");
        const Value* v = a.positional[0].is_string() ? d.dict().find(a.positional[0].str()) : nullptr;
        return v ? *v : a.positional.size() > 1 ? a.positional[1] : Value(None{});
      });
    if (name == "update" || name == "pop" || name == "popitem" || name == "setdefault" || name == "clear")
      return unsafe(self, name);
    return Value();  // no such method: get_attr words the Undefined
  }
  if (self.is_list()) {
    Value l = self;
    if (name == "index" || name == "count")
      return callable(name, [l, name](CallArgs& a, Renderer&) {
        a.check(name, 1, "");
        if (a.positional.empty()) fail(ErrorKind::InvalidArgument, name, "() takes one argument");
        int64_t n = 0;
        for (size_t i = 0; i < l.items().size(); ++i)
          if (equals(l.items()[i], a.positional[0])) {
            if (name == "index") return Value(int64_t(i));
            ++n;
          }
        if (name == "index") fail(ErrorKind::InvalidArgument, to_repr(a.positional[0]), " is not in list");
        return Value(n);
      });
    if (name == "append" || name == "extend" || name == "insert" || name == "pop" || name == "remove" ||
        name == "clear" || name == "sort" || name == "reverse")
      return unsafe(self, name);
  }
  return Value();
}

void add_globals(Scope& scope) {
  scope.set("range", callable("range", [](CallArgs& a, Renderer& r) {
              a.check("range", 3, "");
              for (const Value& v : a.positional)
                if (!v.is_int() && !v.is_bool())
                  fail(ErrorKind::InvalidArgument, "range() arguments must be integers, not ", type_name(v));
              if (a.positional.empty()) fail(ErrorKind::InvalidArgument, "range expected at least 1 argument");
              int64_t start = 0, stop, step = 1;
              if (a.positional.size() == 1) {
                stop = a.positional[0].as_int();
              } else {
                start = a.positional[0].as_int();
                stop = a.positional[1].as_int();
                if (a.positional.size() == 3) step = a.positional[2].as_int();
              }
              if (step == 0) fail(ErrorKind::InvalidArgument, "range() arg 3 must not be zero");
              // Python's len(range): computed before anything is allocated.
              long double span = step > 0 ? (long double)stop - start : (long double)start - stop;
              long double n = span <= 0 ? 0 : (span + (step > 0 ? step : -step) - 1) / (step > 0 ? step : -step);
              if (n > (long double)r.limits().max_container_items) r.charge_items(r.limits().max_container_items + 1);
              r.charge_items(size_t(n));
              List out;
              for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
                out.emplace_back(i);
                if (__builtin_add_overflow(i, step, &i)) break;
                i -= step;
              }
              return Value::list(std::move(out));
            }));
  auto make_dict = [](bool ns) {
    return [ns](CallArgs& a, Renderer& r) {
      auto d = std::make_shared<Dict>();
      d->is_namespace = ns;
      if (!a.positional.empty()) {
        if (a.positional.size() > 1 || !a.positional[0].is_dict())
          fail(ErrorKind::InvalidArgument, ns ? "namespace" : "dict", "() takes one mapping and keyword arguments");
        d->entries = a.positional[0].dict().entries;
      }
      for (auto& [k, v] : a.keyword) {
        if (ns && !k.empty() && k[0] == '_')
          fail(ErrorKind::InvalidArgument,
               "chat templates cannot store underscore-prefixed attributes on a namespace, but got '", k, "'");
        d->set(k, v);
      }
      if (ns) r.own(d);
      return Value::dict(std::move(d));
    };
  };
  scope.set("namespace", callable("namespace", make_dict(true)));
  scope.set("dict", callable("dict", make_dict(false)));
  scope.set("joiner", callable("joiner", [](CallArgs& a, Renderer&) {
              a.check("joiner", 1, "sep");
              const Value* sep = a.get(0, "sep");
              std::string s = sep ? to_str(*sep) : ", ";
              auto used = std::make_shared<bool>(false);
              return callable("joiner", [s, used](CallArgs&, Renderer&) {
                bool first = !*used;
                *used = true;
                return Value(first ? std::string() : s);
              });
            }));
  scope.set("raise_exception", callable("raise_exception", [](CallArgs& a, Renderer&) -> Value {
              fail(ErrorKind::InvalidArgument, a.positional.empty() ? std::string() : to_str(a.positional[0]));
            }));
  scope.set("strftime_now", callable("strftime_now", [](CallArgs& a, Renderer&) {
              a.check("strftime_now", 1, "format");
              const Value* f = a.get(0, "format");
              if (!f || !f->is_string()) fail(ErrorKind::InvalidArgument, "strftime_now() needs a format string");
              std::time_t t = std::time(nullptr);
              std::tm tm{};
              localtime_r(&t, &tm);
              char buf[512];
              size_t n = f->str().size() < 200 ? std::strftime(buf, sizeof buf, f->str().c_str(), &tm) : 0;
              return Value(std::string(buf, n));
            }));
}

}  // namespace wick::text::jinja
