// Bad input through every op family: each rejected call must raise wick::Error of the
// right kind with a message naming the op, and leave its inputs unchanged. Also NaN/Inf
// propagation and zero-size tensors, both as PyTorch behaves (values derived by hand
// from PyTorch's documented semantics).
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "support/devices.h"
#include "support/golden.h"
#include "wick/io.h"
#include "wick/nn.h"
#include "wick/ops.h"

namespace fs = std::filesystem;

namespace wick {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Every input's values (as f64; NaN compared by bits through all_close in the callers).
std::vector<std::vector<double>> snapshot(const std::vector<Tensor>& ts) {
  std::vector<std::vector<double>> out;
  for (const Tensor& t : ts) out.push_back(t.defined() ? t.to(DType::F64).to_vector<double>() : std::vector<double>{});
  return out;
}

// Expects stmt to throw wick::Error(kind) whose message contains text, and the listed
// input tensors to hold the same values afterwards.
#define EXPECT_REJECTED(stmt, kind, text, ...)                       \
  do {                                                               \
    SCOPED_TRACE(#stmt);                                             \
    const auto before_ = snapshot({__VA_ARGS__});                    \
    EXPECT_WICK_ERROR((void)(stmt), kind, text);                     \
    EXPECT_EQ(snapshot({__VA_ARGS__}), before_) << "inputs changed"; \
  } while (0)

// Small distinct values 1..n as dtype on device.
Tensor iota(Shape shape, Device device, DType dtype = DType::F32) {
  const int64_t n = shape.numel();
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = double(i + 1);
  return Tensor::from_vector(v, shape).to(dtype).to(device);
}

Tensor f64(std::vector<double> v, Shape shape, Device device) { return Tensor::from_vector(v, shape).to(device); }

std::vector<double> values(const Tensor& t) { return t.to(DType::F64).to_vector<double>(); }

class BadInput : public test::DeviceTest {};

// ---------------------------------------------------------------------- shapes

TEST_P(BadInput, ElementwiseAndCompareShapes) {
  const Tensor a = iota({2, 3}, dev()), b = iota({4}, dev()), c = iota({3, 2}, dev());
  EXPECT_REJECTED(add(a, b), ShapeMismatch, "add", a, b);
  EXPECT_REJECTED(mul(a, c), ShapeMismatch, "[2, 3]", a, c);
  EXPECT_REJECTED(sub(a, b), ShapeMismatch, "sub", a, b);
  EXPECT_REJECTED(div(a, c), ShapeMismatch, "div", a, c);
  EXPECT_REJECTED(maximum(a, b), ShapeMismatch, "maximum", a, b);
  EXPECT_REJECTED(pow(a, b), ShapeMismatch, "pow", a, b);
  EXPECT_REJECTED(lt(a, b), ShapeMismatch, "lt", a, b);
  EXPECT_REJECTED(eq(a, c), ShapeMismatch, "eq", a, c);
  const Tensor cond = gt(a, a);
  EXPECT_REJECTED(where(cond, a, b), ShapeMismatch, "where", cond, a, b);
  EXPECT_REJECTED(where(gt(b, b), a, a), ShapeMismatch, "where", a, b);
}

TEST_P(BadInput, ElementwiseDTypes) {
  const Tensor i = iota({2, 3}, dev(), DType::I64), f = iota({2, 3}, dev());
  EXPECT_REJECTED(exp(i), DTypeMismatch, "exp", i);
  EXPECT_REJECTED(sqrt(i), DTypeMismatch, "sqrt", i);
  EXPECT_REJECTED(where(f, f, f), DTypeMismatch, "where: cond", f);
}

TEST_P(BadInput, ReduceDims) {
  const Tensor x = iota({2, 3}, dev());
  EXPECT_REJECTED(sum(x, {2}), IndexOutOfRange, "sum", x);
  EXPECT_REJECTED(sum(x, {-3}), IndexOutOfRange, "sum", x);
  EXPECT_REJECTED(mean(x, {0, 0}), InvalidArgument, "mean", x);
  EXPECT_REJECTED(argmax(x, 5), IndexOutOfRange, "argmax", x);
  const Tensor xi = iota({2, 3}, dev(), DType::I64);
  EXPECT_REJECTED(mean(xi), DTypeMismatch, "mean", xi);
  const Tensor empty = zeros({0, 3}, DType::F32, dev());
  EXPECT_REJECTED(max(empty), InvalidArgument, "max", empty);
  EXPECT_REJECTED(min(empty, {0}), InvalidArgument, "min", empty);
  EXPECT_REJECTED(argmax(empty), InvalidArgument, "argmax", empty);
}

TEST_P(BadInput, IndexBoundsAndDTypes) {
  const Tensor src = iota({3, 4}, dev());
  const Tensor neg = Tensor::from_vector<int64_t>({0, -1}).to(dev());
  const Tensor big = Tensor::from_vector<int64_t>({2, 3}).to(dev());
  const Tensor fidx = Tensor::from_vector<float>({0, 1}).to(dev());
  // On CUDA a bad index is found on the GPU and raised at the next synchronization, so
  // each call is followed by reading its result back.
  auto sync = [](const Tensor& t) { return t.to_vector<float>(); };
  EXPECT_REJECTED(sync(index_select(src, 0, big)), IndexOutOfRange, "index_select", src, big);
  EXPECT_REJECTED(sync(index_select(src, 1, neg)), IndexOutOfRange, "index_select", src, neg);
  EXPECT_REJECTED(index_select(src, 2, big), IndexOutOfRange, "index_select", src, big);
  EXPECT_REJECTED(index_select(src, 0, fidx), DTypeMismatch, "index_select", src, fidx);
  const Tensor gidx = Tensor::from_vector<int64_t>({0, 4, 1, 2}, Shape{1, 4}).to(dev());
  EXPECT_REJECTED(sync(gather(src, 0, gidx)), IndexOutOfRange, "gather", src, gidx);
  const Tensor ids = Tensor::from_vector<int64_t>({1, 3}).to(dev());
  // CUDA reports embedding's bad id under the kernel it runs (index_select).
  EXPECT_REJECTED(sync(embedding(ids, src)), IndexOutOfRange, dev().is_cpu() ? "embedding" : "index 3", ids, src);
  const Tensor dst = zeros({3, 4}, DType::F32, dev());
  const Tensor add_src = ones({2, 4}, DType::F32, dev());
  EXPECT_REJECTED(sync(index_add(dst, 0, big, add_src)), IndexOutOfRange, "index_add", dst, big, add_src);
  const Tensor upd = ones({1, 4}, DType::F32, dev());
  EXPECT_REJECTED(sync(scatter(dst, 0, gidx, upd)), IndexOutOfRange, "scatter", dst, gidx, upd);
}

TEST_P(BadInput, MatmulShapesAndDTypes) {
  const Tensor a = iota({2, 3}, dev()), b = iota({4, 2}, dev());
  EXPECT_REJECTED(matmul(a, b), ShapeMismatch, "matmul", a, b);
  EXPECT_REJECTED(matmul(a, iota({2}, dev())), ShapeMismatch, "matmul", a);
  const Tensor s = full({}, Scalar(2.0), DType::F32, dev());
  EXPECT_REJECTED(matmul(s, a), ShapeMismatch, "matmul", s, a);
  const Tensor ba = iota({2, 2, 3}, dev()), bb = iota({3, 3, 2}, dev());
  EXPECT_REJECTED(matmul(ba, bb), ShapeMismatch, "matmul", ba, bb);
  const Tensor w = iota({5, 4}, dev());
  EXPECT_REJECTED(linear(a, w), ShapeMismatch, "linear", a, w);
}

TEST_P(BadInput, ConvPoolUpsample) {
  const Tensor x = iota({1, 2, 5, 5}, dev()), w = iota({3, 4, 3, 3}, dev());
  EXPECT_REJECTED(conv2d(x, w), ShapeMismatch, "conv2d", x, w);
  const Tensor w_ok = iota({3, 2, 3, 3}, dev());
  const Tensor w64 = w_ok.to(DType::F64);
  EXPECT_REJECTED(conv2d(x, w64), DTypeMismatch, "conv2d", x, w64);
  const Tensor bias = iota({4}, dev());
  EXPECT_REJECTED(conv2d(x, w_ok, bias), ShapeMismatch, "bias", x, w_ok, bias);
  const Tensor big_w = iota({3, 2, 7, 7}, dev());
  EXPECT_REJECTED(conv2d(x, big_w), ShapeMismatch, "conv2d", x, big_w);
  const Tensor x3 = iota({2, 5, 5}, dev());
  EXPECT_REJECTED(conv1d(x3, w_ok), ShapeMismatch, "conv1d", x3, w_ok);
  EXPECT_REJECTED(max_pool2d(x3, {}), ShapeMismatch, "max_pool2d", x3);
  Pool2dOptions big;
  big.kernel = {6, 6};
  EXPECT_REJECTED(avg_pool2d(x, big), ShapeMismatch, "avg_pool2d", x);
  EXPECT_REJECTED(upsample_nearest2d(x3, 4, 4), ShapeMismatch, "upsample_nearest2d", x3);
  EXPECT_REJECTED(upsample_bilinear2d(x, 0, 4, false), InvalidArgument, "upsample_bilinear2d", x);
}

TEST_P(BadInput, SoftmaxNormsAttentionRope) {
  const Tensor x = iota({2, 4}, dev());
  const Tensor wrong = iota({3}, dev());
  EXPECT_REJECTED(layer_norm(x, wrong, wrong), ShapeMismatch, "layer_norm", x, wrong);
  EXPECT_REJECTED(rms_norm(x, wrong), ShapeMismatch, "rms_norm", x, wrong);
  const Tensor w64 = iota({4}, dev()).to(DType::F64);
  EXPECT_REJECTED(rms_norm(x, w64), DTypeMismatch, "rms_norm", x, w64);
  const Tensor xi = iota({2, 4}, dev(), DType::I64);
  EXPECT_REJECTED(softmax(xi), DTypeMismatch, "softmax", xi);

  const Tensor q = iota({1, 2, 3, 4}, dev()), k = iota({1, 2, 5, 4}, dev()), v_bad = iota({1, 2, 4, 4}, dev());
  EXPECT_REJECTED(scaled_dot_product_attention(q, k, v_bad), ShapeMismatch, "scaled_dot_product_attention", q, k,
                  v_bad);
  const Tensor k_bad = iota({1, 2, 5, 3}, dev());
  EXPECT_REJECTED(scaled_dot_product_attention(q, k_bad, k), ShapeMismatch, "scaled_dot_product_attention", q, k_bad);
  const Tensor q3 = iota({2, 3, 4}, dev());
  EXPECT_REJECTED(scaled_dot_product_attention(q3, q3, q3), ShapeMismatch, "scaled_dot_product_attention", q3);

  const Tensor cs = iota({3, 2}, dev()), cs_bad = iota({4, 2}, dev());
  EXPECT_REJECTED(rope(q, cs_bad, cs_bad, false), ShapeMismatch, "rope", q, cs_bad);
  EXPECT_REJECTED(rope(q3, cs, cs, true), ShapeMismatch, "rope", q3, cs);
  const Tensor odd = iota({1, 2, 3, 5}, dev());
  EXPECT_REJECTED(rope(odd, cs, cs, false), ShapeMismatch, "head_dim must be even", odd);
}

TEST_P(BadInput, CatStack) {
  const Tensor a = iota({2, 3}, dev()), b = iota({2, 4}, dev()), c = iota({2, 3, 1}, dev());
  EXPECT_REJECTED(cat({a, b}, 0), ShapeMismatch, "cat", a, b);
  EXPECT_REJECTED(cat({a, c}, 0), ShapeMismatch, "cat", a, c);
  EXPECT_REJECTED(cat({a, a}, 2), IndexOutOfRange, "cat", a);
  EXPECT_REJECTED(cat({}, 0), InvalidArgument, "cat: expected at least one tensor");
  EXPECT_REJECTED(stack({a, b}, 0), ShapeMismatch, "stack", a, b);
  EXPECT_REJECTED(stack({a, a}, 3), IndexOutOfRange, "stack", a);
}

TEST_P(BadInput, ViewsAndReshapeOutOfBounds) {
  const Tensor x = iota({2, 3}, dev());
  EXPECT_REJECTED(x.reshape({4, 2}), ShapeMismatch, "reshape", x);
  EXPECT_REJECTED(x.reshape({-1, 4}), ShapeMismatch, "reshape", x);
  EXPECT_REJECTED(x.reshape({-1, -1}), InvalidArgument, "only one dimension can be -1", x);
  EXPECT_REJECTED(x.view({7}), ShapeMismatch, "view", x);
  EXPECT_REJECTED(x.narrow(1, 2, 2), IndexOutOfRange, "narrow", x);
  EXPECT_REJECTED(x.narrow(2, 0, 1), IndexOutOfRange, "narrow", x);
  EXPECT_REJECTED(x.select(0, 2), IndexOutOfRange, "select: index 2", x);
  EXPECT_REJECTED(x.select(1, -4), IndexOutOfRange, "select: index -4", x);
  EXPECT_REJECTED(x.slice(3, 0, 1), IndexOutOfRange, "slice", x);
  EXPECT_REJECTED(x.slice(0, 0, 1, 0), InvalidArgument, "slice: step must be positive", x);
  EXPECT_REJECTED(x.transpose(0, 2), IndexOutOfRange, "", x);
  EXPECT_REJECTED(x.permute({0, 0}), InvalidArgument, "permute", x);
  EXPECT_REJECTED(x.broadcast_as(Shape{3, 3}), ShapeMismatch, "broadcast_as", x);
  EXPECT_REJECTED(x.squeeze(4), IndexOutOfRange, "squeeze", x);
  // Slicing past the end clamps, as in PyTorch (x[:, 2:10] has one column).
  EXPECT_EQ(x.slice(1, 2, 10).shape(), Shape({2, 1}));
  EXPECT_EQ(x.slice(1, 5, 10).shape(), Shape({2, 0}));
}

TEST_P(BadInput, CopyAndFillMismatches) {
  Tensor dst = zeros({2, 3}, DType::F32, dev());
  const Tensor src = iota({3, 2}, dev());
  EXPECT_REJECTED(dst.copy_(src), ShapeMismatch, "cannot broadcast shape [3, 2] to [2, 3]", dst, src);
  EXPECT_REJECTED(Tensor().to(dev()), InvalidArgument, "undefined");
  EXPECT_REJECTED(add(Tensor(), src), InvalidArgument, "undefined", src);
}

// Device mismatches need a second device: they run on the cuda:0 instance (skipped
// without a GPU) and pair each op's cuda tensors with cpu ones.
TEST_P(BadInput, DeviceMismatch) {
  if (!dev().is_cuda()) GTEST_SKIP() << "device mismatch needs cuda:0";
  const Device cpu = Device::cpu();
  const Tensor g = iota({2, 3}, dev()), c = iota({2, 3}, cpu);
  const Tensor g4 = iota({1, 2, 4, 4}, dev()), w = iota({3, 2, 3, 3}, cpu);
  const Tensor idx = Tensor::from_vector<int64_t>({0, 1});
  EXPECT_REJECTED(add(g, c), DeviceMismatch, "add", g, c);
  EXPECT_REJECTED(lt(c, g), DeviceMismatch, "lt", g, c);
  EXPECT_REJECTED(where(gt(g, g), c, g), DeviceMismatch, "where", g, c);
  EXPECT_REJECTED(index_select(g, 0, idx), DeviceMismatch, "index_select", g, idx);
  EXPECT_REJECTED(matmul(g, c.t()), DeviceMismatch, "matmul", g, c);
  EXPECT_REJECTED(conv2d(g4, w), DeviceMismatch, "conv2d", g4, w);
  const Tensor lw = iota({3}, cpu);
  EXPECT_REJECTED(layer_norm(g, lw, lw), DeviceMismatch, "layer_norm", g, lw);
  const Tensor q = iota({1, 1, 2, 4}, dev()), kc = iota({1, 1, 2, 4}, cpu);
  EXPECT_REJECTED(scaled_dot_product_attention(q, kc, q), DeviceMismatch, "scaled_dot_product_attention", q, kc);
  const Tensor cs = iota({2, 2}, cpu);
  EXPECT_REJECTED(rope(q, cs, cs, false), DeviceMismatch, "rope", q, cs);
  EXPECT_REJECTED(cat({g, c}, 0), DeviceMismatch, "cat", g, c);
  EXPECT_REJECTED(stack({c, g}, 0), DeviceMismatch, "stack", g, c);
  // copy_ needs both tensors on one device (move src with to(device) first).
  Tensor dst = zeros({2, 3}, DType::F32, dev());
  EXPECT_REJECTED(dst.copy_(c), DeviceMismatch, "copy_", dst, c);
  // to(device) round trips.
  EXPECT_EQ(values(g.to(cpu).to(dev())), values(g));
  EXPECT_EQ(values(zeros({0, 3}, DType::F32, dev()).to(cpu)), std::vector<double>{});
}

// ---------------------------------------------------------------------- read-only

TEST(BadInputFiles, MutatingAFileBackedTensorIsReadOnly) {
  const fs::path p = fs::temp_directory_path() / ("wick_test_bad_input_" + std::to_string(::getpid()) + ".safetensors");
  safetensors::save(p, {{"w", Tensor::from_vector<float>({1, 2, 3, 4}, Shape{2, 2})}});
  {
    const safetensors::File f = safetensors::File::open(p);
    Tensor w = f.tensor("w");
    ASSERT_TRUE(w.read_only());
    const Tensor src = zeros({2, 2});
    EXPECT_REJECTED(w.copy_(src), ReadOnly, "read-only", w, src);
    EXPECT_REJECTED(w.fill_(Scalar(7.0)), ReadOnly, "read-only", w);
    EXPECT_REJECTED(w.narrow(0, 1, 1).zero_(), ReadOnly, "clone() it first", w);
    Tensor wt = w.t();
    EXPECT_REJECTED(wt.copy_(src), ReadOnly, "memory mapping of", w);
    const Tensor idx = Tensor::from_vector<int64_t>({0});
    // Out-of-place ops read the mapping and write fresh outputs.
    EXPECT_EQ(values(add(w, w)), (std::vector<double>{2, 4, 6, 8}));
    EXPECT_EQ(values(w), (std::vector<double>{1, 2, 3, 4}));
  }
  fs::remove(p);
}

// An allocation no machine can satisfy is an OutOfMemory error, not a crash. (Under
// AddressSanitizer this needs allocator_may_return_null=1, which scripts/sanitize.sh sets.)
TEST(BadInputMemory, HugeCpuAllocationRaisesOutOfMemory) {
  const int64_t one_pb = int64_t(1) << 50;
  EXPECT_WICK_ERROR((void)Tensor::empty(Shape{one_pb}, DType::U8), OutOfMemory,
                    "cannot allocate " + std::to_string(one_pb) + " bytes on cpu");
  EXPECT_WICK_ERROR((void)zeros(Shape{one_pb / 4}, DType::F32), OutOfMemory, "cannot allocate");
  // Byte counts that overflow are rejected before allocating.
  EXPECT_WICK_ERROR((void)Tensor::empty(Shape{INT64_MAX / 4}, DType::F64), InvalidArgument, "allocate");
  EXPECT_EQ(add(ones({2}), ones({2})).to_vector<float>(), (std::vector<float>{2, 2}));
}

// ---------------------------------------------------------------------- NaN / Inf

TEST_P(BadInput, NaNAndInfPropagateAsInPyTorch) {
  const Tensor a = f64({1.0, kNaN, kInf, -kInf, 2.0}, {5}, dev());
  const Tensor b = f64({1.0, 1.0, -kInf, -kInf, 0.0}, {5}, dev());
  EXPECT_CLOSE(values(add(a, b)), (std::vector<double>{2.0, kNaN, kNaN, -kInf, 2.0}), 0, 0);
  EXPECT_CLOSE(values(mul(a, b)), (std::vector<double>{1.0, kNaN, -kInf, kInf, 0.0}), 0, 0);
  EXPECT_CLOSE(values(mul(f64({kInf}, {1}, dev()), f64({0.0}, {1}, dev()))), std::vector<double>{kNaN}, 0, 0);
  EXPECT_CLOSE(values(maximum(a, b)), (std::vector<double>{1.0, kNaN, kInf, -kInf, 2.0}), 0, 0);
  EXPECT_CLOSE(values(minimum(a, b)), (std::vector<double>{1.0, kNaN, -kInf, -kInf, 0.0}), 0, 0);
  // Reductions: NaN wins sum and max; +inf + -inf is NaN.
  EXPECT_TRUE(std::isnan(sum(a).item<double>()));
  EXPECT_TRUE(std::isnan(max(a).item<double>()));
  EXPECT_TRUE(std::isnan(min(a).item<double>()));
  EXPECT_TRUE(std::isnan(sum(f64({kInf, -kInf}, {2}, dev())).item<double>()));
  EXPECT_EQ(sum(f64({kInf, 1.0}, {2}, dev())).item<double>(), kInf);
  const Tensor m = f64({1.0, kNaN, 3.0, 4.0, 5.0, 6.0}, {2, 3}, dev());
  EXPECT_CLOSE(values(max(m, {1})), (std::vector<double>{kNaN, 6.0}), 0, 0);
  EXPECT_CLOSE(values(sum(m, {0})), (std::vector<double>{5.0, kNaN, 9.0}), 0, 0);
  EXPECT_EQ(argmax(m, 1).to_vector<int64_t>(), (std::vector<int64_t>{1, 2}));  // NaN is the max
  for (DType dt : {DType::F32, DType::F64}) {
    SCOPED_TRACE(dtype_name(dt));
    // softmax: an all -inf row is NaN (0/0), a partly -inf row puts 0 there, NaN poisons its row.
    const Tensor s = f64({-kInf, -kInf, -kInf, 0.0, -kInf, 0.0, 1.0, kNaN, 2.0}, {3, 3}, dev()).to(dt);
    EXPECT_CLOSE(values(softmax(s)), (std::vector<double>{kNaN, kNaN, kNaN, 0.5, 0.0, 0.5, kNaN, kNaN, kNaN}), 1e-6, 0);
    // matmul: NaN * 0 is NaN, so a NaN in row 0 of a poisons all of row 0 of a @ I.
    const Tensor ma = f64({1.0, kNaN, 3.0, 4.0}, {2, 2}, dev()).to(dt);
    EXPECT_CLOSE(values(matmul(ma, eye(2, dt, dev()))), (std::vector<double>{kNaN, kNaN, 3.0, 4.0}), 0, 0);
    EXPECT_CLOSE(values(matmul(eye(2, dt, dev()), ma)), (std::vector<double>{1.0, kNaN, 3.0, kNaN}), 0, 0);
    EXPECT_CLOSE(values(relu(f64({kNaN, -kInf, kInf}, {3}, dev()).to(dt))), (std::vector<double>{kNaN, 0.0, kInf}), 0,
                 0);
  }
}

// ---------------------------------------------------------------------- zero-size

TEST_P(BadInput, ZeroSizeThroughEveryFamily) {
  const Tensor e03 = zeros({0, 3}, DType::F32, dev());
  // elementwise / compare / where (with broadcasting against a size-1 dim)
  EXPECT_EQ(add(e03, iota({1, 3}, dev())).shape(), Shape({0, 3}));
  EXPECT_EQ(exp(e03).shape(), Shape({0, 3}));
  EXPECT_EQ(lt(e03, e03).shape(), Shape({0, 3}));
  EXPECT_EQ(where(gt(e03, e03), e03, e03).shape(), Shape({0, 3}));
  EXPECT_EQ((e03 * Scalar(2.0)).shape(), Shape({0, 3}));
  // reductions: sum over the empty dim is zeros, prod ones, mean NaN; over the other dim empty.
  EXPECT_EQ(values(sum(e03, {0})), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(sum(e03, {0}).shape(), Shape({3}));
  EXPECT_EQ(values(prod(e03, {0})), (std::vector<double>{1, 1, 1}));
  EXPECT_CLOSE(values(mean(e03, {0})), (std::vector<double>{kNaN, kNaN, kNaN}), 0, 0);
  EXPECT_EQ(sum(e03, {1}).shape(), Shape({0}));
  EXPECT_EQ(max(e03, {1}).shape(), Shape({0}));
  EXPECT_EQ(sum(e03).item<float>(), 0.0f);
  EXPECT_EQ(sum(e03, {0}, true).shape(), Shape({1, 3}));
  // index
  const Tensor src = iota({3, 4}, dev());
  const Tensor no_idx = Tensor::from_vector<int64_t>({}, Shape{0}).to(dev());
  EXPECT_EQ(index_select(src, 0, no_idx).shape(), Shape({0, 4}));
  EXPECT_EQ(index_select(src, 1, no_idx).shape(), Shape({3, 0}));
  EXPECT_EQ(index_select(e03, 1, Tensor::from_vector<int64_t>({2, 0}).to(dev())).shape(), Shape({0, 2}));
  EXPECT_EQ(embedding(no_idx, src).shape(), Shape({0, 4}));
  // matmul: an empty inner dim gives zeros; empty outer dims give empty results.
  const Tensor mm = matmul(zeros({2, 0}, DType::F32, dev()), zeros({0, 3}, DType::F32, dev()));
  EXPECT_EQ(mm.shape(), Shape({2, 3}));
  EXPECT_EQ(values(mm), std::vector<double>(6, 0.0));
  EXPECT_EQ(matmul(e03, iota({3, 2}, dev())).shape(), Shape({0, 2}));
  EXPECT_EQ(matmul(iota({2, 3}, dev()), zeros({3, 0}, DType::F32, dev())).shape(), Shape({2, 0}));
  EXPECT_EQ(matmul(zeros({0, 2, 3}, DType::F32, dev()), iota({3, 4}, dev())).shape(), Shape({0, 2, 4}));
  // conv / pool / upsample with an empty batch
  const Tensor x0 = zeros({0, 2, 5, 5}, DType::F32, dev());
  EXPECT_EQ(conv2d(x0, iota({3, 2, 3, 3}, dev())).shape(), Shape({0, 3, 3, 3}));
  EXPECT_EQ(conv1d(zeros({0, 2, 5}, DType::F32, dev()), iota({3, 2, 3}, dev())).shape(), Shape({0, 3, 3}));
  EXPECT_EQ(max_pool2d(x0, {}).shape(), Shape({0, 2, 2, 2}));
  EXPECT_EQ(avg_pool2d(x0, {}).shape(), Shape({0, 2, 2, 2}));
  EXPECT_EQ(upsample_nearest2d(x0, 10, 10).shape(), Shape({0, 2, 10, 10}));
  EXPECT_EQ(upsample_bilinear2d(x0, 7, 3, true).shape(), Shape({0, 2, 7, 3}));
  // softmax / norms
  EXPECT_EQ(softmax(zeros({0, 5}, DType::F32, dev())).shape(), Shape({0, 5}));
  EXPECT_EQ(softmax(zeros({3, 0}, DType::F32, dev())).shape(), Shape({3, 0}));
  EXPECT_EQ(log_softmax(zeros({0, 5}, DType::F32, dev())).shape(), Shape({0, 5}));
  const Tensor w5 = ones({5}, DType::F32, dev());
  EXPECT_EQ(layer_norm(zeros({0, 5}, DType::F32, dev()), w5, w5).shape(), Shape({0, 5}));
  EXPECT_EQ(rms_norm(zeros({0, 5}, DType::F32, dev()), w5).shape(), Shape({0, 5}));
  // attention with no queries; rope with no positions
  const Tensor q0 = zeros({1, 2, 0, 4}, DType::F32, dev()), kv = iota({1, 2, 5, 4}, dev());
  EXPECT_EQ(scaled_dot_product_attention(q0, kv, kv).shape(), Shape({1, 2, 0, 4}));
  const Tensor cs0 = zeros({0, 2}, DType::F32, dev());
  EXPECT_EQ(rope(q0, cs0, cs0, false).shape(), Shape({1, 2, 0, 4}));
  // cat / stack
  const Tensor two = iota({2, 3}, dev());
  EXPECT_EQ(values(cat({e03, two, e03}, 0)), values(two));
  EXPECT_EQ(stack({e03, e03}, 0).shape(), Shape({2, 0, 3}));
  EXPECT_EQ(cat({zeros({2, 0}, DType::F32, dev()), two}, 1).shape(), Shape({2, 3}));
  // views / reshape / casts / device transfer
  EXPECT_EQ(e03.reshape({3, 0}).shape(), Shape({3, 0}));
  EXPECT_EQ(e03.reshape({-1}).shape(), Shape({0}));
  EXPECT_EQ(e03.t().contiguous().shape(), Shape({3, 0}));
  EXPECT_EQ(two.narrow(0, 2, 0).shape(), Shape({0, 3}));
  EXPECT_EQ(e03.to(DType::BF16).to(DType::I64).shape(), Shape({0, 3}));
  EXPECT_EQ(e03.to(Device::cpu()).shape(), Shape({0, 3}));
  EXPECT_EQ(e03.clone().shape(), Shape({0, 3}));
  Tensor filled = zeros({0, 3}, DType::F32, dev());
  filled.fill_(Scalar(1.0));
  filled.copy_(e03);
  EXPECT_EQ(filled.numel(), 0);
}

WICK_INSTANTIATE_DEVICE_TEST(BadInput);

}  // namespace
}  // namespace wick
