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
//   the global loads of step s + 1 are issued before the mma of step s and land in the
//   other buffer after it, so their latency hides behind the tensor-core work.
// - Weight tile: W is [C_out, K] row-major; one 16-byte cp.async (zero-filled past C_out
//   and K) per thread when K % 8 == 0 (and W is aligned), else a warp reads 32
//   consecutive k of a row into registers, 8 rows per thread.
// - Input tile: each thread owns TWO adjacent pixels (columns) of the tile for the whole
//   block, so their (b, oh, ow) decomposition happens once; a warp's lanes own 64
//   consecutive pixels, which are contiguous in x along ow for stride 1 (coalesced). Its
//   8 rows per step read k's gather from a per-step tap table in shared memory (32
//   entries, built by warp 0 a step ahead, a thread's 8 rows adjacent: 4 broadcast
//   16-byte reads). Pairs go to shared as 32 bits (one PRMT of two zero-extended words).
//   * Mask path (kh * kw <= 32, every common kernel): per pixel, once per block, a 64-bit
//     base address of (b, 0, oh*sh - ph, ow*sw - pw) and a 32-bit mask with bit i*kw + j
//     set when tap (i, j) lies inside the image; a table entry is (offset of (ci, i*dh,
//     j*dw) in an image, 1 << (i*kw + j), or 0 past K). A gathered element is then one
//     IMAD.WIDE (base + 2 * offset), one LOP3 into a predicate (mask & bit) and the
//     predicated load: about 5 instructions with the zeroing, pairing and shared store,
//     against about 9.5 for the general path. Warp 0 walks its rows as (channel, tap)
//     and advances them by kBK per step without a division.
//   * General path (more taps): table entries (offset, dy, dx); an element costs three
//     adds, two compares and the predicated load.
// - Loads are predicated, not branched: an element outside the image, past K, past C_out
//   or past N is a load that does not happen and reads as 0, so a step's loads are all in
//   flight at once and nothing waits for them before the mma.
// - Rows of the shared tiles are padded by 16 bytes, so ldmatrix's 8 row addresses hit 8
//   distinct bank groups; A fragments by ldmatrix, B fragments by ldmatrix.trans.
// - Epilogue: acc + bias (f32) is rounded once to the output dtype into a shared tile
//   (reusing the input buffers), then written to NCHW with each warp storing 64
//   consecutive pixels of one C_out row (coalesced).
// All index math is 32-bit; the host entry declines shapes where that could overflow.
#include <algorithm>
#include <cstdint>
#include <type_traits>

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
constexpr int kPairs = kBN / 2;              // a thread gathers (and stores) two adjacent pixels
constexpr int kBRows = kIgThreads / kPairs;  // k rows one pass of the block gathers
constexpr int kBLoads = kBK / kBRows;        // 8 rows x 2 pixels per thread per step
constexpr int kARows = kIgThreads / kBK;     // weight rows one pass loads, scalar (lane = k)
constexpr int kALoads = kBM / kARows;        // 8 scalar weight elements per thread per step
constexpr int kInvalid = -(1 << 30);         // a row offset that puts any tap outside the image
static_assert(kBM * kLdO <= 2 * kBTile, "the output tile reuses the two input buffers");
static_assert(kBM == 2 * kWarpM && kBN == 4 * kWarpN && kIgThreads == 8 * 32, "warp layout");
static_assert(kBM * kBK == kIgThreads * 8, "vector weight loads: one 16-byte piece per thread");

struct IgemmGeom {
  int N, K, Cout;     // GEMM sizes: pixels (batch * Ho * Wo), C_in * kh * kw, output channels
  int P, Wo;          // output plane Ho * Wo and width
  int H, W, HW, CHW;  // input height, width, plane, image
  int kh, kw, taps;   // kernel height, width, kh * kw
  int cin;            // input channels (K / taps)
  int tap_q, tap_r;   // kBK = tap_q * taps + tap_r: how a row index advances per K step
  int sh, sw, ph, pw, dh, dw;
  int m_tiles;  // output-channel tiles; block b is tile (b % m_tiles, b / m_tiles)
};

