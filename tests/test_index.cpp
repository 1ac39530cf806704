// Indexing ops against PyTorch goldens (tests/data/gen_red.py) and hand-derived values.
#include "support/devices.h"
#include "support/golden.h"
#include "support/raw_golden.h"

namespace wick {
namespace {

using test::red_golden;

class Index : public test::DeviceTest {
 protected:
  Tensor g(const std::string& name) const { return red_golden().get(name).to(dev()); }
};

const DType kAll[] = {DType::U8, DType::U32, DType::I64, DType::BF16, DType::F16, DType::F32, DType::F64};
const DType kIndexTypes[] = {DType::U8, DType::U32, DType::I64};

// Values exact in every dtype (small non-negative integers), so results compare exactly.
Tensor small_ints(Shape shape, DType dt, Device dev) {
  return arange(Scalar(int64_t(0)), Scalar(shape.numel()), Scalar(int64_t(1)), DType::I64)
      .reshape(shape)
      .to(dt)
      .to(dev);
}

TEST_P(Index, IndexSelectGoldenAllIndexDtypes) {
  const Tensor src = g("index.src");
  for (DType it : kIndexTypes) {
    const Tensor idx = g("index.idx").to(it);
    EXPECT_CLOSE(index_select(src, 0, idx), g("index.select.0"), 0, 0);
    EXPECT_CLOSE(index_select(src, 1, idx), g("index.select.1"), 0, 0);
    EXPECT_CLOSE(index_select(src, -1, idx), g("index.select.1"), 0, 0);
  }
}

TEST_P(Index, IndexSelectEveryDtypeAndViews) {
  const Tensor idx = Tensor::from_vector<int64_t>({2, 0, 2}).to(dev());
  for (DType dt : kAll) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor src = small_ints({3, 4}, dt, dev());
    EXPECT_EQ(index_select(src, 0, idx).to_vector<int64_t>(),
              (std::vector<int64_t>{8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11}));
    // Transposed source: selecting dim 0 of src.t() picks columns of src.
    EXPECT_EQ(index_select(src.t(), 0, idx).to_vector<int64_t>(), (std::vector<int64_t>{2, 6, 10, 0, 4, 8, 2, 6, 10}));
    // Offset (narrowed) source and strided indices.
    const Tensor idx_strided = Tensor::from_vector<int64_t>({1, 9, 0, 9}).to(dev()).slice(0, 0, 4, 2);
    EXPECT_EQ(index_select(src.narrow(1, 1, 2), 0, idx_strided).to_vector<int64_t>(),
              (std::vector<int64_t>{5, 6, 1, 2}));
    // Broadcast source (stride 0 rows).
    EXPECT_EQ(index_select(src.narrow(0, 1, 1).broadcast_as(Shape{5, 4}), 1, idx).to_vector<int64_t>()[0], 6);
  }
  // Empty index list and empty rows.
  const Tensor src = small_ints({3, 4}, DType::F32, dev());
  EXPECT_EQ(index_select(src, 0, zeros({0}, DType::I64, dev())).shape(), (Shape{0, 4}));
  EXPECT_EQ(index_select(zeros({3, 0}, DType::F32, dev()), 0, idx).shape(), (Shape{3, 0}));
}

TEST_P(Index, GatherGolden) {
  const Tensor src = g("index.src");
  for (DType it : kIndexTypes) {
    EXPECT_CLOSE(gather(src, 0, g("index.gidx0").to(it)), g("index.gather.0"), 0, 0);
    EXPECT_CLOSE(gather(src, 1, g("index.gidx1").to(it)), g("index.gather.1"), 0, 0);
  }
  // Transposed source and transposed index give the transposed result.
  EXPECT_CLOSE(gather(src.t(), 1, g("index.gidx0").t()), g("index.gather.0").t(), 0, 0);
  for (DType dt : kAll) {
    const Tensor s = small_ints({2, 3}, dt, dev());
    const Tensor i = Tensor::from_vector<int64_t>({2, 2, 0, 1}, Shape{2, 2}).to(dev());
    EXPECT_EQ(gather(s, 1, i).to_vector<int64_t>(), (std::vector<int64_t>{2, 2, 3, 4})) << dtype_name(dt);
  }
}

TEST_P(Index, GatherManyElementsPerThread) {
  // 1000 x 2200 gathered from 1000 x 3000 (2.2 M outputs: on cuda more than the capped
  // grid's threads, so every thread takes several grid-stride steps). The values are their
  // own flat positions, so each output must equal row * 3000 + index exactly.
  const int64_t rows = 1000, cols = 3000, k = 2200;
  std::vector<float> pos(size_t(rows * cols));
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = float(i);
  std::vector<int64_t> idx(size_t(rows * k));
  uint64_t st = 42;
  for (auto& v : idx) {
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    v = int64_t((st >> 33) % uint64_t(cols));
  }
  const Tensor src = Tensor::from_vector(pos, Shape{rows, cols}).to(dev());
  const std::vector<float> got = gather(src, 1, Tensor::from_vector(idx, Shape{rows, k}).to(dev())).to_vector<float>();
  ASSERT_EQ(got.size(), idx.size());
  int64_t wrong = 0;
  for (size_t i = 0; i < got.size(); ++i) wrong += got[i] != float(int64_t(i) / k * cols + idx[i]);
  EXPECT_EQ(wrong, 0);
}

TEST_P(Index, GatherAlongDimZeroInRunsOfFour) {
  // src holds its own flat positions, so out[i][j] = src[idx[i][j]][j] = idx * 8 + j (exact
  // in every float dtype here); runs of four along j step through src's columns.
  std::vector<float> pos(6 * 8);
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = float(i);
  std::vector<int64_t> idx(3 * 8);
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = int64_t((i * 5 + 1) % 6);
  const Tensor index = Tensor::from_vector(idx, Shape{3, 8}).to(dev());
  for (DType dt : {DType::F32, DType::BF16, DType::F64}) {
    const Tensor src = Tensor::from_vector(pos, Shape{6, 8}).to(dt).to(dev());
    const auto got = gather(src, 0, index).to_vector<double>();
    ASSERT_EQ(got.size(), idx.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(got[i], double(idx[i] * 8 + int64_t(i % 8))) << dtype_name(dt) << " element " << i;
  }
}

TEST_P(Index, ScatterAndScatterAddGolden) {
  const Tensor src = g("index.src"), upd = g("index.upd");
  const auto before = src.to_vector<double>();
  EXPECT_CLOSE(scatter(src, 0, g("index.sidx0"), upd), g("index.scatter.0"), 0, 0);
  EXPECT_CLOSE(scatter_add(src, 0, g("index.gidx0"), upd), g("index.scatter_add.0"), 1e-12, 1e-12);
  EXPECT_EQ(src.to_vector<double>(), before);  // functional: dst is not modified
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    SCOPED_TRACE(dtype_name(dt));
    EXPECT_CLOSE(scatter_add(src.to(dt), 0, g("index.gidx0").to(DType::U8), upd.to(dt)), g("index.scatter_add.0"),
                 test::default_rtol(dt) * 4, test::default_rtol(dt) * 8);
  }
  // Duplicates: scatter keeps the last write; scatter_add accumulates (integers too).
  const Tensor d = zeros({3}, DType::I64, dev());
  const Tensor i = Tensor::from_vector<int64_t>({1, 1, 2, 1}).to(dev());
  const Tensor v = Tensor::from_vector<int64_t>({5, 6, 7, 8}).to(dev());
  EXPECT_EQ(scatter(d, 0, i, v).to_vector<int64_t>(), (std::vector<int64_t>{0, 8, 7}));
  EXPECT_EQ(scatter_add(d, 0, i, v).to_vector<int64_t>(), (std::vector<int64_t>{0, 19, 7}));
  // u8 accumulation wraps.
  EXPECT_EQ(scatter_add(full({2}, Scalar(250), DType::U8, dev()), 0, i.narrow(0, 0, 2), v.narrow(0, 0, 2).to(DType::U8))
                .to_vector<int64_t>(),
            (std::vector<int64_t>{250, 5}));
}

TEST_P(Index, IndexAddGolden) {
  const Tensor src = g("index.src"), upd = g("index.upd");
  const Tensor idx = Tensor::from_vector<int64_t>({5, 1, 5}).to(dev());
  EXPECT_CLOSE(index_add(src, 0, idx, upd), g("index.index_add.0"), 1e-12, 1e-12);
  // Along dim 1 of a transposed view gives the transposed result.
  EXPECT_CLOSE(index_add(src.t(), 1, idx.to(DType::U32), upd.t()), g("index.index_add.0").t(), 1e-12, 1e-12);
  for (DType dt : kAll) {
    const Tensor d = small_ints({4, 2}, dt, dev());
    const Tensor s = ones({3, 2}, dt, dev());
    EXPECT_EQ(index_add(d, 0, Tensor::from_vector<int64_t>({3, 0, 3}).to(dev()), s).to_vector<int64_t>(),
              (std::vector<int64_t>{1, 2, 2, 3, 4, 5, 8, 9}))
        << dtype_name(dt);
  }
}

TEST_P(Index, IndexCopyWritesSlicesInPlace) {
  for (DType dt : kAll) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor d = zeros({4, 2}, dt, dev());
    index_copy_(d, 0, Tensor::from_vector<int64_t>({3, 0}).to(DType::U32).to(dev()), small_ints({2, 2}, dt, dev()));
    EXPECT_EQ(d.to_vector<int64_t>(), (std::vector<int64_t>{2, 3, 0, 0, 0, 0, 0, 1}));
  }
  // Along dim 1 of a strided (transposed) destination, from a transposed source.
  Tensor d = zeros({3, 2}, DType::F32, dev());
  index_copy_(d.t(), 1, Tensor::from_vector<int64_t>({2, 1}).to(dev()), small_ints({2, 2}, DType::F32, dev()).t());
  EXPECT_EQ(d.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 2, 3, 0, 1}));
}

