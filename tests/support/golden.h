// Golden data for tests: reference outputs produced by PyTorch/numpy generator scripts
// (tests/data/gen_*.py) and stored as safetensors files in tests/data.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "wick/wick.h"

namespace wick::test {

std::string data_path(const std::string& name);
std::string shared_fixture_path(const std::string& name);

// Compares values elementwise within atol + rtol * |expected|; NaN matches NaN and
// infinities must match exactly. Reports the first mismatches.
::testing::AssertionResult all_close(const std::vector<double>& got, const std::vector<double>& expected, double rtol,
                                     double atol);
::testing::AssertionResult all_close(const Tensor& got, const Tensor& expected, double rtol, double atol);
// Equal f32 bit patterns (so -0.0 != +0.0 and NaN payloads count); names the first mismatches.
::testing::AssertionResult bits_equal(const std::vector<float>& got, const std::vector<float>& want);

// Tolerances for results computed in dtype.
double default_rtol(DType dtype);

// Tensor `name` of the safetensors golden file tests/data/<file> (each file loaded once).
// Throws naming the file and tensor when it is missing.
const Tensor& golden_tensor(const std::string& file, const std::string& name);

// The attention goldens' tolerance in dtype: they are f32 roundings of float64 references
// (bounding f64 at 1e-6) of inputs exact in every float dtype, so f16/bf16 results differ
// by their own roundings of probabilities and outputs.
double attention_tol(DType dtype);

// Largest |value| of a tensor (scales absolute tolerances).
inline double max_abs(const Tensor& t) {
  double m = 0;
  for (double v : t.to_vector<double>()) m = std::max(m, std::fabs(v));
  return m;
}

}  // namespace wick::test

#define EXPECT_CLOSE(got, expected, rtol, atol) EXPECT_TRUE(::wick::test::all_close(got, expected, rtol, atol))

// Expects statement to throw wick::Error of the given kind whose message contains text.
#define EXPECT_WICK_ERROR(statement, error_kind, text)                            \
  do {                                                                            \
    try {                                                                         \
      statement;                                                                  \
      ADD_FAILURE() << "expected wick::Error(" #error_kind ") from: " #statement; \
    } catch (const ::wick::Error& e_) {                                           \
      EXPECT_EQ(e_.kind(), ::wick::ErrorKind::error_kind) << e_.what();           \
      EXPECT_NE(std::string(e_.what()).find(text), std::string::npos)             \
          << "message '" << e_.what() << "' lacks '" << (text) << "'";            \
    }                                                                             \
  } while (0)
