// PyTorch-style printing: nested brackets, a common number format, elision of large
// tensors (first and last 3 entries of each dim beyond 1000 elements), then dtype/device.
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/checks.h"
#include "wick/tensor.h"

namespace wick {

namespace {

constexpr int64_t kSummarizeAbove = 1000;
constexpr int64_t kEdgeItems = 3;

struct Formatter {
  bool integer_dtype = false;
  bool sci = false;
  bool all_integral = false;
  int width = 1;

  std::string format(double v) const {
    char buf[64];
    if (integer_dtype) {
      std::snprintf(buf, sizeof buf, "%.0f", v);
    } else if (std::isnan(v)) {
      std::snprintf(buf, sizeof buf, "nan");
    } else if (std::isinf(v)) {
      std::snprintf(buf, sizeof buf, v > 0 ? "inf" : "-inf");
    } else if (sci) {
      std::snprintf(buf, sizeof buf, "%.4e", v);
    } else if (all_integral) {
      std::snprintf(buf, sizeof buf, "%.0f.", v);
    } else {
      std::snprintf(buf, sizeof buf, "%.4f", v);
    }
    return buf;
  }
};

void print_rec(std::ostream& os, const std::vector<double>& v, const Shape& shape, size_t d, int64_t base,
               const std::vector<int64_t>& strides, bool summarize, const Formatter& fmt, int indent) {
  if (shape.rank() == 0) {
    os << fmt.format(v[0]);
    return;
  }
  const int64_t n = shape[d];
  os << '[';
  auto item = [&](int64_t i) {
    if (d + 1 == shape.rank()) {
      std::string s = fmt.format(v[size_t(base + i * strides[d])]);
      os << std::string(size_t(std::max<int>(0, fmt.width - int(s.size()))), ' ') << s;
    } else {
      print_rec(os, v, shape, d + 1, base + i * strides[d], strides, summarize, fmt, indent + 1);
    }
  };
  const std::string sep = d + 1 == shape.rank() ? ", " : ",\n" + std::string(size_t(indent + 1), ' ');
  const std::string extra = d + 2 < shape.rank() ? "\n" : "";
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
      os << "..." << sep << extra;
      i = n - kEdgeItems - 1;
      continue;
    }
    item(i);
    if (i + 1 < n) os << sep << (i + 1 < n ? extra : "");
  }
  os << ']';
}

}  // namespace

std::string Tensor::to_string() const {
  if (!defined()) return "tensor(undefined)";
  std::ostringstream os;
  const std::vector<double> v = numel() ? to_vector<double>() : std::vector<double>{};
  Formatter fmt;
  fmt.integer_dtype = is_integer(dtype());
  double max_abs = 0, min_abs = INFINITY;
  bool integral = true;
  for (double x : v) {
    if (!std::isfinite(x)) continue;
    max_abs = std::max(max_abs, std::fabs(x));
    if (x != 0) min_abs = std::min(min_abs, std::fabs(x));
    integral = integral && x == std::trunc(x);
  }
  fmt.all_integral = integral;
  fmt.sci =
      !integral && (max_abs >= 1e8 || (min_abs < 1e-4 && max_abs > 0) || (max_abs / min_abs > 1e3 && max_abs > 1e3));
  for (double x : v) fmt.width = std::max(fmt.width, int(fmt.format(x).size()));
  os << "tensor(";
  if (numel() == 0) {
    os << "[]";
    if (rank() != 1) os << ", size=" << shape();
  } else {
    print_rec(os, v, shape(), 0, 0, Layout::contiguous_strides(shape()), numel() > kSummarizeAbove, fmt, 7);
  }
  os << ", dtype=" << dtype() << ", device=" << device() << ')';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

}  // namespace wick
