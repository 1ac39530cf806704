// PyTorch-style printing, following torch/_tensor_str.py (1.13): nested brackets; one
// number format (integer, fixed with 4 decimals, or scientific) and one width chosen
// from the values shown; tensors over 1000 elements summarized to the first and last 3
// entries of each dim; rows wrapped at 80 columns; then dtype and device.
#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>

#include "core/checks.h"
#include "wick/tensor.h"

namespace wick {

namespace {

constexpr int64_t kSummarizeAbove = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr size_t kLineWidth = 80;

// The values to print, row-major: exact integers for integer dtypes, doubles otherwise.
struct Values {
  bool integer = false;
  std::vector<int64_t> ints;
  std::vector<double> reals;
};

// Calls fn(flat index) for each element that a (possibly summarized) print shows.
void visit_shown(const Shape& shape, const std::vector<int64_t>& strides, size_t d, int64_t base, bool summarize,
                 const std::function<void(int64_t)>& fn) {
  if (d == shape.rank()) return fn(base);
  const int64_t n = shape[d];
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) i = n - kEdgeItems;
    visit_shown(shape, strides, d + 1, base + i * strides[d], summarize, fn);
  }
}

// PyTorch's _Formatter.
class Formatter {
 public:
  Formatter(const Values& v, const std::vector<int64_t>& shown) : integer_(v.integer) {
    if (integer_) {
      for (int64_t i : shown) width_ = std::max(width_, std::to_string(v.ints[size_t(i)]).size());
      return;
    }
    std::vector<double> nonzero_finite;
    for (int64_t i : shown) {
      const double x = v.reals[size_t(i)];
      if (std::isfinite(x) && x != 0) nonzero_finite.push_back(x);
    }
    if (nonzero_finite.empty()) return;
    double lo = INFINITY, hi = 0;
    for (double x : nonzero_finite) {
      lo = std::min(lo, std::fabs(x));
      hi = std::max(hi, std::fabs(x));
      int_mode_ = int_mode_ && x == std::ceil(x);
    }
    sci_ = hi / lo > 1000.0 || hi > 1.0e8 || (!int_mode_ && lo < 1.0e-4);
    for (double x : nonzero_finite) width_ = std::max(width_, unpadded(x).size());
  }

  size_t width() const { return width_; }

  std::string format(const Values& v, int64_t i) const {
    const std::string s = integer_ ? std::to_string(v.ints[size_t(i)]) : unpadded(v.reals[size_t(i)]);
    return std::string(width_ > s.size() ? width_ - s.size() : 0, ' ') + s;
  }

 private:
  std::string unpadded(double x) const {
    char buf[64];
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
    if (sci_) {
      std::snprintf(buf, sizeof buf, "%.4e", x);
    } else if (int_mode_) {
      std::snprintf(buf, sizeof buf, "%.0f.", x);
    } else {
      std::snprintf(buf, sizeof buf, "%.4f", x);
    }
    return buf;
  }

  bool integer_;
  bool int_mode_ = true;
  bool sci_ = false;
  size_t width_ = 1;
};

struct Printer {
  const Values& values;
  const Shape& shape;
  std::vector<int64_t> strides;
  bool summarize;
  const Formatter& fmt;

  // _vector_str: the last dim, wrapped to the line width.
  std::string vector_str(int64_t base, size_t indent) const {
    const int64_t n = shape[shape.rank() - 1], stride = strides.back();
    std::vector<std::string> data;
    for (int64_t i = 0; i < n; ++i) {
      if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
        data.push_back(" ...");
        i = n - kEdgeItems;
      }
      data.push_back(fmt.format(values, base + i * stride));
    }
    const size_t per_line = std::max<size_t>(1, (kLineWidth > indent ? kLineWidth - indent : 0) / (fmt.width() + 2));
    std::string out = "[";
    for (size_t i = 0; i < data.size(); ++i) {
      if (i) out += i % per_line == 0 ? ",\n" + std::string(indent + 1, ' ') : ", ";
      out += data[i];
    }
    return out + "]";
  }

  // _tensor_str_with_formatter for the sub-tensor starting at dim d.
  std::string str(size_t d, int64_t base, size_t indent) const {
    if (shape.rank() == 0) return fmt.format(values, base);
    if (d + 1 == shape.rank()) return vector_str(base, indent);
    const int64_t n = shape[d];
    const std::string sep = "," + std::string(shape.rank() - d - 1, '\n') + std::string(indent + 1, ' ');
    std::string out = "[";
    for (int64_t i = 0; i < n; ++i) {
      if (i) out += sep;
      if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
        out += "..." + sep;
        i = n - kEdgeItems;
      }
      out += str(d + 1, base + i * strides[d], indent + 1);
    }
    return out + "]";
  }
};

// _add_suffixes: ", suffix" while it fits on the line, else on a new line.
std::string add_suffixes(std::string s, const std::vector<std::string>& suffixes, size_t indent) {
  const size_t nl = s.rfind('\n');
  size_t last_line = nl == std::string::npos ? s.size() + 2 : s.size() - nl + 1;  // as PyTorch counts
  for (const std::string& suffix : suffixes) {
    if (last_line + suffix.size() + 2 > kLineWidth) {
      s += ",\n" + std::string(indent, ' ') + suffix;
      last_line = indent + suffix.size();
    } else {
      s += ", " + suffix;
      last_line += suffix.size() + 2;
    }
  }
  return s + ")";
}

}  // namespace

std::string Tensor::to_string() const {
  if (!defined()) return "tensor(undefined)";
  const std::string prefix = "tensor(";
  std::vector<std::string> suffixes;
  std::string body;
  if (numel() == 0) {
    body = "[]";
    if (rank() != 1) {
      std::string size = "size=(";
      for (size_t i = 0; i < rank(); ++i) size += (i ? ", " : "") + std::to_string(shape()[i]);
      suffixes.push_back(size + ")");
    }
  } else {
    Values v;
    v.integer = is_integer(dtype());
    if (v.integer)
      v.ints = to_vector<int64_t>();
    else
      v.reals = to_vector<double>();
    const bool summarize = numel() > kSummarizeAbove;
    const std::vector<int64_t> strides = Layout::contiguous_strides(shape());
    std::vector<int64_t> shown;
    visit_shown(shape(), strides, 0, 0, summarize, [&](int64_t i) { shown.push_back(i); });
    const Formatter fmt(v, shown);
    body = Printer{v, shape(), strides, summarize, fmt}.str(0, 0, prefix.size());
  }
  suffixes.push_back(detail::cat("dtype=", dtype()));
  suffixes.push_back(detail::cat("device=", device()));
  return add_suffixes(prefix + body, suffixes, prefix.size());
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

}  // namespace wick
