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

// Decoders: decode(block, f) calls f(j, quants, scales16, wf, wm) for each 32-value
// sub-block j of one packed block; kSub sub-blocks per block of kBytes.
struct DecQ8_0 {
  static constexpr int kSub = 1, kBytes = sizeof(BlockQ8_0);
  static constexpr bool kUnsigned = false, kMin = false;
  template <class F>
  static void decode(const uint8_t* p, F&& f) {
    f(0, load32(p + offsetof(BlockQ8_0, qs)), _mm256_set1_epi16(1), f16c_at(p), 0.0f);
  }
};

struct DecQ4_0 {
  static constexpr int kSub = 1, kBytes = sizeof(BlockQ4_0);
  static constexpr bool kUnsigned = false, kMin = false;
  template <class F>
  static void decode(const uint8_t* p, F&& f) {
    const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + offsetof(BlockQ4_0, qs)));
    const __m256i v = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(t, 4), t), _mm256_set1_epi8(0x0F));
    f(0, _mm256_sub_epi8(v, _mm256_set1_epi8(8)), _mm256_set1_epi16(1), f16c_at(p), 0.0f);
  }
};

struct DecQ4_K {
  static constexpr int kSub = 8, kBytes = sizeof(BlockQ4_K);
  static constexpr bool kUnsigned = true, kMin = true;
  template <class F>
  static void decode(const uint8_t* p, F&& f) {
    const float d = f16c_at(p + offsetof(BlockQ4_K, d)), dmin = f16c_at(p + offsetof(BlockQ4_K, dmin));
    const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi16(1);
    for (int c = 0; c < 4; ++c) {
      const __m256i q = load32(p + offsetof(BlockQ4_K, qs) + 32 * c);
      uint8_t sc0, m0, sc1, m1;
      scale_min_k4(2 * c, p + offsetof(BlockQ4_K, scales), sc0, m0);
      scale_min_k4(2 * c + 1, p + offsetof(BlockQ4_K, scales), sc1, m1);
      f(2 * c, _mm256_and_si256(q, m4), one, d * float(sc0), dmin * float(m0));
      f(2 * c + 1, _mm256_and_si256(_mm256_srli_epi16(q, 4), m4), one, d * float(sc1), dmin * float(m1));
    }
  }
};

struct DecQ6_K {
  static constexpr int kSub = 8, kBytes = sizeof(BlockQ6_K);
  static constexpr bool kUnsigned = false, kMin = false;
  template <class F>
  static void decode(const uint8_t* p, F&& f) {
    const float d = f16c_at(p + offsetof(BlockQ6_K, d));
    const auto* sc = reinterpret_cast<const int8_t*>(p + offsetof(BlockQ6_K, scales));
    const __m256i m4 = _mm256_set1_epi8(0x0F), off = _mm256_set1_epi8(32);
    for (int h = 0; h < 2; ++h) {
      const __m256i l0 = load32(p + offsetof(BlockQ6_K, ql) + 64 * h);
      const __m256i l1 = load32(p + offsetof(BlockQ6_K, ql) + 64 * h + 32);
      const __m256i qh = load32(p + offsetof(BlockQ6_K, qh) + 32 * h);
      // The two high bits of quarter t sit at bits 2t of qh; move them to bits 4..5.
      const __m256i v[4] = {
          _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(0x03)), 4)),
          _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_slli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(0x0C)), 2)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(qh, _mm256_set1_epi8(0x30))),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                          _mm256_srli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(char(0xC0))), 2))};
      for (int t = 0; t < 4; ++t) {
        const int8_t* s = sc + 8 * h + 2 * t;  // low 128 bits: values 0..15 of the block
        f(4 * h + t, _mm256_sub_epi8(v[t], off), _mm256_set_m128i(_mm_set1_epi16(s[1]), _mm_set1_epi16(s[0])), d, 0.0f);
      }
    }
  }
};
