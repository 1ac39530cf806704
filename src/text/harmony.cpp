#include "wick/text/harmony.h"

#include "text/marker_text.h"
#include "wick/text/tool_calls.h"

namespace wick::text {

namespace {

constexpr std::string_view kStart = "<|start|>", kChannel = "<|channel|>", kMessage = "<|message|>";
constexpr std::string_view kEnds[] = {"<|end|>", "<|call|>", "<|return|>"};

// The first end marker in s: its position and length (npos when none).
std::pair<size_t, size_t> find_end(std::string_view s) {
  std::pair<size_t, size_t> best{std::string_view::npos, 0};
  for (const std::string_view m : kEnds)
    if (const size_t at = s.find(m); at < best.first) best = {at, m.size()};
  return best;
}

// How much of s's tail may be the start of one of the markers.
size_t partial_any(std::string_view s, std::initializer_list<std::string_view> markers) {
  size_t keep = 0;
  for (const std::string_view m : markers) keep = std::max(keep, partial_marker(s, m));
  return keep;
}

// The word of a header after marker (up to a blank or the next marker), "" when none: the
// channel after <|channel|>, the recipient after "to=" ("functions.get_weather").
std::string_view word_after(std::string_view header, std::string_view marker) {
  const size_t at = header.find(marker);
  if (at == std::string_view::npos) return {};
  const std::string_view rest = header.substr(at + marker.size());
  size_t end = 0;
  while (end < rest.size() && !is_blank(rest[end]) && rest[end] != '<') ++end;
  return rest.substr(0, end);
}

}  // namespace

bool template_is_harmony(std::string_view t) {
  return t.find("<|channel|>") != std::string_view::npos && t.find("<|message|>") != std::string_view::npos;
}

std::string HarmonyDecoder::finish_message() {
  std::string out;
  if (kind_ == Kind::Reasoning) out = "</think>";
  if (kind_ == Kind::Call) {
    // The recipient's name without its namespace ("functions.get_weather" -> "get_weather"),
    // written as a Hermes call; arguments that are not JSON go out as a JSON string, which the
    // tool-call parser leaves as content (not an object): nothing is lost.
    const size_t dot = recipient_.find('.');
    const std::string name = dot == std::string::npos ? recipient_ : recipient_.substr(dot + 1);
    out = write_tool_call({name, std::string(trim_blank(body_))}, ToolCallFormat::Hermes);
  }
  body_.clear();
  recipient_.clear();
  kind_ = Kind::Text;
  state_ = State::Outside;
  return out;
}

std::string HarmonyDecoder::push(std::string_view text) {
  std::string out;
  held_ += text;
  for (bool again = true; again;) {
    again = false;
    switch (state_) {
      case State::Outside: {  // between messages: a header's start, or plain text
        const size_t s = held_.find(kStart), c = held_.find(kChannel);
        const size_t at = std::min(s, c);
        if (at != std::string::npos) {
          out += held_.substr(0, at);
          held_.erase(0, at);
          state_ = State::Header;
          again = true;
        } else {
          const size_t keep = partial_any(held_, {kStart, kChannel});
          out += held_.substr(0, held_.size() - keep);
          held_.erase(0, held_.size() - keep);
        }
        break;
      }
      case State::Header: {
        const size_t at = held_.find(kMessage);
        if (at == std::string::npos) break;  // the header is short: wait for all of it
        const std::string header = held_.substr(0, at);
        held_.erase(0, at + kMessage.size());
        recipient_ = std::string(word_after(header, "to="));
        const std::string_view channel = word_after(header, kChannel);
        kind_ = !recipient_.empty() && recipient_ != "user" && recipient_ != "all" ? Kind::Call
                : channel == "analysis"                                            ? Kind::Reasoning
                                                                                   : Kind::Text;
        if (kind_ == Kind::Reasoning) out += "<think>";
        state_ = State::Body;
        again = true;
        break;
      }
      case State::Body: {
        const auto [at, len] = find_end(held_);
        // A new header without an end marker also ends the body (a truncated message).
        const size_t next = std::min(held_.find(kStart), held_.find(kChannel));
        const size_t stop = std::min(at, next);
        if (stop != std::string::npos) {
          (kind_ == Kind::Call ? body_ : out) += held_.substr(0, stop);
          held_.erase(0, stop == at ? at + len : stop);
          out += finish_message();
          again = true;
        } else {
          const size_t keep = partial_any(held_, {kEnds[0], kEnds[1], kEnds[2], kStart, kChannel});
          (kind_ == Kind::Call ? body_ : out) += held_.substr(0, held_.size() - keep);
          held_.erase(0, held_.size() - keep);
        }
        break;
      }
    }
  }
  return out;
}

std::string HarmonyDecoder::flush() {
  std::string out;
  if (state_ == State::Body) {
    (kind_ == Kind::Call ? body_ : out) += held_;
    out += finish_message();
  } else {
    out += held_;  // plain text, or a header that never reached its body
  }
  held_.clear();
  state_ = State::Outside;
  return out;
}

}  // namespace wick::text