// index_copy_ names itself, rejects repeated indices (its contract: distinct) naming the
// repeated value, and leaves dst unchanged. Several indices are checked on the host on
// every device, so the messages are the same on CUDA.
TEST_P(Index, IndexCopyBadIndicesNameTheOpAndChangeNothing) {
  Tensor dst = small_ints({5, 3}, DType::F32, dev());
  const auto before = dst.to_vector<double>();
  const Tensor rows = ones({3, 3}, DType::F32, dev());
  auto indices = [&](std::vector<int64_t> v) { return Tensor::from_vector(v).to(dev()); };
  EXPECT_WICK_ERROR(index_copy_(dst, 0, indices({4, 1, 4}), rows), InvalidArgument,
                    "index_copy_: index 4 appears more than once");
  EXPECT_WICK_ERROR(index_copy_(dst, 0, indices({2, 0, 2}).to(DType::U8), rows), InvalidArgument,
                    "index_copy_: index 2 appears more than once");
  EXPECT_WICK_ERROR(index_copy_(dst, 0, indices({0, 7, 1}), rows), IndexOutOfRange,
                    "index_copy_: index 7 out of range for dim 0 of size 5");
  EXPECT_WICK_ERROR(index_copy_(dst, 1, indices({0, -1}), ones({5, 2}, DType::F32, dev())), IndexOutOfRange,
                    "index_copy_: index -1 out of range for dim 1 of size 3");
  EXPECT_EQ(dst.to_vector<double>(), before);
  // One index on CUDA stays on the device (no wait, so a CUDA graph can capture it): the
  // kernel checks it and the error surfaces at the next synchronization.
  if (dev().is_cpu()) {
    EXPECT_WICK_ERROR(index_copy_(dst, 0, indices({5}), ones({1, 3}, DType::F32, dev())), IndexOutOfRange,
                      "index_copy_: index 5 out of range for dim 0 of size 5");
  } else {
    EXPECT_WICK_ERROR((index_copy_(dst, 0, indices({5}), ones({1, 3}, DType::F32, dev())), dst.to_vector<double>()),
                      IndexOutOfRange, "index 5 out of range");
  }
  EXPECT_EQ(dst.to_vector<double>(), before);
}