// Column row k's gather, general path: element offset of (ci, i*dh, j*dw) in an image,
// and (dy, dx) to test the tap against the image. Rows past K have dy = kInvalid (never
// inside the image) and offset 0.
struct __align__(16) Tap {
  int off, dy, dx, pad;
};
// Mask path (kh * kw <= 32): the offset and bit 1 << (i * kw + j) of the tap, which a
// pixel's tap mask has set when that tap lies inside the image; rows past K have bit 0.
struct __align__(8) MaskTap {
  int off;
  uint32_t bit;
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

// Slot of row k in a step's tap table: a thread's rows brow, brow + kBRows, ... sit next
// to each other, so it reads them with a few wide shared loads.
__device__ __forceinline__ int tap_slot(int k) { return (k % kBRows) * kBLoads + k / kBRows; }

// *p if a < a_end and b < b_end (unsigned compares, so negatives fail), else 0. A
// predicated load: no branch and no select after it, so a step's loads all stay in
// flight together; p is not dereferenced (and may point anywhere) when the test fails.
__device__ __forceinline__ uint32_t load_if(const uint16_t* p, int a, int a_end, int b, int b_end) {
  uint32_t v;
  asm("{\n"
      "  .reg .pred q;\n"
      "  setp.lt.u32 q, %2, %3;\n"
      "  setp.lt.and.u32 q, %4, %5, q;\n"
      "  mov.b32 %0, 0;\n"
      "  @q ld.global.nc.u16 %0, [%1];\n"
      "}\n"
      : "=r"(v)
      : "l"(p), "r"(a), "r"(a_end), "r"(b), "r"(b_end));
  return v;
}
// (*addr if mask & bit, else 0): the mask path's gather. One LOP3 into a predicate and
// one predicated load, branch-free like load_if.
__device__ __forceinline__ uint32_t load_bit(uint64_t addr, uint32_t mask, uint32_t bit) {
  uint32_t v;
  asm("{\n"
      "  .reg .pred q;\n"
      "  .reg .b32 t;\n"
      "  and.b32 t, %2, %3;\n"
      "  setp.ne.u32 q, t, 0;\n"
      "  mov.b32 %0, 0;\n"
      "  @q ld.global.nc.u16 %0, [%1];\n"
      "}\n"
      : "=r"(v)
      : "l"(addr), "r"(mask), "r"(bit));
  return v;
}

// One output pixel as this thread sees it: where its taps start in x and its output goes.
struct Pixel {
  int pix;        // element offset of (b, 0, iy0, ix0) in x (+ a tap's offset = the tap's element)
  int iy0;        // oh * sh - ph; kInvalid for a pixel past N, so every tap of it reads zero
  int ix0;        // ow * sw - pw
  int obase;      // element offset of (b, 0, oh, ow) in out; -1 for a pixel past N
  uint32_t taps;  // mask path: bit i * kw + j set when tap (i, j) lies inside the image
};

template <bool MASK>
__device__ __forceinline__ Pixel make_pixel(const IgemmGeom& g, int n) {
  Pixel q{0, kInvalid, 0, -1, 0};
  if (n < g.N) {
    const int b = n / g.P, p = n - b * g.P;
    const int oh = p / g.Wo, ow = p - oh * g.Wo;
    q.iy0 = oh * g.sh - g.ph;
    q.ix0 = ow * g.sw - g.pw;
    q.pix = b * g.CHW + q.iy0 * g.W + q.ix0;
    q.obase = b * g.Cout * g.P + p;
    if constexpr (MASK) {  // once per block: kernel rows and columns inside, then their product
      uint32_t rows = 0, cols = 0;
      for (int i = 0; i < g.kh; ++i) rows |= uint32_t(unsigned(q.iy0 + i * g.dh) < unsigned(g.H)) << i;
      for (int j = 0; j < g.kw; ++j) cols |= uint32_t(unsigned(q.ix0 + j * g.dw) < unsigned(g.W)) << j;
      for (int i = 0; i < g.kh; ++i)  // i * kw <= kh * kw - kw < 32: the shift stays in range
        if ((rows >> i) & 1) q.taps |= cols << (i * g.kw);
    }
  }
  return q;
}

// Operands and output move as raw 16-bit words; only the mma and the epilogue see S.
// VEC_W: K % 8 == 0 and w 16-byte aligned, so the weight tile loads as one 16-byte
// piece per thread, copied by cp.async straight into shared memory (no registers, no
// zeroing, no shared store), instead of 8 scalars. MASK: kh * kw <= 32, so each pixel's
// in-image taps fit one 32-bit mask and a gathered element is an address (one IMAD.WIDE
// off the pixel's 64-bit base), a LOP3 into a predicate and the load; else the general
// per-element bounds test.
template <class S, bool VEC_W, bool MASK>
__global__ void __launch_bounds__(kIgThreads, 2)
    conv2d_igemm_kernel(IgemmGeom g, const uint16_t* __restrict__ x, const uint16_t* __restrict__ w,
                        const S* __restrict__ bias, uint16_t* __restrict__ out) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  __shared__ __align__(128) uint16_t sA[2 * kATile];
  __shared__ __align__(128) uint16_t sB[2 * kBTile];  // later the output tile (kBM rows of kLdO)
  using TapT = std::conditional_t<MASK, MaskTap, Tap>;
  __shared__ __align__(16) TapT tab[2][kBK];  // slots tap_slot(k % kBK)
  __shared__ int toff[kBK];                   // mask path: offset of tap tp = (i, j) in an image

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int wm = warp >> 2, wn = warp & 3;  // this warp's 32 x 32 outputs: rows wm * 32, columns wn * 32
  const int m0 = int(blockIdx.x % unsigned(g.m_tiles)) * kBM;
  const int n0 = int(blockIdx.x / unsigned(g.m_tiles)) * kBN;

