// Buffer: shared allocations, byte slices whose offsets compose, typed views with
// checked sizes, typed CPU access checks, read-only memory and file mappings.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "support/golden.h"
#include "wick/storage.h"

namespace wick {
namespace {

namespace fs = std::filesystem;

Buffer iota_bytes(size_t n) {
  Buffer b = Buffer::allocate(Device::cpu(), DType::U8, Shape{int64_t(n)});
  auto s = b.cpu_mutable_span<uint8_t>();
  std::iota(s.begin(), s.end(), uint8_t(0));
  return b;
}

TEST(Buffer, AllocateDescribesItself) {
  const Buffer b = Buffer::allocate(Device::cpu(), DType::F32, Shape{2, 3});
  EXPECT_TRUE(b.defined());
  EXPECT_EQ(b.nbytes(), 24u);
  EXPECT_EQ(b.numel(), 6);
  EXPECT_EQ(b.dtype(), DType::F32);
  EXPECT_EQ(b.shape(), (Shape{2, 3}));
  EXPECT_FALSE(b.read_only());
  EXPECT_TRUE(b.device().is_cpu());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u);
  EXPECT_FALSE(Buffer().defined());
  EXPECT_EQ(Buffer::allocate(Device::cpu(), DType::F64, Shape{0}).nbytes(), 0u);
  EXPECT_WICK_ERROR(Buffer::allocate(Device::cpu(), DType::F64, Shape{int64_t(1) << 61}), InvalidArgument, "overflows");
}

TEST(Buffer, NestedSlicesComposeOffsets) {
  const Buffer b = iota_bytes(64);
  const Buffer s1 = b.slice(8, 40);
  const Buffer s2 = s1.slice(4, 16);
  const Buffer s3 = s2.slice(2, 3);
  EXPECT_EQ(s3.byte_offset(), 8u + 4 + 2);
  EXPECT_EQ(s3.nbytes(), 3u);
  EXPECT_EQ(s3.allocation(), b.allocation());  // one shared allocation
  EXPECT_EQ(s3.cpu_span<uint8_t>()[0], 14);
  EXPECT_EQ(static_cast<const uint8_t*>(s3.data()), static_cast<const uint8_t*>(b.data()) + 14);
  EXPECT_EQ(s1.slice(40, 0).nbytes(), 0u);  // an empty slice at the end is fine
}

TEST(Buffer, OutOfRangeSlicesAndOverflowRaise) {
  const Buffer s = iota_bytes(64).slice(8, 40);
  EXPECT_WICK_ERROR(s.slice(30, 11), IndexOutOfRange, "slice: byte range [30, 41) out of bounds for a buffer of 40");
  EXPECT_WICK_ERROR(s.slice(41, 0), IndexOutOfRange, "out of bounds");
  EXPECT_WICK_ERROR(s.slice(SIZE_MAX, 2), InvalidArgument, "overflows");
  EXPECT_WICK_ERROR(s.slice(2, SIZE_MAX), InvalidArgument, "overflows");
  EXPECT_WICK_ERROR(Buffer().slice(0, 0), InvalidArgument, "undefined buffer");
}

TEST(Buffer, TypedViews) {
  const Buffer b = iota_bytes(32);
  const Buffer v = b.view(8, DType::U32, Shape{2, 2});
  EXPECT_EQ(v.dtype(), DType::U32);
  EXPECT_EQ(v.shape(), (Shape{2, 2}));
  EXPECT_EQ(v.byte_offset(), 8u);
  uint32_t expected;
  const uint8_t bytes[4] = {8, 9, 10, 11};
  std::memcpy(&expected, bytes, 4);
  EXPECT_EQ(v.cpu_span<uint32_t>()[0], expected);
  EXPECT_WICK_ERROR(b.view(DType::F32, Shape{7}), ShapeMismatch,
                    "view: f32 [7] needs 28 bytes but the buffer holds 32");
  EXPECT_WICK_ERROR(b.view(24, DType::F64, Shape{2}), IndexOutOfRange, "out of bounds");
  EXPECT_WICK_ERROR(b.view(DType::F64, Shape{int64_t(1) << 61}), InvalidArgument, "overflows");
}

TEST(Buffer, ReshapeChecksTheCount) {
  const Buffer b = Buffer::allocate(Device::cpu(), DType::F32, Shape{6});
  EXPECT_EQ(b.reshape(Shape{2, 3}).shape(), (Shape{2, 3}));
  EXPECT_EQ(b.reshape(Shape{2, 3}).dtype(), DType::F32);
  EXPECT_WICK_ERROR(b.reshape(Shape{4}), ShapeMismatch, "reshape: cannot view [6] (6 elements) as [4] (4 elements)");
}

TEST(Buffer, TypedAccessChecks) {
  const Buffer b = iota_bytes(16);
  EXPECT_WICK_ERROR(b.cpu_span<float>(), DTypeMismatch, "cpu_span: buffer holds u8, requested f32");
  const Buffer f = b.view(DType::F32, Shape{4});
  EXPECT_EQ(f.cpu_span<float>().size(), 4u);
  EXPECT_WICK_ERROR(f.cpu_span<double>(), DTypeMismatch, "holds f32, requested f64");
  const Buffer misaligned = b.view(1, DType::U8, Shape{8}).view(DType::F32, Shape{2});
  EXPECT_WICK_ERROR(misaligned.cpu_span<float>(), InvalidArgument, "not aligned to 4 bytes for f32");
  EXPECT_WICK_ERROR(Buffer().cpu_span<uint8_t>(), InvalidArgument, "undefined buffer");
  // Empty buffers have a (possibly null) pointer and an empty span.
  EXPECT_EQ(Buffer::allocate(Device::cpu(), DType::F32, Shape{0}).cpu_span<float>().size(), 0u);
}

TEST(Buffer, ReadOnlyMemoryRefusesMutation) {
  std::vector<float> host = {1, 2, 3};
  const Buffer ro = Buffer::wrap_host(host.data(), 12, /*read_only=*/true).view(DType::F32, Shape{3});
  EXPECT_TRUE(ro.read_only());
  EXPECT_EQ(ro.cpu_span<float>()[2], 3.0f);  // reading is fine, without a copy
  EXPECT_EQ(ro.data(), host.data());
  EXPECT_WICK_ERROR(ro.cpu_mutable_span<float>(), ReadOnly, "borrowed read-only host memory");
  EXPECT_WICK_ERROR(ro.mutable_data(), ReadOnly, "refusing to modify read-only memory");
  EXPECT_WICK_ERROR(ro.slice(4, 4).mutable_data(), ReadOnly, "read-only");  // views inherit it
  const Buffer rw = Buffer::wrap_host(host.data(), 12, false).view(DType::F32, Shape{3});
  rw.cpu_mutable_span<float>()[0] = 7;
  EXPECT_EQ(host[0], 7.0f);
  EXPECT_WICK_ERROR(Buffer::wrap_host(nullptr, 4, true), InvalidArgument, "null pointer for 4 bytes");
}

TEST(Buffer, WrapHostOwnerKeepsMemoryAlive) {
  auto owned = std::make_shared<std::vector<int64_t>>(std::vector<int64_t>{5, 6});
  std::weak_ptr<std::vector<int64_t>> watch = owned;
  Buffer b = Buffer::wrap_host(owned->data(), 16, true, owned).view(DType::I64, Shape{2});
  owned.reset();
  EXPECT_FALSE(watch.expired());
  EXPECT_EQ(b.cpu_span<int64_t>()[1], 6);
  b = Buffer();
  EXPECT_TRUE(watch.expired());
}

fs::path write_file(const std::string& name, const std::string& bytes) {
  const fs::path p = fs::temp_directory_path() / ("wick_test_buffer_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  return p;
}

TEST(Buffer, MapFileIsReadOnlyAndOutlivesItsCreator) {
  const fs::path p = write_file("map.bin", "hello, mapping");
  Buffer view;
  {
    const Buffer whole = Buffer::map_file(p);
    EXPECT_EQ(whole.nbytes(), 14u);
    EXPECT_EQ(whole.dtype(), DType::U8);
    EXPECT_EQ(whole.shape(), Shape{14});
    EXPECT_TRUE(whole.read_only());
    EXPECT_NE(whole.allocation()->origin().find(p.string()), std::string::npos);
    view = whole.slice(7, 7);
  }  // the Buffer that created the mapping is gone; the slice keeps it alive
  fs::remove(p);
  EXPECT_EQ(view.allocation().use_count(), 1);
  EXPECT_EQ(std::string(static_cast<const char*>(view.data()), 7), "mapping");
  EXPECT_WICK_ERROR(view.mutable_data(), ReadOnly, "memory mapping of");
}

TEST(Buffer, MapFileErrors) {
  EXPECT_WICK_ERROR(Buffer::map_file("/nonexistent/wick/file.bin"), Io, "cannot open '/nonexistent/wick/file.bin'");
  EXPECT_WICK_ERROR(Buffer::map_file(fs::temp_directory_path()), Io, "is not a regular file");
  const fs::path empty = write_file("empty.bin", "");
  const Buffer e = Buffer::map_file(empty);
  EXPECT_EQ(e.nbytes(), 0u);
  EXPECT_EQ(e.cpu_span<uint8_t>().size(), 0u);
  fs::remove(empty);
}

}  // namespace
}  // namespace wick
