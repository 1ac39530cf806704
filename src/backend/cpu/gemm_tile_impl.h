// The register-tiled product of f32 rows against 16-bit weight rows contiguous over K (an
// (out, in) weight viewed transposed, as Llama's are), written once over an ISA's vectors
// and included by each kernel file that instantiates it: cpu_gemm_half.cpp with AVX2,
// cpu_gemm_half_avx512.cpp with AVX-512 (inside its target pragma). No include guard: the
// includer opens an anonymous namespace and defines, before including,
//   struct Isa { using vec = ...; static constexpr int kLanes, kRM, kRN;
//                static vec zero(); static vec load(const float*); static vec load(const f16*);
//                static vec load(const bf16*); static vec fma(vec a, vec b, vec c);
//                static float sum(vec); static void pin(vec&); };
// so that every function here has internal linkage and the ISA of its file.
//
// tile_k: dot products over K of RM rows of x with RN weight rows kept in Isa::kLanes-lane
// accumulators, summed across lanes at the end (llamafile's tinyBLAS form). Each weight
// vector is converted once per RM rows and never written out widened.
template <int RM, int RN, class T>
void tile_k(int64_t K, const float* x, int64_t ldx, const T* const* w, float* c, int64_t ldc, int nr, bool accumulate) {
  using vec = typename Isa::vec;
  constexpr int L = Isa::kLanes;
  vec acc[RM][RN];
#pragma GCC unroll 8
  for (int i = 0; i < RM; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < RN; ++j) acc[i][j] = Isa::zero();
  int64_t k = 0;
  for (; k + L <= K; k += L) {
    vec bv[RN];
#pragma GCC unroll 4
    for (int j = 0; j < RN; ++j) bv[j] = Isa::load(w[j] + k);
#pragma GCC unroll 8
    for (int i = 0; i < RM; ++i) {
      vec av = Isa::load(x + i * ldx + k);
      // Held in a register: GCC would otherwise fold the load into each FMA, RN loads of the
      // same vector, and the loads (not the FMAs) would bound the loop.
      Isa::pin(av);
#pragma GCC unroll 4
      for (int j = 0; j < RN; ++j) acc[i][j] = Isa::fma(av, bv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < RM; ++i)
    for (int j = 0; j < nr; ++j) {
      float s = Isa::sum(acc[i][j]);
      for (int64_t t = k; t < K; ++t) s += x[i * ldx + t] * float(w[j][t]);
      c[i * ldc + j] = (accumulate ? c[i * ldc + j] : 0.0f) + s;
    }
}

// tile_k for the mr (< Isa::kRM) rows left at the bottom of x.
template <int RN, class T, int... R>
void tile_k_rows(std::integer_sequence<int, R...>, int mr, int64_t K, const float* x, int64_t ldx, const T* const* w,
                 float* c, int64_t ldc, int nr, bool accumulate) {
  (void)((mr == R + 1 ? (tile_k<R + 1, RN>(K, x, ldx, w, c, ldc, nr, accumulate), true) : false) || ...);
}

// c (M x N) = x (M x K, contiguous f32) @ b with b's rows b + n * bcs contiguous over K.
// Blocked for the caches: K in slices of kColBlock; the weight rows in panels of kPanel
// (128 KB of f16 per slice: L2) split over the threads; within a panel each tile of kRM rows
// of x (L1) meets every group of kRN weight rows before the next tile is loaded. So per FMA
// the loop reads 2 bytes of weight per kRM from L2 and x from L1: streaming x from L2
// instead (x tiles outer to the weight groups) bound the loop at L2's 32 bytes a cycle.
// Partial sums of the K slices accumulate in c.
template <class T>
void gemm_k(int64_t M, int64_t N, int64_t K, const float* x, const T* b, int64_t bcs, float* c, bool accumulate) {
  constexpr int RM = Isa::kRM, RN = Isa::kRN;
  constexpr int64_t kColBlock = 1024, kPanel = 64;
  const int64_t panels = (N + kPanel - 1) / kPanel;
  for (int64_t kb = 0; kb < K; kb += kColBlock) {
    const int64_t kn = std::min(kColBlock, K - kb);
    const bool acc = accumulate || kb > 0;
    parallel_for(panels, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        const int64_t p0 = p * kPanel, p1 = std::min(N, p0 + kPanel);
        for (int64_t m = 0; m < M; m += RM) {
          const float* xm = x + m * K + kb;
          const int mr = int(std::min<int64_t>(RM, M - m));
          for (int64_t n0 = p0; n0 < p1; n0 += RN) {
            const int nr = int(std::min<int64_t>(RN, p1 - n0));
            const T* w[RN];
            for (int j = 0; j < RN; ++j) w[j] = b + (n0 + std::min(j, nr - 1)) * bcs + kb;  // short group: repeat
            float* cm = c + m * N + n0;
            if (mr == RM)
              tile_k<RM, RN>(kn, xm, K, w, cm, N, nr, acc);
            else
              tile_k_rows<RN>(std::make_integer_sequence<int, RM - 1>(), mr, kn, xm, K, w, cm, N, nr, acc);
          }
        }
      }
    });
  }
}
