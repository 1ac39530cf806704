// The K-quant x q8_K decoders and row accumulation (cpu_qdot_k.h states the arithmetic),
// compiled twice: by cpu_qdot_k.cpp for AVX2 (k_rows over 256-bit vectors) and by
// cpu_qdot_k_avx512.cpp under its AVX-512 target pragma (its 512-bit WideRows). Both sum the
// same integers into the same lanes, so they give the same floats. No include
// guard and no namespace of its own: included inside an anonymous namespace of
// wick::cpu::qdot after io/quant/blocks.h, <immintrin.h>, backend/cpu/simd_avx2.h and
// qdot_decoders_impl.h (with_rows, load32, f16c_at, kAheadBytes).

// One super-block decoded: 8 chunks of 32 unsigned quants, each chunk's int16 scales (the
// scale of the pair of values of each int16 lane), the float factors and the integer
// offset's inputs.
struct SuperBlock {
  __m256i q[8], s[8];
  float d, fmin;
  __m128i mins16;  // q4_K / q5_K: the 8 sub-block mins as int16
  __m256i sc16;    // q6_K: the 16 scales as int16
};

// The 8 6-bit scales and 8 6-bit mins of a q4_K / q5_K block's 12 scale bytes, as bytes
// (ggml's utmp unpacking: bytes 0..7 scales, 8..15 mins).
inline void unpack_scales_k4(const uint8_t* scales, uint8_t out[16]) {
  constexpr uint32_t kmask1 = 0x3f3f3f3f, kmask2 = 0x0f0f0f0f, kmask3 = 0x03030303;
  uint32_t u[4];
  std::memcpy(u, scales, 12);
  u[3] = ((u[2] >> 4) & kmask2) | (((u[1] >> 6) & kmask3) << 4);
  const uint32_t aux = u[1] & kmask1;
  u[1] = (u[2] & kmask2) | (((u[0] >> 6) & kmask3) << 4);
  u[2] = aux;
  u[0] &= kmask1;
  std::memcpy(out, u, 16);
}

// q4_K and q5_K (kHigh: the fifth bit of each quant from qh): 64 values per 32 bytes of qs,
// the low nibbles sub-block 2k and the high ones 2k + 1.
template <bool kHigh>
struct DecK4 {
  static constexpr int kBytes = kHigh ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
  static constexpr bool kMins = true;
  static void decode(const uint8_t* p, SuperBlock& o) {
    using B = std::conditional_t<kHigh, BlockQ5_K, BlockQ4_K>;
    uint8_t sm[16];
    unpack_scales_k4(p + offsetof(B, scales), sm);
    o.d = f16c_at(p + offsetof(B, d));
    o.fmin = f16c_at(p + offsetof(B, dmin));
    o.mins16 = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sm + 8)));
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256i hb = _mm256_setzero_si256();
    if constexpr (kHigh) hb = load32(p + offsetof(BlockQ5_K, qh));
    for (int k = 0; k < 4; ++k) {
      const __m256i v = load32(p + offsetof(B, qs) + 32 * k);
      o.q[2 * k] = _mm256_and_si256(v, m4);
      o.q[2 * k + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
      if constexpr (kHigh) {
        // Bit j of qh[i] is the fifth bit of value i of sub-block j; the word shift carries
        // the neighbour byte's bits into bits the 0x01 mask drops.
        const __m256i one = _mm256_set1_epi8(1);
        for (int h = 0; h < 2; ++h) {
          const __m256i bit = _mm256_and_si256(_mm256_srli_epi16(hb, 2 * k + h), one);
          o.q[2 * k + h] = _mm256_or_si256(o.q[2 * k + h], _mm256_slli_epi16(bit, 4));
        }
      }
    }
    // Sub-block j's scale to every int16 lane: one byte shuffle of the 8 scales (as int16, in
    // both 128-bit halves) each, not a scalar broadcast.
    const __m256i sc8 =
        _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sm))));
    for (int j = 0; j < 8; ++j)
      o.s[j] = _mm256_shuffle_epi8(sc8, _mm256_set1_epi16(short(((2 * j + 1) << 8) | (2 * j))));
  }
  // Per group k of 16 values, as int16: its scale (sc_{k/2}) and its offset factor (m_{k/2};
  // O = sum_k mk[k] * bsums[k]). For the tile kernel's unpacking.
  static void group_vectors(const uint8_t* p, __m256i& scale, __m256i& mk) {
    using B = std::conditional_t<kHigh, BlockQ5_K, BlockQ4_K>;
    alignas(16) uint8_t sm[16];
    unpack_scales_k4(p + offsetof(B, scales), sm);
    const __m128i v = _mm_load_si128(reinterpret_cast<const __m128i*>(sm));
    scale = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(v, v));  // sc0 sc0 sc1 sc1 ...
    mk = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(v, v));
  }
  // The offset's 4 int32 lanes: lane i = sum over j in {2i, 2i + 1} of m_j * (the sum of the
  // x quants of sub-block j), from the 16 sums of 16.
  static __m128i offset4(const SuperBlock& o, const int16_t* bsums) {
    const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bsums));
    const __m128i pairs = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
    return _mm_madd_epi16(o.mins16, pairs);
  }
};

