// Implicit-GEMM conv2d forward for f16/bf16 on raw mma.sync m16n8k16 tensor cores.
//
// The conv is the GEMM out (M = C_out, N = pixels) = W (M x K) * cols (K x N) with
// K = C_in * kh * kw and N = batch * Ho * Wo, where column row k = (ci, i, j) of pixel
// n = (b, oh, ow) is x[b, ci, oh*sh - ph + i*dh, ow*sw - pw + j*dw] (0 in the padding).
// The im2col path materializes cols (9x the input for 3x3) in memory and runs cuBLAS;
// here each block gathers its slice of cols straight from x into shared memory, so the
// input is read (mostly from L1/L2) and never written back.
//
// Block: 256 threads (8 warps as 2 x 4), a 64 (C_out) x 128 (pixels) output tile, K in
// steps of 32; each warp owns 32 x 32 outputs as 2 x 4 m16n8 f32 accumulators.
// - Both operand tiles are double-buffered in shared memory with one barrier per K step:
//   the global loads of step s + 1 go to registers before the mma of step s and land in
//   the other buffer after it, so their latency hides behind the tensor-core work.
// - Weight tile: W is [C_out, K] row-major; a warp reads 32 consecutive k of one row.
// - Input tile: each thread owns ONE pixel (column) of the tile for the whole block, so
//   its (b, oh, ow) decomposition happens once; consecutive lanes own consecutive pixels,
//   which are contiguous in x along ow for stride 1 (coalesced). Its 16 rows per step
//   read k's decomposition (offset in the image, dy, dx) from a per-step tap table in
//   shared memory (32 entries, built by warp 0 a step ahead; broadcast reads), so the
//   gather costs an add, two unsigned compares and a select per element, no division.
// - Loads are branch-free: an element outside the image, past K, past C_out or past N
//   reads a zero from a fixed device location instead (a select on the address), so all
//   24 loads of a step are in flight at once and nothing waits for them before the mma.
// - Rows of the shared tiles are padded by 16 bytes, so ldmatrix's 8 row addresses hit 8
//   distinct bank groups; A fragments by ldmatrix, B fragments by ldmatrix.trans.
// - Epilogue: acc + bias (f32) is rounded once to the output dtype into a shared tile
//   (reusing the input buffers), then written to NCHW one C_out row of 128 pixels per
//   pair of warps, coalesced along pixels.
// All index math is 32-bit; the host entry declines shapes where that could overflow.
#include <algorithm>

#include "backend/cuda/device_types.cuh"
#include "backend/cuda/kernels_conv_igemm.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/mma.cuh"

namespace wick::cuda {

namespace {

constexpr int kBM = 64, kBN = 128, kBK = 32;  // output channels x pixels x reduction per step
constexpr int kIgThreads = 256;               // 8 warps: 2 along C_out x 4 along pixels
constexpr int kWarpM = 32, kWarpN = 32;
constexpr int kLdA = kBK + 8;  // row pitches in elements: +16 bytes against ldmatrix bank conflicts
constexpr int kLdB = kBN + 8;
constexpr int kLdO = kBN + 8;
constexpr int kATile = kBM * kLdA;
constexpr int kBTile = kBK * kLdB;
constexpr int kARows = kIgThreads / kBK;  // weight rows a pass of the block loads (lane = k)
constexpr int kBRows = kIgThreads / kBN;  // input rows a pass of the block gathers (thread = pixel)
constexpr int kALoads = kBM / kARows;     // 8 weight elements per thread per step
constexpr int kBLoads = kBK / kBRows;     // 16 input elements per thread per step
constexpr int kInvalid = -(1 << 30);      // a row offset that puts any tap outside the image
static_assert(kBM * kLdO <= 2 * kBTile, "the output tile reuses the two input buffers");
static_assert(kBM == 2 * kWarpM && kBN == 4 * kWarpN && kIgThreads == 8 * 32, "warp layout");

// Where masked-off loads read: a zero is a zero in f16 and bf16 alike.
__device__ const uint16_t g_zero16 = 0;

struct IgemmGeom {
  int N, K, Cout;     // GEMM sizes: pixels (batch * Ho * Wo), C_in * kh * kw, output channels
  int P, Wo;          // output plane Ho * Wo and width
  int H, W, HW, CHW;  // input height, width, plane, image
  int kw, taps;       // kernel width, kh * kw
  int sh, sw, ph, pw, dh, dw;
  int m_tiles;  // output-channel tiles; block b is tile (b % m_tiles, b / m_tiles)
};

// Column row k's gather: element offset of (ci, i*dh, j*dw) in an image, and (dy, dx).
// Rows past K have dy = kInvalid (never inside the image) and offset 0.
struct __align__(16) Tap {
  int off, dy, dx, pad;
};

__device__ __forceinline__ Tap make_tap(const IgemmGeom& g, int k) {
  Tap t{0, kInvalid, 0, 0};
  if (k < g.K) {
    const int ci = k / g.taps, tp = k - ci * g.taps;
    const int i = tp / g.kw, j = tp - i * g.kw;
    t.dy = i * g.dh;
    t.dx = j * g.dw;
    t.off = ci * g.HW + t.dy * g.W + t.dx;
  }
  return t;
}

// Operands and output move as raw 16-bit words; only the mma and the epilogue see S.
template <class S>
__global__ void __launch_bounds__(kIgThreads, 2)
    conv2d_igemm_kernel(IgemmGeom g, const uint16_t* __restrict__ x, const uint16_t* __restrict__ w,
                        const S* __restrict__ bias, uint16_t* __restrict__ out) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  __shared__ __align__(128) uint16_t sA[2 * kATile];
  __shared__ __align__(128) uint16_t sB[2 * kBTile];  // later the output tile (kBM rows of kLdO)
  __shared__ Tap tab[2][kBK];

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int wm = warp >> 2, wn = warp & 3;  // this warp's 32 x 32 outputs: rows wm * 32, columns wn * 32
  const int m0 = int(blockIdx.x % unsigned(g.m_tiles)) * kBM;
  const int n0 = int(blockIdx.x / unsigned(g.m_tiles)) * kBN;

