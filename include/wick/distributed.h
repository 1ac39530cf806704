// Communicator: collectives over several GPUs through NCCL, on wick tensors.
//
// Two ways to build one:
//   - one process driving N local GPUs: Communicator::init_local(devices) returns one
//     communicator per device; use each from its own thread (NCCL blocks a rank's host
//     thread in some calls, so one thread driving all ranks would deadlock).
//   - one process per GPU: rank 0 calls Communicator::unique_id(), hands the id to the
//     other processes (a file, a socket: NcclUniqueId::hex()/from_hex help), and every
//     process constructs Communicator(id, rank, world_size, device).
// Collectives are enqueued on the device's stream, after whatever wick already queued
// there, and return without waiting; reading a result back (to_vector, item) waits.
// Tensors must be contiguous CUDA tensors on the communicator's device, with the same
// shape and dtype on every rank. dtypes: u8, u32, i64, f16, bf16, f32, f64.
// NVLink multicast (NVLS) is kept off: the first NCCL call sets NCCL_NVLS_ENABLE=0.
// In a build without CUDA or NCCL the API exists and throws Unsupported.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "wick/device.h"
#include "wick/error.h"
#include "wick/tensor.h"

namespace wick {

enum class ReduceKind { Sum, Max };

// The opaque token that ties the ranks of one communicator together (ncclUniqueId).
struct NcclUniqueId {
  static constexpr size_t kBytes = 128;  // NCCL_UNIQUE_ID_BYTES
  std::array<char, kBytes> bytes{};

  // Lower-case hex text, 256 characters: easy to pass through a file or environment.
  std::string hex() const {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    out.reserve(2 * kBytes);
    for (char c : bytes) {
      const auto b = static_cast<unsigned char>(c);
      out += kDigits[b >> 4];
      out += kDigits[b & 15];
    }
    return out;
  }
  // Inverse of hex(); throws wick::Error(InvalidArgument) on malformed text.
  static NcclUniqueId from_hex(std::string_view text) {
    auto nibble = [&](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      fail(ErrorKind::InvalidArgument, "NcclUniqueId::from_hex: '", c, "' is not a hex digit");
    };
    WICK_CHECK(text.size() == 2 * kBytes, InvalidArgument, "NcclUniqueId::from_hex: expected ", 2 * kBytes,
               " hex digits, got ", text.size());
    NcclUniqueId id;
    for (size_t i = 0; i < kBytes; ++i)
      id.bytes[i] = static_cast<char>(nibble(text[2 * i]) << 4 | nibble(text[2 * i + 1]));
    return id;
  }
};

class Communicator {
 public:
  // One communicator per device (distinct CUDA devices of this process), rank i on
  // devices[i]. Throws Device on NCCL failure, InvalidArgument on a bad device list.
  static std::vector<Communicator> init_local(std::vector<Device> devices);
  // A fresh id for a multi-process communicator (call once, on one process).
  static NcclUniqueId unique_id();
  // Joins the communicator `id` as `rank` of `world_size`; blocks until all ranks joined.
  Communicator(const NcclUniqueId& id, int rank, int world_size, Device device);

  Communicator(Communicator&&) noexcept;
  Communicator& operator=(Communicator&&) noexcept;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  // Waits for this rank's queued work, then frees the NCCL communicator.
  ~Communicator();

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  Device device() const { return device_; }

  // t <- reduction of t over all ranks, in place.
  void all_reduce(Tensor& t, ReduceKind kind);
  // The inputs of all ranks concatenated along dim 0 in rank order: shape
  // [world_size * in.dim(0), ...]. in must have rank >= 1.
  Tensor all_gather(const Tensor& in);
  // Reduces over ranks, then returns chunk `rank()` of dim 0: shape
  // [in.dim(0) / world_size, ...]; in.dim(0) must be divisible by world_size.
  Tensor reduce_scatter(const Tensor& in, ReduceKind kind);
  // t <- t of rank `root`, in place.
  void broadcast(Tensor& t, int root);

  struct Impl;

 private:
  Communicator(std::unique_ptr<Impl> impl, int rank, int world_size, Device device);

  std::unique_ptr<Impl> impl_;
  int rank_ = 0;
  int world_size_ = 0;
  Device device_{};
};

}  // namespace wick
