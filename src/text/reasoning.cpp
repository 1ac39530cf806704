#include "wick/text/reasoning.h"

#include "text/marker_text.h"
#include "wick/text/harmony.h"

namespace wick::text {

ReasoningSplit::ReasoningSplit(bool starts_inside, std::string open, std::string close)
    : state_(starts_inside ? State::Inside : State::Start), open_(std::move(open)), close_(std::move(close)) {}

ReasoningSplit::Piece ReasoningSplit::push(std::string_view text) {
  Piece out;
  held_ += text;
  for (bool again = true; again;) {
    again = false;
    switch (state_) {
      case State::Start: {
        size_t i = 0;
        while (i < held_.size() && is_blank(held_[i])) ++i;
        const std::string_view rest = std::string_view(held_).substr(i);
        if (rest.starts_with(open_)) {
          held_.erase(0, i + open_.size());
          state_ = State::Inside;
          again = true;
        } else if (!std::string_view(open_).starts_with(rest)) {  // cannot become the marker
          state_ = State::Answer;
          again = true;
        }
        break;
      }
      case State::Inside: {
        const size_t at = held_.find(close_);
        if (at != std::string::npos) {
          out.reasoning += held_.substr(0, at);
          held_.erase(0, at + close_.size());
          state_ = State::Between;
          again = true;
        } else {
          const size_t keep = partial_marker(held_, close_);
          out.reasoning += held_.substr(0, held_.size() - keep);
          held_.erase(0, held_.size() - keep);
        }
        break;
      }
      case State::Between: {
        size_t i = 0;
        while (i < held_.size() && is_blank(held_[i])) ++i;
        held_.erase(0, i);
        if (!held_.empty()) {
          state_ = State::Answer;
          again = true;
        }
        break;
      }
      case State::Answer:
        out.content += held_;
        held_.clear();
        break;
    }
  }
  return out;
}

ReasoningSplit::Piece ReasoningSplit::flush() {
  Piece out;
  if (state_ == State::Inside) out.reasoning = std::move(held_);
  if (state_ == State::Start || state_ == State::Answer) out.content = std::move(held_);
  held_.clear();
  return out;
}

// Harmony (gpt-oss) thinks in its analysis channel, which HarmonyDecoder writes as <think>.
bool template_thinks(std::string_view chat_template) {
  return chat_template.find("</think>") != std::string::npos || template_is_harmony(chat_template);
}

bool prompt_opens_reasoning(std::string_view prompt) {
  while (!prompt.empty() && is_blank(prompt.back())) prompt.remove_suffix(1);
  return prompt.ends_with("<think>");
}

std::optional<FreePrefix> reasoning_prefix(std::string_view chat_template, std::string_view prompt) {
  // Harmony's channel headers are special tokens no grammar allows: a constrained gpt-oss reply
  // is the answer from its first token (HarmonyDecoder passes header-less text as it is).
  if (!template_thinks(chat_template) || template_is_harmony(chat_template)) return std::nullopt;
  if (prompt_opens_reasoning(prompt)) return FreePrefix{"", "</think>"};
  while (!prompt.empty() && is_blank(prompt.back())) prompt.remove_suffix(1);
  if (prompt.ends_with("</think>")) return std::nullopt;
  return FreePrefix{"<think>", "</think>"};
}

}  // namespace wick::text
