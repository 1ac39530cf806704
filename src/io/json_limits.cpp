#include "io/json_limits.h"

#include <unordered_set>

#include "wick/error.h"

namespace wick::json {

namespace {

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
constexpr size_t kMaxMessage = 200;

// nlohmann's messages may quote the input (a whole token, however long): one line, cut short.
std::string short_message(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  if (s.size() > kMaxMessage) s = s.substr(0, kMaxMessage) + "...";
  return s;
}

// nlohmann's DOM builder behind a filter that counts the nesting and lists the top-level
// keys. (nlohmann's parse callback could do both, but its parser searches the enclosing
// object for discarded values after every nested object: quadratic in the keys.)
class LimitedDom {
 public:
  using Json = nlohmann::json;
  LimitedDom(Json& root, std::string_view what, std::vector<std::string>* keys)
      : dom_(root), what_(what), keys_(keys) {}

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(Json::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(Json::number_float_t v, const Json::string_t& s) { return dom_.number_float(v, s); }
  bool string(Json::string_t& v) { return dom_.string(v); }
  bool binary(Json::binary_t& v) { return dom_.binary(v); }
  bool start_object(std::size_t n) { return enter() && dom_.start_object(n); }
  bool key(Json::string_t& k) {
    if (keys_ && depth_ == 1 && seen_.insert(k).second) keys_->push_back(k);
    return dom_.key(k);
  }
  bool end_object() { return --depth_, dom_.end_object(); }
  bool start_array(std::size_t n) { return enter() && dom_.start_array(n); }
  bool end_array() { return --depth_, dom_.end_array(); }
  template <class Exception>
  bool parse_error(std::size_t pos, const std::string& token, const Exception& e) {
    return dom_.parse_error(pos, token, e);  // throws e
  }

 private:
  // Throwing stops the parse before the next level is read.
  bool enter() {
    if (++depth_ > kMaxDepth)
      fail(ErrorKind::Format, what_, ": arrays/objects nest deeper than the JSON nesting limit of ", kMaxDepth,
           " levels");
    return true;
  }
  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  std::string_view what_;
  std::vector<std::string>* keys_;
  std::unordered_set<std::string> seen_;
  int depth_ = 0;
};

nlohmann::json parse_checked(std::string_view text, std::string_view what, std::vector<std::string>* keys) {
  if (text.starts_with(kByteOrderMark))
    fail(ErrorKind::Format, what, ": it starts with a UTF-8 byte-order mark, which JSON does not allow");
  nlohmann::json root;
  LimitedDom dom(root, what, keys);
  try {
    nlohmann::json::sax_parse(text.begin(), text.end(), &dom, nlohmann::json::input_format_t::json, /*strict=*/true);
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorKind::Format, what, ": ", short_message(e.what()));
  }
  return root;
}

void append_brief(const nlohmann::json& v, size_t limit, std::string& out) {
  if (out.size() > limit) return;
  if (v.is_array() || v.is_object()) {
    out += v.is_array() ? '[' : '{';
    bool first = true;
    for (auto it = v.begin(); it != v.end() && out.size() <= limit; ++it, first = false) {
      if (!first) out += ',';
      if (v.is_object()) append_brief(nlohmann::json(it.key()), limit, out), out += ':';
      append_brief(*it, limit, out);
    }
    out += v.is_array() ? ']' : '}';
  } else if (v.is_string()) {
    // Only the start of a long string; replace keeps a cut UTF-8 sequence printable.
    const nlohmann::json cut = v.get_ref<const std::string&>().substr(0, limit);
    out += cut.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    out += v.dump();
  }
}

}  // namespace

nlohmann::json parse(std::string_view text, std::string_view what) { return parse_checked(text, what, nullptr); }

nlohmann::json parse(std::string_view text, std::string_view what, std::vector<std::string>& top_level_keys) {
  top_level_keys.clear();
  return parse_checked(text, what, &top_level_keys);
}

std::string brief(const nlohmann::json& value, size_t limit) {
  std::string out;
  append_brief(value, limit, out);
  if (out.size() > limit) out = out.substr(0, limit) + "...";
  return out;
}

}  // namespace wick::json