  // This thread's two pixels: columns col, col + 1 of the input and output tiles, for the
  // whole block; it gathers (and writes) rows brow, brow + kBRows, ... of them.
  const int col = 2 * (tid % kPairs), brow = tid / kPairs;
  const Pixel px[2] = {make_pixel<MASK>(g, n0 + col), make_pixel<MASK>(g, n0 + col + 1)};
  // Mask path: the pixels' 64-bit base addresses (never dereferenced themselves; a tap
  // whose bit is set lands inside x).
  const uint64_t xbase[2] = {reinterpret_cast<uint64_t>(x) + 2 * uint64_t(int64_t(px[0].pix)),
                             reinterpret_cast<uint64_t>(x) + 2 * uint64_t(int64_t(px[1].pix))};

  // Global -> registers for K step s (tap table tb): issued together, used after the mma.
  uint32_t ra[VEC_W ? 1 : kALoads];  // zero-extended 16-bit words
  uint32_t rb[kBLoads][2];           // zero-extended 16-bit words
  auto load = [&](int s, const TapT* tb, int stage) {
    if constexpr (VEC_W) {  // row tid / 4, k 8 * (tid % 4) .. + 8 (K % 8 == 0: all in or all out)
      const int m = m0 + tid / 4, k = s * kBK + 8 * (tid % 4);
      const bool in = k < g.K && m < g.Cout;
      cp_async16(smem_addr(sA + stage * kATile + (tid / 4) * kLdA + 8 * (tid % 4)), w + uint32_t(in ? m * g.K + k : 0),
                 in ? 16 : 0);
    } else {
      const int k = s * kBK + lane;
#pragma unroll
      for (int i = 0; i < kALoads; ++i) {
        const int m = m0 + warp + kARows * i;
        ra[i] = load_if(w + (m * g.K + k), k, g.K, m, g.Cout);
      }
    }
#pragma unroll
    for (int i = 0; i < kBLoads; ++i) {
      const TapT t = tb[brow * kBLoads + i];  // row brow + kBRows * i
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        if constexpr (MASK)
          rb[i][e] = load_bit(xbase[e] + 2 * uint64_t(int64_t(t.off)), px[e].taps, t.bit);
        else
          rb[i][e] = load_if(x + (px[e].pix + t.off), px[e].iy0 + t.dy, g.H, px[e].ix0 + t.dx, g.W);
      }
    }
  };
  // Registers -> shared buffer `stage` (A: [m][k], B: [k][pixel]).
  auto store = [&](int stage) {
    [[maybe_unused]] uint16_t* a = sA + stage * kATile;
    uint16_t* b = sB + stage * kBTile;
    if constexpr (VEC_W) {
      cp_async_wait_all();  // this thread's piece of A is in; the barrier after store publishes it
    } else {
#pragma unroll
      for (int i = 0; i < kALoads; ++i) a[(warp + kARows * i) * kLdA + lane] = uint16_t(ra[i]);
    }
#pragma unroll
    for (int i = 0; i < kBLoads; ++i)
      *reinterpret_cast<uint32_t*>(b + (brow + kBRows * i) * kLdB + col) = __byte_perm(rb[i][0], rb[i][1], 0x5410);
  };

  float acc[2][4][4];
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) acc[mt][nt][0] = acc[mt][nt][1] = acc[mt][nt][2] = acc[mt][nt][3] = 0.0f;

  // acc += the shared buffer `stage`: two k16 slices, each 2 A and 2 B ldmatrix x4 and 8 mma.
  // This lane's ldmatrix row addresses in buffer 0, formed once (not per step).
  // A: matrices (rows +0, k +0), (rows +8, k +0), (rows +0, k +8), (rows +8, k +8).
  // B (trans): matrices (k +0, n +0), (k +8, n +0), (k +0, n +8), (k +8, n +8) = the
  // fragments of two n8 tiles.
  const uint32_t a_lane = smem_addr(sA) + 2 * ((wm * kWarpM + (lane & 15)) * kLdA + (lane >> 4) * 8);
  const uint32_t b_lane =
      smem_addr(sB) + 2 * (((lane & 7) + ((lane >> 3) & 1) * 8) * kLdB + wn * kWarpN + (lane >> 4) * 8);
  auto compute = [&](int stage) {
    const uint32_t a_base = a_lane + stage * (2 * kATile);
    const uint32_t b_base = b_lane + stage * (2 * kBTile);
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      uint32_t af[2][4];
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) ldsm_x4(af[mt], a_base + 2 * (mt * 16 * kLdA + kk * 16));
      uint32_t bf[2][4];
