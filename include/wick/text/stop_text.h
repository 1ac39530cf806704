// Stop strings at the text level (OpenAI's `stop`, `wick generate --stop`): generated text
// is fed piece by piece as the tokenizer's decode stream produces it; what is returned may be
// shown (sent to the client, printed).
// A suffix that could still grow into a stop string is held back until it either does (the
// text is cut before the stop string and generation ends) or cannot any more.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace wick::text {

class StopText {
 public:
  explicit StopText(std::vector<std::string> stops) : stops_(std::move(stops)) {}

  // Appends generated text; returns what is now safe to send. After a stop string was seen
  // (stopped()), returns "" and ignores further text.
  std::string push(std::string_view text);
  // At the end of generation: the held-back text (nothing after a stop).
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;  // text not yet returned: a possible start of a stop string
  bool stopped_ = false;
};

}  // namespace wick::text