TEST_P(Index, Embedding) {
  const Tensor w = g("index.src");  // 6 embeddings of dim 5
  const Tensor ids = Tensor::from_vector<int64_t>({4, 0, 4, 2}, Shape{2, 2}).to(dev());
  const Tensor e = embedding(ids, w);
  EXPECT_EQ(e.shape(), (Shape{2, 2, 5}));
  EXPECT_CLOSE(e.reshape({4, 5}), g("index.select.0"), 0, 0);
  EXPECT_EQ(embedding(full({}, Scalar(3), DType::U32, dev()), w).shape(), Shape{5});
}

TEST_P(Index, OutOfRangeErrorsLeaveInputsUnchanged) {
  const Tensor src = small_ints({5, 3}, DType::F32, dev());
  const auto before = src.to_vector<double>();
  const Tensor bad = Tensor::from_vector<int64_t>({0, 7, 1}).to(dev());
  const Tensor neg = Tensor::from_vector<int64_t>({0, -1}).to(dev());
  // On CUDA the bounds check runs on the GPU and the error surfaces at the next
  // synchronization (here: reading the result back), naming the op, value and bound;
  // the CPU raises it from the call itself and also names the dim.
  const bool cpu = dev().is_cpu();
  auto run = [](const Tensor& t) { return t.to_vector<double>(); };
  auto msg = [&](const std::string& op, const std::string& value, const std::string& dim, const std::string& bound) {
    return cpu ? op + ": index " + value + " out of range for dim " + dim + " of size " + bound
               : "index " + value + " out of range for a dimension of size " + bound;
  };
  EXPECT_WICK_ERROR(run(index_select(src, 0, bad)), IndexOutOfRange, msg("index_select", "7", "0", "5"));
  EXPECT_WICK_ERROR(run(index_select(src, 0, neg)), IndexOutOfRange, msg("index_select", "-1", "0", "5"));
  EXPECT_WICK_ERROR(run(index_select(src, 1, bad.to(DType::U8))), IndexOutOfRange, msg("index_select", "7", "1", "3"));
  EXPECT_WICK_ERROR(run(gather(src, 0, bad.reshape({3, 1}))), IndexOutOfRange, msg("gather", "7", "0", "5"));
  // Rows of a multiple of four indices (cuda: four per thread, a bad one among them).
  const Tensor wide = small_ints({5, 8}, DType::F32, dev());
  const Tensor bad4 = Tensor::from_vector<int64_t>({0, 1, 2, 9, 3, 3, 3, 3}, Shape{2, 4}).to(dev());
  EXPECT_WICK_ERROR(run(gather(wide, 1, bad4)), IndexOutOfRange, msg("gather", "9", "1", "8"));
  const Tensor upd = ones({3, 1}, DType::F32, dev());
  EXPECT_WICK_ERROR(run(scatter(src, 0, bad.reshape({3, 1}), upd)), IndexOutOfRange, "scatter: index 7 out of range");
  EXPECT_WICK_ERROR(run(scatter_add(src, 0, bad.reshape({3, 1}), upd)), IndexOutOfRange, "scatter_add: index 7");
  EXPECT_WICK_ERROR(run(index_add(src, 0, bad, ones({3, 3}, DType::F32, dev()))), IndexOutOfRange,
                    msg("index_add", "7", "0", "5"));
  EXPECT_WICK_ERROR(run(embedding(bad, src)), IndexOutOfRange,
                    cpu ? "embedding: index 7 out of range for dim 0 of size 5" : "index 7 out of range");
  EXPECT_EQ(src.to_vector<double>(), before);
}

