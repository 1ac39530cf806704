// How much slower the build under test runs than a Release one: bounds on wall time (a
// hostile input handled "in bounded time") scale by it, so that the sanitizer stages of CI
// check the same bounds without failing on their instrumentation's cost. GCC says so by
// __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__, clang (CI's ASan tree) by __has_feature.
#pragma once

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define WICK_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define WICK_TEST_SANITIZED 1
#endif
#endif

namespace wick::test {

#ifdef WICK_TEST_SANITIZED
inline constexpr double kSanitizerSlowdown = 10.0;
#else
inline constexpr double kSanitizerSlowdown = 1.0;
#endif

}  // namespace wick::test
