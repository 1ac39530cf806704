#include "wick/text/stop_text.h"

#include <algorithm>

#include "text/marker_text.h"

namespace wick::text {

std::string StopText::push(std::string_view text) {
  if (stopped_) return "";
  pending_ += text;
  // The earliest complete stop string ends the text. Only the pending text is searched: the
  // text already returned had no stop string start in it (else it would have been held).
  size_t cut = std::string::npos;
  for (const auto& s : stops_) cut = std::min(cut, pending_.find(s));
  if (cut != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, cut);
    pending_.clear();
    return out;
  }
  // Hold back the longest suffix that is a proper prefix of a stop string. It starts on a
  // character boundary: a stop string starts with a lead byte, which never continues one.
  size_t hold = 0;
  for (const auto& s : stops_) hold = std::max(hold, partial_marker(pending_, s));
  std::string out = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

std::string StopText::flush() {
  std::string out = stopped_ ? std::string() : pending_;
  pending_.clear();
  return out;
}

}  // namespace wick::text