TEST_P(Index, BadArguments) {
  const Tensor src = zeros({5, 3}, DType::F32, dev());
  EXPECT_WICK_ERROR(index_select(src, 0, zeros({2}, DType::F32, dev())), DTypeMismatch,
                    "index_select: indices must be u8, u32 or i64, got f32");
  EXPECT_WICK_ERROR(index_select(src, 0, zeros({2, 2}, DType::I64, dev())), ShapeMismatch, "must be 1-D");
  EXPECT_WICK_ERROR(index_select(src, 2, zeros({2}, DType::I64, dev())), IndexOutOfRange, "dim 2 out of range");
  EXPECT_WICK_ERROR(gather(src, 0, zeros({2}, DType::I64, dev())), ShapeMismatch, "gather: index of shape [2]");
  EXPECT_WICK_ERROR(gather(src, 0, zeros({2, 4}, DType::I64, dev())), ShapeMismatch, "larger than src [5, 3] in dim 1");
  EXPECT_WICK_ERROR(scatter(src, 0, zeros({2, 3}, DType::I64, dev()), zeros({2, 3}, DType::F64, dev())), DTypeMismatch,
                    "scatter: dtypes differ: f32 and f64");
  EXPECT_WICK_ERROR(index_add(src, 0, zeros({2}, DType::I64, dev()), zeros({3, 3}, DType::F32, dev())), ShapeMismatch,
                    "index_add: src has shape [3, 3], expected [2, 3]");
  EXPECT_WICK_ERROR(embedding(zeros({2}, DType::I64, dev()), zeros({4}, DType::F32, dev())), ShapeMismatch,
                    "embedding: weight must be 2-D");
}

WICK_INSTANTIATE_DEVICE_TEST(Index);

}  // namespace
}  // namespace wick