  // This thread's pixel: column `col` of the input and output tiles, for the whole block.
  // A pixel past N gets iy0 = kInvalid, so every tap of it reads the zero.
  const int col = tid % kBN, brow = tid / kBN;
  const int n = n0 + col;
  int pix = 0, iy0 = kInvalid, ix0 = 0, obase = 0;
  if (n < g.N) {
    const int b = n / g.P, p = n - b * g.P;
    const int oh = p / g.Wo, ow = p - oh * g.Wo;
    iy0 = oh * g.sh - g.ph;
    ix0 = ow * g.sw - g.pw;
    pix = b * g.CHW + iy0 * g.W + ix0;  // + a tap's offset = the element (negative only in the padding)
    obase = b * g.Cout * g.P + p;
  }

  uint16_t ra[kALoads], rb[kBLoads];
  // Global -> registers for K step s (tap table tb): issued together, used later.
  auto load = [&](int s, const Tap* tb) {
    const int k = s * kBK + lane;
#pragma unroll
    for (int i = 0; i < kALoads; ++i) {
      const int m = m0 + warp + kARows * i;
      const bool ok = k < g.K && m < g.Cout;
      ra[i] = *(ok ? w + (m * g.K + k) : &g_zero16);
    }
#pragma unroll
    for (int i = 0; i < kBLoads; ++i) {
      const Tap t = tb[brow + kBRows * i];
      const bool ok = unsigned(iy0 + t.dy) < unsigned(g.H) && unsigned(ix0 + t.dx) < unsigned(g.W);
      rb[i] = *(ok ? x + (pix + t.off) : &g_zero16);
    }
  };
  // Registers -> shared buffer `stage` (A: [m][k], B: [k][pixel]).
  auto store = [&](int stage) {
    uint16_t* a = sA + stage * kATile;
    uint16_t* b = sB + stage * kBTile;
#pragma unroll
    for (int i = 0; i < kALoads; ++i) a[(warp + kARows * i) * kLdA + lane] = ra[i];
#pragma unroll
    for (int i = 0; i < kBLoads; ++i) b[(brow + kBRows * i) * kLdB + col] = rb[i];
  };

  float acc[2][4][4];
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) acc[mt][nt][0] = acc[mt][nt][1] = acc[mt][nt][2] = acc[mt][nt][3] = 0.0f;

