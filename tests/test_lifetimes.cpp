// Lifetimes of memory-mapped tensors (docs/reliability.md, "Memory-mapped files").
// Tensors from safetensors::File view the file's read-only MAP_PRIVATE mapping; the
// mapping lives as long as any tensor (or Buffer) viewing it. These tests assert only
// what wick guarantees:
//   - tensors outlive the File (and load()'s temporaries) that produced them;
//   - a file replaced by rename (how wick's save and most tools write checkpoints) or
//     unlinked after opening leaves the open mapping intact, with the old values;
//   - File::open validates the size at open time (a truncated file is a Format error).
// NOT tested, because wick cannot detect it after mapping: truncating the file in place
// makes reads of the lost pages raise SIGBUS; rewriting it in place may or may not be
// visible through the mapping (undefined: do not modify a checkpoint while it is loaded).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/golden.h"
#include "wick/io.h"
#include "wick/ops.h"

namespace fs = std::filesystem;

namespace wick {
namespace {

class Lifetimes : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("wick_test_lifetimes_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path path(const std::string& name) const { return dir_ / name; }

  // Writes {"w": 0..n-1 (f32, shape 4 x n/4), "b": f64 values} and returns the w values.
  static std::vector<float> write_checkpoint(const fs::path& p, float base) {
    std::vector<float> w(64);
    for (size_t i = 0; i < w.size(); ++i) w[i] = base + float(i);
    safetensors::save(
        p, {{"w", Tensor::from_vector(w, Shape{4, 16})}, {"b", Tensor::from_vector<double>({base, -base, 0.5})}});
    return w;
  }

  fs::path dir_;
};

TEST_F(Lifetimes, TensorsOutliveTheFileThatOpenedThem) {
  const fs::path p = path("model.safetensors");
  const std::vector<float> w_values = write_checkpoint(p, 1.0f);
  Tensor w, w_t, row;
  {
    const safetensors::File f = safetensors::File::open(p);
    w = f.tensor("w");
    w_t = w.t();               // a view of the mapping
    row = w.select(0, 2);      // an offset view
  }                            // the File is gone; the mapping must not be
  EXPECT_TRUE(w.read_only());  // still the file's bytes, not a copy
  EXPECT_EQ(w.to_vector<float>(), w_values);
  EXPECT_EQ(row.to_vector<float>(), std::vector<float>(w_values.begin() + 32, w_values.begin() + 48));
  EXPECT_EQ(w_t.contiguous().to_vector<float>()[1], w_values[16]);
  EXPECT_EQ(sum(w).item<float>(), 64.0f * 1.0f + 63.0f * 64.0f / 2.0f);
}

TEST_F(Lifetimes, LoadedMapEntriesOutliveTheMapAndEachOther) {
  const fs::path p = path("model.safetensors");
  const std::vector<float> w_values = write_checkpoint(p, 3.0f);
  Tensor b;
  {
    auto all = safetensors::load(p);
    b = all.at("b");
  }
  EXPECT_EQ(b.to_vector<double>(), (std::vector<double>{3.0, -3.0, 0.5}));
}

TEST_F(Lifetimes, FileReplacedByRenameKeepsTheOpenMappingIntact) {
  const fs::path p = path("model.safetensors");
  const std::vector<float> old_w = write_checkpoint(p, 1.0f);
  const safetensors::File old_file = safetensors::File::open(p);
  const Tensor w = old_file.tensor("w");

  // The usual way tools write checkpoints: a new file, renamed over the old name.
  const fs::path tmp = path("model.safetensors.tmp");
  const std::vector<float> new_w = write_checkpoint(tmp, 100.0f);
  fs::rename(tmp, p);
  EXPECT_EQ(w.to_vector<float>(), old_w);
  EXPECT_EQ(old_file.tensor("b").to_vector<double>(), (std::vector<double>{1.0, -1.0, 0.5}));
  // Opening the name again sees the new file.
  EXPECT_EQ(safetensors::File::open(p).tensor("w").to_vector<float>(), new_w);

  // wick's own save() replaces by rename too, so re-saving over a loaded checkpoint is safe.
  const std::vector<float> newest_w = write_checkpoint(p, 200.0f);
  EXPECT_EQ(w.to_vector<float>(), old_w);
  EXPECT_EQ(safetensors::File::open(p).tensor("w").to_vector<float>(), newest_w);
  // save() left no temporary file behind.
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST_F(Lifetimes, UnlinkedFileStaysReadableThroughTheMapping) {
  const fs::path p = path("model.safetensors");
  const std::vector<float> w_values = write_checkpoint(p, 7.0f);
  const Tensor w = safetensors::File::open(p).tensor("w");
  fs::remove(p);
  EXPECT_FALSE(fs::exists(p));
  EXPECT_EQ(w.to_vector<float>(), w_values);
  EXPECT_EQ(w.clone().to_vector<float>(), w_values);
}

TEST_F(Lifetimes, OpenChecksTheSizeOfATruncatedFile) {
  const fs::path p = path("model.safetensors");
  write_checkpoint(p, 1.0f);
  const auto full = fs::file_size(p);
  // Cut into the data section: the header still parses but its offsets run past the end.
  fs::resize_file(p, full - 10);
  EXPECT_WICK_ERROR(safetensors::File::open(p), Format, "model.safetensors");
  // Cut into the header.
  fs::resize_file(p, 20);
  EXPECT_WICK_ERROR(safetensors::File::open(p), Format, "model.safetensors");
  // Shorter than the 8-byte length prefix, and empty.
  fs::resize_file(p, 5);
  EXPECT_WICK_ERROR(safetensors::File::open(p), Format, "shorter than the 8-byte header length");
  fs::resize_file(p, 0);
  EXPECT_WICK_ERROR(safetensors::File::open(p), Format, "0 bytes");
  // Missing file and a directory: Io errors naming the path, not crashes.
  EXPECT_WICK_ERROR(safetensors::File::open(path("missing.safetensors")), Io, "missing.safetensors");
  EXPECT_WICK_ERROR(safetensors::File::open(dir_), Io, "not a regular file");
}

TEST_F(Lifetimes, MappedTensorsAreReadOnly) {
  const fs::path p = path("model.safetensors");
  const std::vector<float> w_values = write_checkpoint(p, 1.0f);
  Tensor w = safetensors::File::open(p).tensor("w");
  EXPECT_WICK_ERROR(w.fill_(Scalar(0.0)), ReadOnly, "read-only");
  EXPECT_WICK_ERROR(w.copy_(zeros(Shape{4, 16})), ReadOnly, "read-only");
  EXPECT_EQ(w.to_vector<float>(), w_values);
  // clone() is the documented way to get a writable copy.
  Tensor c = w.clone();
  c.fill_(Scalar(2.0));
  EXPECT_EQ(c.to_vector<float>(), std::vector<float>(64, 2.0f));
  EXPECT_EQ(w.to_vector<float>(), w_values);
}

}  // namespace
}  // namespace wick
