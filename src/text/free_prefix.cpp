#include "text/free_prefix.h"

#include "wick/error.h"

namespace wick::text {

FreePrefixAutomaton::FreePrefixAutomaton(FreePrefix p) : p_(std::move(p)) {
  WICK_CHECK(!p_.close.empty(), InvalidArgument, "FreePrefix: the closing marker is empty");
  fail_.assign(p_.close.size(), 0);
  for (size_t k = 1, b = 0; k < p_.close.size(); ++k) {
    while (b > 0 && p_.close[k] != p_.close[b]) b = fail_[b - 1];
    if (p_.close[k] == p_.close[b]) ++b;
    fail_[k] = b;
  }
}

size_t FreePrefixAutomaton::feed(Pos& pos, std::string_view bytes) const {
  Pos p = pos;
  size_t k = 0;
  for (; k < bytes.size() && !p.done; ++k) {
    const char c = bytes[k];
    if (p.opened < p_.open.size()) {
      if (c != p_.open[p.opened]) return std::string_view::npos;
      ++p.opened;
      continue;
    }
    while (p.closing > 0 && c != p_.close[p.closing]) p.closing = fail_[p.closing - 1];
    if (c == p_.close[p.closing]) ++p.closing;
    p.done = p.closing == p_.close.size();
  }
  pos = p;
  return k;
}

}  // namespace wick::text