  // acc += the shared buffer `stage`: two k16 slices, each 2 A and 2 B ldmatrix x4 and 8 mma.
  auto compute = [&](int stage) {
    const uint32_t a_base = smem_addr(sA + stage * kATile);
    const uint32_t b_base = smem_addr(sB + stage * kBTile);
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      // A: matrices (rows +0, k +0), (rows +8, k +0), (rows +0, k +8), (rows +8, k +8).
      uint32_t af[2][4];
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
        ldsm_x4(af[mt], a_base + 2 * ((wm * kWarpM + mt * 16 + (lane & 15)) * kLdA + kk * 16 + (lane >> 4) * 8));
      // B (trans): matrices (k +0, n +0), (k +8, n +0), (k +0, n +8), (k +8, n +8) = the
      // fragments of two n8 tiles.
      uint32_t bf[2][4];
#pragma unroll
      for (int np = 0; np < 2; ++np)
        ldsm_x4_trans(bf[np], b_base + 2 * ((kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * kLdB + wn * kWarpN +
                                            np * 16 + (lane >> 4) * 8));
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int np = 0; np < 2; ++np) {
          mma16816<S>(acc[mt][2 * np], af[mt], bf[np][0], bf[np][1]);
          mma16816<S>(acc[mt][2 * np + 1], af[mt], bf[np][2], bf[np][3]);
        }
    }
  };

  // Pipeline: tables for steps 0 and 1, step 0's tiles in buffer 0. Iteration s loads step
  // s + 1 (table s + 1), computes step s, stores step s + 1, and builds table s + 2 into
  // the slot step s used (read before the previous barrier).
  const int steps = (g.K + kBK - 1) / kBK;
  if (warp == 0) {
    tab[0][lane] = make_tap(g, lane);
    tab[1][lane] = make_tap(g, kBK + lane);
  }
  __syncthreads();
  load(0, tab[0]);
  store(0);
  __syncthreads();
  for (int s = 0; s < steps; ++s) {
    const int cur = s & 1;
    const bool next = s + 1 < steps;
    if (next) load(s + 1, tab[cur ^ 1]);
    compute(cur);
    if (next) store(cur ^ 1);
    if (warp == 0 && s + 2 < steps) tab[cur][lane] = make_tap(g, (s + 2) * kBK + lane);
    __syncthreads();
  }

  // Epilogue: acc + bias rounded once into the output tile [channel][pixel] ...
  uint16_t* so = sB;
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // fragment rows lane / 4 and lane / 4 + 8
      const int r = wm * kWarpM + mt * 16 + (lane >> 2) + 8 * h;
      const int co = m0 + r;
      const float bv = bias != nullptr && co < g.Cout ? to_compute(bias[co]) : 0.0f;
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
        *reinterpret_cast<uint32_t*>(so + r * kLdO + wn * kWarpN + nt * 8 + 2 * (lane & 3)) =
            pack2<S>(acc[mt][nt][2 * h] + bv, acc[mt][nt][2 * h + 1] + bv);
    }
  __syncthreads();
  // ... then out[b, co, oh, ow] for this thread's pixel, rows brow, brow + 2, ...
  if (n < g.N) {
#pragma unroll 8
    for (int r = brow; r < kBM; r += kBRows)
      if (m0 + r < g.Cout) out[obase + (m0 + r) * g.P] = so[r * kLdO + col];
  }
#endif
}

// Every index the kernel forms (tile overshoot included) stays below 2^31.
bool fits_32bit(const ConvParams& p, const Tensor& x, const Tensor& weight, const Tensor& out) {
  constexpr int64_t kMax = (int64_t(1) << 31) - 1 - int64_t(kBM) * kBN;
  const int64_t hp = x.dim(2) + 2 * p.padding[0], wp = x.dim(3) + 2 * p.padding[1];
  // Taps in the padding form (then discard) offsets within the padded input.
  const int64_t padded = x.dim(0) * x.dim(1) * hp * wp;
  return std::max({x.numel(), weight.numel(), out.numel(), padded}) < kMax && hp < -int64_t(kInvalid) &&
         wp < -int64_t(kInvalid);
}

template <class S>
void launch(CudaBackend& be, const ConvParams& p, const Tensor& x, const Tensor& weight, const Tensor& out) {
  const int64_t c_in = x.dim(1), h = x.dim(2), w = x.dim(3);
  const int64_t c_out = out.dim(1), ho = out.dim(2), wo = out.dim(3), kh = weight.dim(2), kw = weight.dim(3);
  IgemmGeom g{};
  g.N = int(x.dim(0) * ho * wo);
  g.K = int(c_in * kh * kw);
  g.Cout = int(c_out);
  g.P = int(ho * wo);
  g.Wo = int(wo);
  g.H = int(h);
  g.W = int(w);
  g.HW = int(h * w);
  g.CHW = int(c_in * h * w);
  g.kw = int(kw);
  g.taps = int(kh * kw);
  g.sh = int(p.stride[0]);
  g.sw = int(p.stride[1]);
  g.ph = int(p.padding[0]);
  g.pw = int(p.padding[1]);
  g.dh = int(p.dilation[0]);
  g.dw = int(p.dilation[1]);
  g.m_tiles = int((c_out + kBM - 1) / kBM);
  const int64_t blocks = int64_t(g.m_tiles) * ((g.N + kBN - 1) / kBN);
  const uint16_t* xd = dptr<const uint16_t>(x) + x.offset();
  const uint16_t* wd = dptr<const uint16_t>(weight) + weight.offset();
  const S* bias = p.bias.defined() ? dptr<const S>(p.bias) + p.bias.offset() : nullptr;
  uint16_t* od = dptr<uint16_t>(out) + out.offset();
  conv2d_igemm_kernel<S><<<unsigned(blocks), kIgThreads, 0, be.stream()>>>(g, xd, wd, bias, od);
  check_launch("conv");
}

}  // namespace

bool conv2d_igemm(CudaBackend& be, const ConvParams& p, const Tensor& x, const Tensor& weight, const Tensor& out) {
  if (p.transposed || p.groups != 1 || !fits_32bit(p, x, weight, out)) return false;
  switch (x.dtype()) {
    case DType::F16: launch<__half>(be, p, x, weight, out); return true;
    case DType::BF16: launch<__nv_bfloat16>(be, p, x, weight, out); return true;
    default: return false;
  }
}

}  // namespace wick::cuda