// q6_K: quarter t of half h (values 128h + 32t ..) from ql's nibbles and qh's bit pairs,
// stored unsigned (0..63, the 32 it is shifted by goes to the offset); a chunk's two
// halves of 16 have their own int8 scales.
struct DecQ6K {
  static constexpr int kBytes = sizeof(BlockQ6_K);
  static constexpr bool kMins = false;
  static void decode(const uint8_t* p, SuperBlock& o) {
    o.d = o.fmin = f16c_at(p + offsetof(BlockQ6_K, d));
    const auto* sc = reinterpret_cast<const int8_t*>(p + offsetof(BlockQ6_K, scales));
    o.sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc)));
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int h = 0; h < 2; ++h) {
      const __m256i l0 = load32(p + offsetof(BlockQ6_K, ql) + 64 * h);
      const __m256i l1 = load32(p + offsetof(BlockQ6_K, ql) + 64 * h + 32);
      const __m256i qh = load32(p + offsetof(BlockQ6_K, qh) + 32 * h);
      // The two high bits of quarter t sit at bits 2t of qh; move them to bits 4..5.
      o.q[4 * h] =
          _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(0x03)), 4));
      o.q[4 * h + 1] =
          _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_slli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(0x0C)), 2));
      o.q[4 * h + 2] =
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(qh, _mm256_set1_epi8(0x30)));
      o.q[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                       _mm256_srli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(char(0xC0))), 2));
      for (int t = 0; t < 4; ++t) {
        const int8_t* s = sc + 8 * h + 2 * t;  // low 128 bits: values 0..15 of the chunk
        o.s[4 * h + t] = _mm256_set_m128i(_mm_set1_epi16(s[1]), _mm_set1_epi16(s[0]));
      }
    }
  }
  // Per group k of 16 values, as int16: its scale sc_k and its offset factor 32 * sc_k.
  static void group_vectors(const uint8_t* p, __m256i& scale, __m256i& mk) {
    scale = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + offsetof(BlockQ6_K, scales))));
    mk = _mm256_slli_epi16(scale, 5);
  }
  // The offset's 4 int32 lanes: lane i = 32 * sum over k in {2i, 2i + 1, 2i + 8, 2i + 9} of
  // sc_k * (the sum of the x quants of group k of 16).
  static __m128i offset4(const SuperBlock& o, const int16_t* bsums) {
    const __m256i p = _mm256_madd_epi16(o.sc16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bsums)));
    return _mm_slli_epi32(_mm_add_epi32(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1)), 5);
  }
};

// q2_K and q3_K: chunk c = 4h + j holds values 128h + 32j .. + 31, the 2 low bits of each from
// bits 2j of qs[32h ..]; q3_K's third bit is bit c of hmask[l] (set: no -4, so the stored
// 3-bit value is unsigned and the 4 goes to the offset). Scales per 16 values: q2_K's low
// nibble of scales[k] (its high nibble the min), q3_K's 6-bit packed scale minus 32 (signed).
inline void unpack_scales_q3(const uint8_t* packed, int8_t out[16]) {
  constexpr uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
  uint32_t aux[4];
  std::memcpy(aux, packed, 12);
  const uint32_t tmp = aux[2];
  aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
  aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
  aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
  aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
  std::memcpy(out, aux, 16);
  for (int k = 0; k < 16; ++k) out[k] = int8_t(out[k] - 32);
}

