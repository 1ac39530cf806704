// What the AVX-512 tile kernels share (cpu_qdot_avx512.cpp for q8_0 / q4_0, cpu_qdot_k_avx512.cpp
// for the K-quants; one weight row per vector lane): the 16 x 16 transpose of their unpacking
// and their driver. No include guard and no namespace of its own: included inside an anonymous
// namespace, between the AVX-512 target pragmas, after <immintrin.h>, <vector>, <algorithm>
// and qdot_decoders_impl.h (with_rows).

// r[i] lane j <- r[j] lane i (int32 lanes): unpacks of dwords and qwords, then 128-bit lane
// shuffles.
void transpose16(__m512i r[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int h = 0; h < 16; h += 8)
    for (int i = 0; i < 4; ++i) {
      t[h + i] = _mm512_shuffle_i32x4(r[h + i], r[h + i + 4], 0x88);
      t[h + i + 4] = _mm512_shuffle_i32x4(r[h + i], r[h + i + 4], 0xDD);
    }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0xDD);
  }
}

int32_t dword_at(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// A band of 16 weight rows against M activation rows: for each step of `step` blocks (the
// last may be shorter), unpack(b, blocks) then pass.template operator()<R>(m, b, blocks, acc)
// for groups of R <= 8 activation rows from m, accumulating into acc (M x 16 floats, row m's
// 16 outputs together); then y[m * ys + j] = acc[m][j].
template <class Unpack, class Pass>
void run_tiles(int64_t M, int64_t nb, int64_t step, float* y, int64_t ys, Unpack&& unpack, Pass&& pass) {
  constexpr int kRows = 8;  // activation rows per pass over the band
  std::vector<float> acc(size_t(M * 16), 0.0f);
  for (int64_t b = 0; b < nb; b += step) {
    const int blocks = int(std::min<int64_t>(step, nb - b));
    unpack(b, blocks);
    for (int64_t m = 0; m < M; m += kRows)
      with_rows<kRows>(int(std::min<int64_t>(kRows, M - m)),
                       [&]<int R>() { pass.template operator()<R>(m, b, blocks, acc.data()); });
  }
  for (int64_t m = 0; m < M; ++m)
    for (int j = 0; j < 16; ++j) y[m * ys + j] = acc[size_t(m * 16 + j)];
}
