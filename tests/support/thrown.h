// The kind of wick::Error a call throws, for tests of clear errors:
//   EXPECT_EQ(test::thrown_kind([&] { linear(x, w); }), ErrorKind::ShapeMismatch);
#pragma once

#include <optional>

#include "wick/error.h"

namespace wick::test {

// The kind of the wick::Error f throws; nullopt when it returns normally.
template <class F>
std::optional<ErrorKind> thrown_kind(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  return std::nullopt;
}

}  // namespace wick::test
