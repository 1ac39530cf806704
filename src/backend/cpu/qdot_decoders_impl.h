// The AVX2 decoders of packed weight blocks for the q8-activation dot kernels: each turns a
// block into 32-byte registers of quants with their scales. No include guard and no
// namespace of its own: included inside an anonymous namespace (of wick::cpu::qdot, after
// io/quant/blocks.h, <immintrin.h> and <utility>) by cpu_qdot_avx2.cpp and, under its AVX-512 target
// pragma, by cpu_qdot_avx512.cpp, so each file has its own copy compiled for its own ISA.
//
// The block prefetch distance of both kernel files: a decode step is bound by the weight
// stream, which the hardware prefetchers alone did not keep ahead of these loops, so each
// block is prefetched this far ahead (into the rows that follow; prefetches never fault).
// Cold 16384 x 2048 matrices, 2 threads, 2026-12-04: q4_0 6.6 -> 17.1 GB/s, q8_0 15 -> 29
// GB/s (512 bytes: 11.4 / 24.8, 4096: about the same as 2048).
constexpr int64_t kAheadBytes = 2048;

// f.template operator()<R>() for the kernels' row count R, 1 <= R <= Max (the callers
// check it): one instantiation per count.
template <class F, int... I>
void with_rows_of(int R, F& f, std::integer_sequence<int, I...>) {
  (void)((R == I + 1 ? (f.template operator()<I + 1>(), true) : false) || ...);
}
template <int Max, class F>
void with_rows(int R, F&& f) {
  with_rows_of(R, f, std::make_integer_sequence<int, Max>());
}

float f16c_at(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return _cvtsh_ss(bits);  // exact, the same value as f16_value
}

__m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Decoders of the q8_0-activation kernels: decode(block, wf) returns the block's 32 quants
// (signed) and sets wf to its scale.
struct DecQ8_0 {
  static constexpr int kBytes = sizeof(BlockQ8_0);
  static __m256i decode(const uint8_t* p, float& wf) {
    wf = f16c_at(p);
    return load32(p + offsetof(BlockQ8_0, qs));
  }
};

struct DecQ4_0 {
  static constexpr int kBytes = sizeof(BlockQ4_0);
  static __m256i decode(const uint8_t* p, float& wf) {
    wf = f16c_at(p);
    const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + offsetof(BlockQ4_0, qs)));
    const __m256i v = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(t, 4), t), _mm256_set1_epi8(0x0F));
    return _mm256_sub_epi8(v, _mm256_set1_epi8(8));
  }
};

// MXFP4: Q4_0's nibble layout, each code looked up (one byte shuffle) as its doubled e2m1
// value in [-12, 12], the scale the halved e8m0 (blocks.h).
struct DecMXFP4 {
  static constexpr int kBytes = sizeof(BlockMXFP4);
  static __m256i codes(const uint8_t* p) {
    const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + offsetof(BlockMXFP4, qs)));
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(t, 4), t), _mm256_set1_epi8(0x0F));
  }
  static __m256i decode(const uint8_t* p, float& wf) {
    wf = e8m0_half(p[offsetof(BlockMXFP4, e)]);
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12));
    return _mm256_shuffle_epi8(table, codes(p));
  }
};