template <bool kQ3>
struct DecLow2 {
  using B = std::conditional_t<kQ3, BlockQ3_K, BlockQ2_K>;
  static constexpr int kBytes = sizeof(B);
  // The 16 per-group scales and offset factors (q2_K: m_k; q3_K: 4 * sc_k), as int16.
  static void group_vectors(const uint8_t* p, __m256i& scale, __m256i& mk) {
    if constexpr (kQ3) {
      int8_t sc[16];
      unpack_scales_q3(p + offsetof(BlockQ3_K, scales), sc);
      scale = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc)));
      mk = _mm256_slli_epi16(scale, 2);
    } else {
      const __m256i v =
          _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + offsetof(BlockQ2_K, scales))));
      scale = _mm256_and_si256(v, _mm256_set1_epi16(0x0F));
      mk = _mm256_srli_epi16(v, 4);
    }
  }
  static void decode(const uint8_t* p, SuperBlock& o) {
    o.d = f16c_at(p + offsetof(B, d));
    if constexpr (kQ3)
      o.fmin = o.d;
    else
      o.fmin = f16c_at(p + offsetof(BlockQ2_K, dmin));
    __m256i scale, mk;
    group_vectors(p, scale, mk);
    alignas(32) int16_t s16[16];
    _mm256_store_si256(reinterpret_cast<__m256i*>(s16), scale);
    o.sc16 = mk;  // the offset factors (offset4 below)
    const __m256i three = _mm256_set1_epi8(3);
    __m256i hm = _mm256_setzero_si256();
    if constexpr (kQ3) hm = load32(p + offsetof(BlockQ3_K, hmask));
    for (int h = 0; h < 2; ++h) {
      const __m256i qs = load32(p + offsetof(B, qs) + 32 * h);
      for (int j = 0; j < 4; ++j) {
        const int c = 4 * h + j;
        __m256i q = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * j), three);
        if constexpr (kQ3)
          q = _mm256_or_si256(q, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hm, c), _mm256_set1_epi8(1)), 2));
        o.q[c] = q;
        o.s[c] = _mm256_set_m128i(_mm_set1_epi16(s16[2 * c + 1]), _mm_set1_epi16(s16[2 * c]));
      }
    }
  }
  // The offset's 4 int32 lanes from the 16 factors (o.sc16) and the 16 sums of 16.
  static __m128i offset4(const SuperBlock& o, const int16_t* bsums) {
    const __m256i p = _mm256_madd_epi16(o.sc16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bsums)));
    return _mm_add_epi32(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
  }
};

// One activation row's super-block added to its sum (cpu_qdot_k.h): the integer sum of the
// lanes times d_w * d_x, then the offset times f_min * d_x subtracted, each one rounding.
// Both horizontal sums share their steps: [S, O, S, O] after two hadds, converted at once.
template <class Dec>
inline void add_super_block(const SuperBlock& o, __m256i lanes, float dx, const int16_t* bsums, float& acc) {
  const __m128i l4 = _mm_add_epi32(_mm256_castsi256_si128(lanes), _mm256_extracti128_si256(lanes, 1));
  const __m128i so = _mm_hadd_epi32(_mm_hadd_epi32(l4, Dec::offset4(o, bsums)), _mm_setzero_si128());
  const __m128 f = _mm_cvtepi32_ps(so);
  acc = std::fma(_mm_cvtss_f32(f), o.d * dx, acc);
  acc = std::fma(-_mm_cvtss_f32(_mm_movehdup_ps(f)), o.fmin * dx, acc);
}

// R activation rows against one weight row, each super-block decoded once; Mac::mac(acc,
// pairs, scales) adds the scaled int16 pair sums to the int32 lanes.
template <int R, class Dec, class Mac>
void k_rows(const uint8_t* w, const ActQ8K& a, int64_t m0, float* y, int64_t ys) {
  const int64_t nb = a.blocks;
  float acc[R] = {};
  SuperBlock o;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* p = w + b * Dec::kBytes;
    for (int off = 0; off < Dec::kBytes; off += 64)
      _mm_prefetch(reinterpret_cast<const char*>(p + kAheadBytes + off), _MM_HINT_T0);
    Dec::decode(p, o);
    for (int r = 0; r < R; ++r) {
      const int64_t i = (m0 + r) * nb + b;
      const int8_t* x = a.qs.data() + i * kQK_K;
      __m256i lanes = _mm256_setzero_si256();
      for (int c = 0; c < 8; ++c) lanes = Mac::mac(lanes, _mm256_maddubs_epi16(o.q[c], load32(x + 32 * c)), o.s[c]);
      add_super_block<Dec>(o, lanes, a.d[size_t(i)], a.bsums.data() + i * 16, acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) y[r * ys] = acc[r];
}

// Kernel<N, Dec>::run(w, a, m0, y, ys) for the weight type and row count.
template <int MaxRows, template <int, class> class Kernel>
void k_dispatch(GgmlType type, const uint8_t* w, const ActQ8K& a, int64_t m0, int R, float* y, int64_t ys) {
  with_rows<MaxRows>(R, [&]<int N>() {
    if (type == GgmlType::Q4_K)
      Kernel<N, DecK4<false>>::run(w, a, m0, y, ys);
    else if (type == GgmlType::Q5_K)
      Kernel<N, DecK4<true>>::run(w, a, m0, y, ys);
    else if (type == GgmlType::Q6_K)
      Kernel<N, DecQ6K>::run(w, a, m0, y, ys);
    else if (type == GgmlType::Q2_K)
      Kernel<N, DecLow2<false>>::run(w, a, m0, y, ys);
    else
      Kernel<N, DecLow2<true>>::run(w, a, m0, y, ys);
  });
}
