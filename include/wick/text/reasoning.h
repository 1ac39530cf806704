// The reasoning of thinking models (Qwen3, DeepSeek-R1, QwQ: <think>…</think> before the
// answer) split from the answer as it is generated: what a server returns as
// `reasoning_content` and `content`.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "wick/text/grammar.h"

namespace wick::text {

class ReasoningSplit {
 public:
  struct Piece {
    std::string reasoning, content;  // text for each, in order
  };
  // starts_inside: the prompt already opened the reasoning (DeepSeek-R1's template ends its
  // generation prompt with "<think>\n"), so the output starts in it.
  explicit ReasoningSplit(bool starts_inside = false, std::string open = "<think>", std::string close = "</think>");

  // The next piece of output. Text that may be the start of a marker is held back until it
  // is known; the markers are not returned, and whitespace between the reasoning and the
  // answer is dropped. Output that does not open with the marker (leading whitespace aside)
  // is all answer.
  Piece push(std::string_view text);
  // The end of the output: what was held back, where it belongs.
  Piece flush();

 private:
  enum class State { Start, Inside, Between, Answer };
  State state_;
  std::string open_, close_, held_;
};

// Whether a chat template writes reasoning markers (a thinking model's, or harmony's analysis
// channel: harmony.h), and whether a rendered prompt ends inside an opened reasoning.
bool template_thinks(std::string_view chat_template);
bool prompt_opens_reasoning(std::string_view prompt);
// Where a constrained answer starts for a thinking template: after the reasoning, which the
// prompt opened (open "") or the model opens ("<think>"); none when the prompt closed it
// (thinking turned off: "<think>\n\n</think>\n\n") or the template does not think.
std::optional<FreePrefix> reasoning_prefix(std::string_view chat_template, std::string_view prompt);

}  // namespace wick::text