#pragma unroll
      for (int np = 0; np < 2; ++np) ldsm_x4_trans(bf[np], b_base + 2 * (kk * 16 * kLdB + np * 16));
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
  // Warp 0 builds the tables. Mask path: lane walks rows k = lane, lane + kBK, ... as
  // (channel wci, tap wtp), advanced per step without a division (make_tap's four
  // divisions, on warp 0 alone, would delay every step's barrier).
  int wci = 0, wtp = 0;
  auto next_tap = [&](int k) -> TapT {
    if constexpr (MASK) {
      const int ci = wci, tp = wtp;
      wci += g.tap_q;
      wtp += g.tap_r;
      if (wtp >= g.taps) {
        wtp -= g.taps;
        ++wci;
      }
      const bool in = ci < g.cin;  // k < K
      return MaskTap{in ? ci * g.HW + toff[tp] : 0, in ? 1u << tp : 0u};
    } else {
      return make_tap(g, k);
    }
  };
  if (warp == 0) {
    if constexpr (MASK) {
      if (lane < g.taps) {
        const int i = lane / g.kw, j = lane - i * g.kw;
        toff[lane] = i * g.dh * g.W + j * g.dw;
      }
      __syncwarp();
      wci = lane / g.taps;
      wtp = lane - wci * g.taps;
    }
    tab[0][tap_slot(lane)] = next_tap(lane);
    tab[1][tap_slot(lane)] = next_tap(kBK + lane);
  }
  __syncthreads();
  load(0, tab[0], 0);
  store(0);
  __syncthreads();
  for (int s = 0; s < steps; ++s) {
    const int cur = s & 1;
    const bool next = s + 1 < steps;
    if (next) load(s + 1, tab[cur ^ 1], cur ^ 1);
    compute(cur);
    if (next) store(cur ^ 1);
    if (warp == 0 && s + 2 < steps) tab[cur][tap_slot(lane)] = next_tap((s + 2) * kBK + lane);
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
  // ... then out[b, co, oh, ow] for this thread's two pixels (which may lie in two images),
  // rows brow, brow + kBRows, ...: a warp writes 64 consecutive pixels of a row.
  const bool ok0 = px[0].obase >= 0, ok1 = px[1].obase >= 0;
#pragma unroll 4
  for (int r = brow; r < kBM; r += kBRows) {
    const int co = m0 + r;
    if (co >= g.Cout) break;
    const uint32_t v = *reinterpret_cast<const uint32_t*>(so + r * kLdO + col);
    if (ok0) out[px[0].obase + co * g.P] = uint16_t(v);
    if (ok1) out[px[1].obase + co * g.P] = uint16_t(v >> 16);
  }
#endif
}

// Every index the kernel forms (tile overshoot included) stays below 2^31.
bool fits_32bit(const ConvParams& p, const Tensor& x, const Tensor& weight, const Tensor& out) {
  constexpr int64_t kMax = (int64_t(1) << 31) - 1 - int64_t(kBM) * kBN;
  const int64_t hp = x.dim(2) + 2 * p.padding[0], wp = x.dim(3) + 2 * p.padding[1];
  // Taps in the padding form (then discard) offsets within the padded input.
  const int64_t padded = x.dim(0) * x.dim(1) * hp * wp;
  // Weight addresses of the tile overshoot past C_out and K (formed, never read).
  const int64_t w_span = (out.dim(1) + kBM) * (x.dim(1) * weight.dim(2) * weight.dim(3) + kBK);
  return std::max({x.numel(), weight.numel(), out.numel(), padded, w_span}) < kMax && hp < -int64_t(kInvalid) &&
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
  g.kh = int(kh);
  g.kw = int(kw);
  g.taps = int(kh * kw);
  g.cin = int(c_in);
  g.tap_q = kBK / g.taps;
  g.tap_r = kBK % g.taps;
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
  const bool vec_w = g.K % 8 == 0 && reinterpret_cast<uintptr_t>(wd) % 16 == 0;
  const bool mask = kh * kw <= 32;
  auto kernel = vec_w ? (mask ? conv2d_igemm_kernel<S, true, true> : conv2d_igemm_kernel<S, true, false>)
                      : (mask ? conv2d_igemm_kernel<S, false, true> : conv2d_igemm_kernel<S, false, false>);
  kernel<<<unsigned(blocks), kIgThreads, 0, be.stream()>>>(g, xd, wd, bias, od);
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
