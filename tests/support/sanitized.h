// How much slower the build under test runs than a Release one: bounds on wall time (a
// hostile input handled "in bounded time") scale by it, so that the sanitizer stages of CI
// check the same bounds without failing on their instrumentation's cost.
#pragma once

namespace wick::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr double kSanitizerSlowdown = 10.0;
#else
inline constexpr double kSanitizerSlowdown = 1.0;
#endif

}  // namespace wick::test
