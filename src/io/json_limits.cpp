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

nlohmann::json parse_checked(std::string_view text, std::string_view what, std::vector<std::string>* keys) {
  using Event = nlohmann::json::parse_event_t;
  if (text.starts_with(kByteOrderMark))
    fail(ErrorKind::Format, what, ": it starts with a UTF-8 byte-order mark, which JSON does not allow");
  std::unordered_set<std::string> seen;
  // depth counts the containers around the event, so a container starting at depth d is
  // level d + 1. Throwing stops the parse before the next level is read.
  const nlohmann::json::parser_callback_t check = [&](int depth, Event event, nlohmann::json& parsed) {
    if ((event == Event::object_start || event == Event::array_start) && depth >= kMaxDepth)
      fail(ErrorKind::Format, what, ": arrays/objects nest deeper than the JSON nesting limit of ", kMaxDepth,
           " levels");
    if (keys && event == Event::key && depth == 1) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (seen.insert(key).second) keys->push_back(key);
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), check);
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorKind::Format, what, ": ", short_message(e.what()));
  }
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
