// The safetensors dtype table shared by the reader and the writer: each dtype name the
// format defines, its size in bits (sub-byte float formats exist) and the wick dtype it
// maps to, if wick computes on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "wick/dtype.h"

namespace wick::safetensors::detail {

struct DTypeEntry {
  std::string_view name;
  size_t bits;
  std::optional<DType> wick;
};

// Every dtype of the reference implementation (huggingface/safetensors, tensor.rs).
inline constexpr DTypeEntry kDTypes[] = {
    {"BOOL", 8, std::nullopt},
    {"U8", 8, DType::U8},
    {"I8", 8, std::nullopt},
    {"U16", 16, std::nullopt},
    {"I16", 16, std::nullopt},
    {"F16", 16, DType::F16},
    {"BF16", 16, DType::BF16},
    {"U32", 32, DType::U32},
    {"I32", 32, std::nullopt},
    {"F32", 32, DType::F32},
    {"U64", 64, std::nullopt},
    {"I64", 64, DType::I64},
    {"F64", 64, DType::F64},
    {"F8_E4M3", 8, std::nullopt},
    {"F8_E5M2", 8, std::nullopt},
    {"F8_E8M0", 8, std::nullopt},
    {"F4", 4, std::nullopt},
    {"F6_E2M3", 6, std::nullopt},
    {"F6_E3M2", 6, std::nullopt},
    {"C64", 64, std::nullopt},
    // Added by the reference in 0.7/0.8 (after the list in wick's brief).
    {"F8_E4M3FNUZ", 8, std::nullopt},
    {"F8_E5M2FNUZ", 8, std::nullopt},
};

inline const DTypeEntry* find_dtype(std::string_view name) {
  for (const DTypeEntry& e : kDTypes)
    if (e.name == name) return &e;
  return nullptr;
}

// The safetensors name of a wick dtype (the writer's direction).
inline std::string_view dtype_name(DType dt) {
  for (const DTypeEntry& e : kDTypes)
    if (e.wick == dt) return e.name;
  return {};
}

// The largest header the reference implementation accepts.
inline constexpr uint64_t kMaxHeaderSize = 100'000'000;

}  // namespace wick::safetensors::detail
