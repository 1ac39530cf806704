// Implicit-GEMM conv2d forward: f16/bf16 on raw mma.sync m16n8k16 tensor cores; f32 on
// m16n8k8 in TF32 when wick::allow_tf32() is on (operands rounded to nearest to TF32, as
// cuDNN and cuBLAS do, ties to even; f32 accumulation, bias and output); and exact f32 on
// plain FFMA when it is off (the default: products exact, f32 sums, operands untouched),
// so f32 convs are exact by default and still skip the column buffer.
//
// The conv is the GEMM out (M = C_out, N = pixels) = W (M x K) * cols (K x N) with
// K = C_in * kh * kw and N = batch * Ho * Wo, where column row k = (ci, i, j) of pixel
// n = (b, oh, ow) is x[b, ci, oh*sh - ph + i*dh, ow*sw - pw + j*dw] (0 in the padding).
// The im2col path materializes cols (9x the input for 3x3) in memory and runs cuBLAS;
// here each block gathers its slice of cols straight from x into shared memory, so the
// input is read (mostly from L1/L2) and never written back.
//
// Block: 256 threads (8 warps as 2 x 4), a 64 (C_out) x 128 (pixels) output tile, K in
// steps of 32 elements; each warp owns 32 x 32 outputs: 2 x 4 m16n8 f32 accumulators on
// tensor cores, 8 x 4 f32 outputs per lane on FFMA. One kernel template serves every
// kind: operands move as raw words (16 or 32 bits) and only the warp's compute and its
// write to the output tile (WarpMma) and the pair packing / rounding (IgElem) depend on
// S (__half, __nv_bfloat16, float = TF32, ExactF32 = FFMA).
// - Both operand tiles are double-buffered in shared memory with one barrier per K step:
//   the global loads of step s + 1 are issued before the mma of step s and land in the
//   other buffer after it, so their latency hides behind the mma / FFMA work.
// - Weight tile: W is [C_out, K] row-major; 16-byte cp.async pieces (8 16-bit or 4 f32
//   values; zero-filled past C_out and K; one piece per thread for 16-bit, two for f32)
//   when K is a multiple of a piece (and W is aligned), else a warp reads 32 consecutive
//   k of a row into registers, 8 rows per thread.
// - Input tile: each thread owns TWO pixels of the tile for the whole block, so their
//   (b, oh, ow) decomposition happens once: adjacent ones (16-bit, exact f32: a warp's
//   lanes own 64 consecutive pixels) or 32 apart (TF32: a warp's lanes own 32 consecutive
//   pixels per load), contiguous in x along ow for stride 1 (coalesced). Its 8 rows per
//   step read k's gather from a per-step tap table in shared memory (32 entries, built by
//   warp 0 a step ahead, a thread's 8 rows adjacent: 4 broadcast 16-byte reads). The
//   values go to shared memory as InTile places them: 16-bit, one 32-bit store per row
//   (one PRMT of two zero-extended words); exact f32, one 64-bit store per row; TF32,
//   each value rounded to TF32 (one F2FP) and two rows of both pixels as one 16-byte
//   store, laid out as the mma's A fragments.
//   * Mask path (kh * kw <= 32, every common kernel): per pixel, once per block, a 64-bit
//     base address of (b, 0, oh*sh - ph, ow*sw - pw) and a 32-bit mask with bit i*kw + j
//     set when tap (i, j) lies inside the image; a table entry is (offset of (ci, i*dh,
//     j*dw) in an image, 1 << (i*kw + j), or 0 past K). A gathered element is then one
//     IMAD.WIDE (base + size * offset), one LOP3 into a predicate (mask & bit) and the
//     predicated load: about 5 instructions with the zeroing, pairing and shared store,
//     against about 9.5 for the general path. Warp 0 walks its rows as (channel, tap)
//     and advances them by kBK per step without a division.
//   * General path (more taps): table entries (offset, dy, dx); an element costs three
//     adds, two compares and the predicated load.
// - Loads are predicated, not branched: an element outside the image, past K, past C_out
//   or past N is a load that does not happen and reads as 0, so a step's loads are all in
//   flight at once and nothing waits for them before the mma.
// - Fragments. 16-bit: A by ldmatrix, B by ldmatrix.trans, rows padded by 16 bytes so
//   ldmatrix's 8 row addresses hit 8 distinct bank groups. TF32 (ldmatrix is b16 only):
//   the transposed product out^T = cols^T W^T (pixels as the mma's M), so that every
//   fragment is one conflict-free 16-byte LDS straight into the registers the mma reads:
//   A (pixels) from the input tile InTile<float> lays out as fragments, B (W^T) two k8
//   slices of the lane's W row (k 8t .. 8t + 7; A rows padded by 4 words: pitch 36). Per
//   K step a warp issues 16 LDS.128 for 32 mma (with W as A, a fragment spans two rows of
//   W and took two LDS.128 and four register moves, plus 32-bit LDS for the input: 40
//   LDS and about 80 moves). Gathered inputs are rounded to TF32 once on their way to
//   shared memory, weights in the fragments (4 cvt per 16-byte LDS; see IgElem32).
//   FFMA (exact f32): register blocking, each lane 8 C_out rows x 4 pixels; per 4 k, 8
//   16-byte LDS of A (4 k of one of its rows) and 4 of B (its 4 pixels at one k) feed
//   128 FFMA (10.7 per LDS), with broadcast / conflict-free banks (see WarpMma<ExactF32>).
//   Each output sums its K exact products in k order in f32, like a plain dot product.
// - Why kBK = 32 f32 values (128 bytes of a weight row) rather than 16 (both f32 kinds):
//   the same row and tap-table structure as 16-bit (32 table entries, lane = k), half
//   the barriers and twice the loads in flight per step of kBK = 16; the price is 52 KB
//   of shared memory (A 2 x 64 x 36 x 4 B = 18 KB, B 2 x 32 x 136 x 4 B = 34 KB), above
//   the 48 KB default (the launcher opts in), still 2 blocks per SM (about 108 KB of the
//   H200's 228 KB) as the 128-register bound of __launch_bounds__(256, 2) allows (FFMA: 32 accumulators +
//   48 operand registers per 4 k fit, with the k loop unrolled by 8 rather than 32, which
//   spilled in the scalar-weight variants). 16-bit tiles take 27 KB.
// - Epilogue: acc + bias (f32) is rounded once to the output dtype into a shared tile
//   (reusing the input buffers: 64 x 136 words fits the two B buffers exactly), then
//   written to NCHW with each warp storing 64 consecutive pixels of one C_out row
//   (coalesced). The mma kinds write their fragments as pairs, FFMA a lane's 4 pixels of
//   a row as one 16-byte store.
// All index math is 32-bit; the host entry declines shapes where that could overflow.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_types.cuh"
#include "backend/cuda/kernels_conv_igemm.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/mma.cuh"
#include "wick/memory.h"

namespace wick::cuda {

namespace {

// The operand kinds of the kernel template: __half, __nv_bfloat16 and float (TF32) on
// tensor cores, and ExactF32, a tag for f32 on plain FFMA (no operand rounding). Each
// kind has an IgElem (how its values move) and a WarpMma (a warp's share of a K step and
// its accumulators' way into the output tile).
struct ExactF32 {};

// How an element type moves: operands and outputs as raw words (only the mma and the
// epilogue see S), a thread's two adjacent pixels as one Pair in shared memory. Value is
// the tensors' element type (that of the bias).
// 16-bit floats: the two words packed into 32 bits by one PRMT, fed to the mma unchanged.
template <class S>
struct IgElem {
  using Value = S;
  using Word = uint16_t;
  using Pair = uint32_t;  // lower column in the low half
  __device__ static Word operand(uint32_t v) { return uint16_t(v); }
  __device__ static Pair operands(uint32_t lo, uint32_t hi) { return __byte_perm(lo, hi, 0x5410); }
  __device__ static Pair outputs(float lo, float hi) { return pack2<S>(lo, hi); }
  __device__ static Word first(Pair p) { return uint16_t(p); }
  __device__ static Word second(Pair p) { return uint16_t(p >> 16); }
};
// f32 as 32-bit words; outputs are the f32 sums. TF32 (IgElem<float>): gathered inputs
// are rounded to TF32 (operand) once, on their way to shared memory; weights go there as
// they are and WarpMma<float> rounds its fragments of them (each weight is read by the 4
// warps along pixels: 32 cvt per lane and step instead of 8 plus a 16-byte LDS and STS
// per 4 weights through shared memory, whose bandwidth binds this kernel more than issue
// does). Exact (IgElem<ExactF32>): operands stay as they are.
template <bool TF32>
struct IgElem32 {
  using Value = float;
  using Word = uint32_t;
  using Pair = uint2;
  __device__ static Word operand(uint32_t v) { return TF32 ? to_tf32(v) : v; }
  __device__ static Pair operands(uint32_t lo, uint32_t hi) { return {operand(lo), operand(hi)}; }
  __device__ static Pair outputs(float lo, float hi) { return {__float_as_uint(lo), __float_as_uint(hi)}; }
  __device__ static Word first(Pair p) { return p.x; }
  __device__ static Word second(Pair p) { return p.y; }
};
template <>
struct IgElem<float> : IgElem32<true> {};
template <>
struct IgElem<ExactF32> : IgElem32<false> {};
template <class S>
using word_t = typename IgElem<S>::Word;
template <class S>
using value_t = typename IgElem<S>::Value;

constexpr int kBM = 64, kBN = 128, kBK = 32;  // output channels x pixels x reduction (elements) per step
constexpr int kIgThreads = 256;               // 8 warps: 2 along C_out x 4 along pixels
constexpr int kWarpM = 32, kWarpN = 32;
// Row pitches in elements. A ([m][k]) rows are padded by 16 bytes: ldmatrix's 8 row
// addresses (16-bit) hit 8 distinct bank groups, and the TF32 weight fragments' 16-byte
// LDS (rows g, words 8t ..: banks 4g + 8t + 0..3 in a quarter warp with a pitch of 36
// words) are conflict-free. B ([k][pixel]) rows are padded by 8 elements: 16 bytes for
// ldmatrix.trans, 8 words for the exact f32 rows (TF32 lays its input tile out as
// fragments: kLdX). Output ([channel][pixel]) rows are padded by 8 elements, TF32's by 4
// words: a half warp's pair stores (channels 2t + c, pairs g: banks 8t + 2g + 0..1) are
// then conflict-free.
template <class S>
constexpr int kVec = 16 / int(sizeof(word_t<S>));  // elements per 16-byte cp.async
template <class S>
constexpr int kLdA = kBK + kVec<S>;
constexpr int kLdB = kBN + 8;
template <class S>
constexpr int kLdO = std::is_same_v<S, float> ? kBN + 4 : kBN + 8;
template <class S>
constexpr int kATile = (kBM * kLdA<S>);
constexpr int kBTile = kBK * kLdB;
// Both double-buffered tiles, dynamic shared memory: 27 KB for 16-bit, 52 KB for f32 (above
// the 48 KB default, so the launcher opts in); two blocks fit an SM either way.
constexpr size_t kDefaultSmem = size_t(48) << 10;  // dynamic shared memory without the opt-in
template <class S>
constexpr size_t kSmemBytes = size_t(2 * (kATile<S> + kBTile)) * sizeof(word_t<S>);
template <class S>
constexpr int kAPieces = (kBM * kBK) / (kVec<S> * kIgThreads);  // 16-byte weight pieces per thread per step
constexpr int kPairs = kBN / 2;                                 // a thread gathers (and stores) two adjacent pixels
constexpr int kBRows = kIgThreads / kPairs;                     // k rows one pass of the block gathers
constexpr int kBLoads = kBK / kBRows;                           // 8 rows x 2 pixels per thread per step
constexpr int kARows = kIgThreads / kBK;                        // weight rows one pass loads, scalar (lane = k)
constexpr int kALoads = kBM / kARows;                           // 8 scalar weight elements per thread per step
constexpr int kInvalid = -(1 << 30);                            // a row offset that puts any tap outside the image
static_assert(kBM * kLdO<__half> <= 2 * kBTile && kBM * kLdO<float> <= 2 * kBTile,
              "the output tile reuses the two input buffers");
static_assert(kBM == 2 * kWarpM && kBN == 4 * kWarpN && kIgThreads == 8 * 32, "warp layout");
static_assert(kAPieces<__half> == 1 && kAPieces<float> == 2, "vector weight loads: whole pieces per thread");
static_assert(kSmemBytes<float> % 16 == 0 && (2 * kATile<float> * sizeof(float)) % 128 == 0 &&
                  (2 * kATile<__half> * sizeof(__half)) % 128 == 0,
              "B buffers start 128-byte aligned");

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

// Slot of column row k (k < kBK) in a step's tap table. Thread (pair q, brow) gathers the
// rows of slots brow * kBLoads + i (i < kBLoads): adjacent, so it reads them with a few
// wide shared loads. 16-bit and exact f32: it gathers rows brow + kBRows * i (B row =
// k). TF32: slot 8 kk + 2 t + e holds k = 8 t + 2 kk + e, the k of fragment position t
// (e = 0) or t + 4 (e = 1) of k8 slice kk (see InTile<float>), so thread brow gathers
// slice kk = brow, and its rows 2m, 2m + 1 are one k pair of one fragment position.
template <class S>
__device__ __forceinline__ int tap_slot(int k) {
  if constexpr (std::is_same_v<S, float>)
    return ((k >> 1) & 3) * 8 + (k >> 3) * 2 + (k & 1);
  else
    return (k % kBRows) * kBLoads + k / kBRows;
}

// *p if a < a_end and b < b_end (unsigned compares, so negatives fail), else 0, zero-
// extended. A predicated load: no branch and no select after it, so a step's loads all
// stay in flight together; p is not dereferenced (and may point anywhere) when the test fails.
#define WICK_IG_LOAD_IF(TYPE)             \
  asm("{\n"                               \
      "  .reg .pred q;\n"                 \
      "  setp.lt.u32 q, %2, %3;\n"        \
      "  setp.lt.and.u32 q, %4, %5, q;\n" \
      "  mov.b32 %0, 0;\n"                \
      "  @q ld.global.nc." TYPE           \
      " %0, [%1];\n"                      \
      "}\n"                               \
      : "=r"(v)                           \
      : "l"(p), "r"(a), "r"(a_end), "r"(b), "r"(b_end))
template <class Word>
__device__ __forceinline__ uint32_t load_if(const Word* p, int a, int a_end, int b, int b_end) {
  uint32_t v;
  if constexpr (sizeof(Word) == 2)
    WICK_IG_LOAD_IF("u16");
  else
    WICK_IG_LOAD_IF("u32");
  return v;
}
#undef WICK_IG_LOAD_IF
// (*addr if mask & bit, else 0; a Word): the mask path's gather. One LOP3 into a
// predicate and one predicated load, branch-free like load_if.
#define WICK_IG_LOAD_BIT(TYPE)   \
  asm("{\n"                      \
      "  .reg .pred q;\n"        \
      "  .reg .b32 t;\n"         \
      "  and.b32 t, %2, %3;\n"   \
      "  setp.ne.u32 q, t, 0;\n" \
      "  mov.b32 %0, 0;\n"       \
      "  @q ld.global.nc." TYPE  \
      " %0, [%1];\n"             \
      "}\n"                      \
      : "=r"(v)                  \
      : "l"(addr), "r"(mask), "r"(bit))
template <class Word>
__device__ __forceinline__ uint32_t load_bit(uint64_t addr, uint32_t mask, uint32_t bit) {
  uint32_t v;
  if constexpr (sizeof(Word) == 2)
    WICK_IG_LOAD_BIT("u16");
  else
    WICK_IG_LOAD_BIT("u32");
  return v;
}
#undef WICK_IG_LOAD_BIT

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

// Where a thread's gathered values go in the input tile, and which two pixels it owns
// (for the whole block; column 2q + e of the output tile is its pixel e). 16-bit and
// exact f32: pixels 2q and 2q + 1, B tile [k][pixel], one Pair per gathered row.
template <class S>
struct InTile {
  __device__ static int pixel(int q, int e) { return 2 * q + e; }
  __device__ static void store(word_t<S>* b, int q, int brow, const uint32_t (&rb)[kBLoads][2]) {
#pragma unroll
    for (int i = 0; i < kBLoads; ++i)
      *reinterpret_cast<typename IgElem<S>::Pair*>(b + (brow + kBRows * i) * kLdB + 2 * q) =
          IgElem<S>::operands(rb[i][0], rb[i][1]);
  }
};
// TF32: the tile is made of the mma's A fragments (pixels are its M rows, see
// WarpMma<float>): quad (j, q), 4 words at j * kLdX + 4 q, holds (pixel 0, k), (pixel 1,
// k), (pixel 0, k + 1), (pixel 1, k + 1) of pair q, with k = 8 t + 2 kk for j = 4 kk + t
// (k8 slice kk, fragment position t: a0..a3 of mma rows g, g + 8 when pair q is the
// warp's row g), so a lane's A fragment is one 16-byte LDS straight into the four
// registers the mma reads. Thread (q, brow) holds slice kk = brow's rows (tap_slot) and
// stores them as 4 quads. Pair q's pixels are 32 apart (q % 32 + 64 (q / 32) and + 32):
// a warp's 32 lanes (32 consecutive q) gather 32 consecutive pixels per load. Pitch kLdX
// = 64 quads + 8 words: a quarter warp's 16-byte LDS (g < 2, t < 4: banks 8 t + 4 g +
// 0..3) and a warp's stores (32 consecutive quads) are conflict-free.
constexpr int kLdX = 4 * kPairs + 8;
static_assert(kBK / 2 * kLdX <= kBTile, "the TF32 input tile fits the B buffer");
template <>
struct InTile<float> {
  __device__ static int pixel(int q, int e) { return (q & 31) + 64 * (q >> 5) + 32 * e; }
  __device__ static void store(uint32_t* b, int q, int brow, const uint32_t (&rb)[kBLoads][2]) {
#pragma unroll
    for (int m = 0; m < kBLoads / 2; ++m)
      *reinterpret_cast<uint4*>(b + (kBLoads / 2 * brow + m) * kLdX + 4 * q) =
          uint4{IgElem<float>::operand(rb[2 * m][0]), IgElem<float>::operand(rb[2 * m][1]),
                IgElem<float>::operand(rb[2 * m + 1][0]), IgElem<float>::operand(rb[2 * m + 1][1])};
  }
};

// A warp's share of a K step: acc (its 32 x 32 outputs) += the shared buffer `stage`;
// write then puts acc + bias, rounded to S, into the output tile [channel][pixel]. The
// lane's addresses in buffer 0 are formed once.
// Tensor cores: acc is 2 x 4 m16n8 tiles; lane (g = lane / 4, t = lane % 4) holds rows g
// and g + 8, columns 2t and 2t + 1 of each: one Pair per row and tile into the output tile.
template <class S>
struct MmaAcc {
  using Acc = float[2][4][4];
  int r0, c0;  // the lane's first row and column in the block tile
  __device__ MmaAcc(int wm, int wn, int lane) : r0(wm * kWarpM + (lane >> 2)), c0(wn * kWarpN + 2 * (lane & 3)) {}
  template <class Bias>
  __device__ void write(const Acc& acc, word_t<S>* so, const Bias& bias_of) const {
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = r0 + mt * 16 + 8 * h;
        const float bv = bias_of(r);
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
          *reinterpret_cast<typename IgElem<S>::Pair*>(so + r * kLdO<S> + c0 + nt * 8) =
              IgElem<S>::outputs(acc[mt][nt][2 * h] + bv, acc[mt][nt][2 * h + 1] + bv);
      }
  }
};
// 16-bit: two k16 slices, each 2 A and 2 B ldmatrix x4 and 8 m16n8k16 mma.
// A: matrices (rows +0, k +0), (rows +8, k +0), (rows +0, k +8), (rows +8, k +8).
// B (trans): matrices (k +0, n +0), (k +8, n +0), (k +0, n +8), (k +8, n +8) = the
// fragments of two n8 tiles.
template <class S>
struct WarpMma : MmaAcc<S> {
  uint32_t a_lane, b_lane;  // shared-memory byte addresses
  __device__ WarpMma(const uint16_t* sA, const uint16_t* sB, int wm, int wn, int lane)
      : MmaAcc<S>(wm, wn, lane),
        a_lane(smem_addr(sA) + 2 * ((wm * kWarpM + (lane & 15)) * kLdA<S> + (lane >> 4) * 8)),
        b_lane(smem_addr(sB) + 2 * (((lane & 7) + ((lane >> 3) & 1) * 8) * kLdB + wn * kWarpN + (lane >> 4) * 8)) {}
  __device__ void run(typename MmaAcc<S>::Acc& acc, int stage) const {
    const uint32_t a_base = a_lane + stage * (2 * kATile<S>);
    const uint32_t b_base = b_lane + stage * (2 * kBTile);
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      uint32_t af[2][4];
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) ldsm_x4(af[mt], a_base + 2 * (mt * 16 * kLdA<S> + kk * 16));
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
  }
};
// TF32: the transposed product, out^T (pixels x channels) += cols^T * W^T, so that both
// fragments are whole 16-byte LDS with no register moves before the mma (ldmatrix is b16
// only; an A fragment of W, rows g and g + 8 of one k, would take two LDS and four
// moves). With g = lane / 4, t = lane % 4 and k = 8 t + 2 kk + e at fragment position t
// + 4 e of k8 slice kk: A (pixels, M = 16 = pairs 8 mt .. 8 mt + 7 of the warp, row g
// and g + 8 = pixels 0 and 1 of pair g) is one quad of InTile<float> per slice; B (W^T,
// k x 8 channels) is k 8 t .. 8 t + 7 of the lane's W row (channel g), two slices per
// 16-byte LDS (A tile pitch 36: banks 4 g + 8 t + 0..3 in a quarter warp). Per K step a
// warp does 8 + 8 LDS.128 for 32 mma (four k8 slices of 2 x 4 m16n8k8). The inputs are
// TF32 already, the weights are rounded here. Accumulator tile [mt][nt]: (pair 8 mt + g,
// channel 8 nt + 2 t + c) has pixel 0 in c and pixel 1 in 2 + c: one Pair of the output
// tile per channel.
template <>
struct WarpMma<float> {
  using Acc = float[2][4][4];
  int ch0, q0;  // the lane's first channel (32 wm + 2 t) and pixel pair (16 wn + g) in the block tile
  const uint32_t* w_lane;
  const uint32_t* x_lane;
  __device__ WarpMma(const uint32_t* sA, const uint32_t* sB, int wm, int wn, int lane)
      : ch0(wm * kWarpM + 2 * (lane & 3)),
        q0(wn * (kWarpN / 2) + (lane >> 2)),
        w_lane(sA + (wm * kWarpM + (lane >> 2)) * kLdA<float> + 8 * (lane & 3)),
        x_lane(sB + (lane & 3) * kLdX + 4 * q0) {}
  __device__ void run(Acc& acc, int stage) const {
    const uint32_t* w = w_lane + stage * kATile<float>;
    const uint32_t* x = x_lane + stage * kBTile;
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // slices 2 h and 2 h + 1
      uint4 wf[4];                 // [nt]: k 8 t + 4 h .. + 3 of channel 8 nt + g
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        const uint4 v = *reinterpret_cast<const uint4*>(w + nt * 8 * kLdA<float> + 4 * h);
        wf[nt] = uint4{to_tf32(v.x), to_tf32(v.y), to_tf32(v.z), to_tf32(v.w)};
      }
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int kk = 2 * h + j;
        uint32_t xf[2][4];  // [mt]: quad (4 kk + t, pair 8 mt + g)
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
          const uint4 v = *reinterpret_cast<const uint4*>(x + 4 * kk * kLdX + 4 * 8 * mt);
          xf[mt][0] = v.x;
          xf[mt][1] = v.y;
          xf[mt][2] = v.z;
          xf[mt][3] = v.w;
        }
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
#pragma unroll
          for (int nt = 0; nt < 4; ++nt)
            mma1688_tf32(acc[mt][nt], xf[mt], j == 0 ? wf[nt].x : wf[nt].z, j == 0 ? wf[nt].y : wf[nt].w);
      }
    }
  }
  template <class Bias>
  __device__ void write(const Acc& acc, uint32_t* so, const Bias& bias_of) const {
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int r = ch0 + 8 * nt + c;
        const float bv = bias_of(r);
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
          *reinterpret_cast<uint2*>(so + r * kLdO<float> + 2 * (q0 + 8 * mt)) =
              IgElem<float>::outputs(acc[mt][nt][c] + bv, acc[mt][nt][2 + c] + bv);
      }
  }
};

// Exact f32 on FFMA: each lane owns 8 x 4 outputs, rows r0 + 4 i (i < 8) and columns
// c0 .. c0 + 3 of the block tile, with r0 = wm * 32 + lane / 8 and c0 = wn * 32 + 4 (lane
// % 8): the warp's lanes as 4 (rows) x 8 (columns), the 32 x 32 warp tile of the mma
// kinds. Per 4 k: 4 16-byte LDS of B (row k, the lane's 4 columns), 8 of A (row r0 + 4 i,
// k .. k + 3: A is [m][k]) and 128 FFMA, 10.7 FFMA per LDS. Shared reads are conflict-
// free: a quarter warp (8 lanes, one 16-byte phase) reads one A address (a broadcast; the
// 4 quarters' rows r0 .. r0 + 3 sit at banks 4 apart with the 36-word pitch) and 128
// contiguous bytes of a B row. Every output sums its exact products (FFMA rounds once)
// in k order in f32; acc + bias is rounded to f32 once more.
template <>
struct WarpMma<ExactF32> {
  using Acc = float[8][4];
  int r0, c0;
  const float* a_lane;
  const float* b_lane;
  __device__ WarpMma(const uint32_t* sA, const uint32_t* sB, int wm, int wn, int lane)
      : r0(wm * kWarpM + (lane >> 3)),
        c0(wn * kWarpN + 4 * (lane & 7)),
        a_lane(reinterpret_cast<const float*>(sA) + r0 * kLdA<ExactF32>),
        b_lane(reinterpret_cast<const float*>(sB) + c0) {}
  __device__ static float at(const float4& v, int i) { return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w; }
  __device__ void run(Acc& acc, int stage) const {
    const float* a = a_lane + stage * kATile<ExactF32>;
    const float* b = b_lane + stage * kBTile;
    // Unrolled by 2 (8 k, 256 FFMA per trip), not 8: fully unrolled, the scheduler hoists
    // more LDS ahead and the scalar-weight variants (8 staged weights live) spill.
#pragma unroll 2
    for (int k4 = 0; k4 < kBK; k4 += 4) {
      float4 bv[4];  // rows k4 .. k4 + 3, the lane's 4 columns
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) bv[kk] = *reinterpret_cast<const float4*>(b + (k4 + kk) * kLdB);
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const float4 av = *reinterpret_cast<const float4*>(a + 4 * i * kLdA<ExactF32> + k4);
#pragma unroll
        for (int kk = 0; kk < 4; ++kk)
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(at(av, kk), at(bv[kk], j), acc[i][j]);
      }
    }
  }
  // A lane's row of 4 outputs is one 16-byte store (a quarter warp: 128 contiguous bytes).
  template <class Bias>
  __device__ void write(const Acc& acc, uint32_t* so, const Bias& bias_of) const {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int r = r0 + 4 * i;
      const float bv = bias_of(r);
      *reinterpret_cast<uint4*>(so + r * kLdO<ExactF32> + c0) =
          uint4{__float_as_uint(acc[i][0] + bv), __float_as_uint(acc[i][1] + bv), __float_as_uint(acc[i][2] + bv),
                __float_as_uint(acc[i][3] + bv)};
    }
  }
};

// S: __half, __nv_bfloat16, float (TF32) or ExactF32 (FFMA). Operands and output move as
// raw words (word_t<S>); only the operand rounding (IgElem), the warp's compute and its
// accumulators' write to the output tile (WarpMma) see S.
// VEC_W: K % kVec<S> == 0 and w 16-byte aligned, so the weight tile loads as 16-byte
// pieces (one per thread for 16-bit, two for f32), copied by cp.async straight into
// shared memory (no registers, no zeroing, no shared store), instead of 8 scalars. MASK:
// kh * kw <= 32, so each pixel's in-image taps fit one 32-bit mask and a gathered element
// is an address (one IMAD.WIDE off the pixel's 64-bit base), a LOP3 into a predicate and
// the load; else the general per-element bounds test.
template <class S, bool VEC_W, bool MASK>
__global__ void __launch_bounds__(kIgThreads, 2)
    conv2d_igemm_kernel(IgemmGeom g, const word_t<S>* __restrict__ x, const word_t<S>* __restrict__ w,
                        const value_t<S>* __restrict__ bias, word_t<S>* __restrict__ out) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  using E = IgElem<S>;
  using Word = word_t<S>;
  using Pair = typename E::Pair;
  extern __shared__ __align__(128) unsigned char ig_smem[];  // kSmemBytes<S>
  Word* const sA = reinterpret_cast<Word*>(ig_smem);         // 2 x kATile: [m][k]
  Word* const sB = sA + 2 * kATile<S>;                       // 2 x kBTile: [k][pixel]; later the output tile
  using TapT = std::conditional_t<MASK, MaskTap, Tap>;
  __shared__ __align__(16) TapT tab[2][kBK];  // slots tap_slot<S>(k % kBK)
  __shared__ int toff[kBK];                   // mask path: offset of tap tp = (i, j) in an image

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int wm = warp >> 2, wn = warp & 3;  // this warp's 32 x 32 outputs: rows wm * 32, columns wn * 32
  const int m0 = int(blockIdx.x % unsigned(g.m_tiles)) * kBM;
  const int n0 = int(blockIdx.x / unsigned(g.m_tiles)) * kBN;

  // This thread's two pixels (InTile<S>::pixel: columns col, col + 1 of the output tile),
  // for the whole block; it gathers (and writes) 8 rows of them (tap_slot).
  const int pair = tid % kPairs, col = 2 * pair, brow = tid / kPairs;
  const Pixel px[2] = {make_pixel<MASK>(g, n0 + InTile<S>::pixel(pair, 0)),
                       make_pixel<MASK>(g, n0 + InTile<S>::pixel(pair, 1))};
  // Mask path: the pixels' 64-bit base addresses (never dereferenced themselves; a tap
  // whose bit is set lands inside x).
  const uint64_t xbase[2] = {reinterpret_cast<uint64_t>(x) + sizeof(Word) * uint64_t(int64_t(px[0].pix)),
                             reinterpret_cast<uint64_t>(x) + sizeof(Word) * uint64_t(int64_t(px[1].pix))};

  // This thread's 16-byte weight pieces (VEC_W): row and first k in the A tile.
  auto a_piece_row = [&](int i) { return (tid + kIgThreads * i) / (kBK / kVec<S>); };
  auto a_piece_k = [&](int i) { return kVec<S> * ((tid + kIgThreads * i) % (kBK / kVec<S>)); };
  // Global -> registers for K step s (tap table tb): issued together, used after the mma.
  uint32_t ra[VEC_W ? 1 : kALoads];  // zero-extended words
  uint32_t rb[kBLoads][2];           // zero-extended words
  auto load = [&](int s, const TapT* tb, int stage) {
    if constexpr (VEC_W) {  // pieces of kVec k (K % kVec == 0: all in or all out)
#pragma unroll
      for (int i = 0; i < kAPieces<S>; ++i) {
        const int r = a_piece_row(i), kq = a_piece_k(i);
        const int m = m0 + r, k = s * kBK + kq;
        const bool in = k < g.K && m < g.Cout;
        cp_async16(smem_addr(sA + stage * kATile<S> + r * kLdA<S> + kq), w + uint32_t(in ? m * g.K + k : 0),
                   in ? 16 : 0);
      }
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
          rb[i][e] = load_bit<Word>(xbase[e] + sizeof(Word) * uint64_t(int64_t(t.off)), px[e].taps, t.bit);
        else
          rb[i][e] = load_if(x + (px[e].pix + t.off), px[e].iy0 + t.dy, g.H, px[e].ix0 + t.dx, g.W);
      }
    }
  };
  // Registers -> shared buffer `stage` (A: [m][k], B: [k][pixel]).
  auto store = [&](int stage) {
    [[maybe_unused]] Word* a = sA + stage * kATile<S>;
    Word* b = sB + stage * kBTile;
    if constexpr (VEC_W) {
      cp_async_wait_all();  // this thread's pieces of A are in; the barrier after store publishes them
    } else {
#pragma unroll
      for (int i = 0; i < kALoads; ++i) a[(warp + kARows * i) * kLdA<S> + lane] = Word(ra[i]);
    }
    InTile<S>::store(b, pair, brow, rb);
  };

  typename WarpMma<S>::Acc acc = {};
  const WarpMma<S> mma(sA, sB, wm, wn, lane);

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
    tab[0][tap_slot<S>(lane)] = next_tap(lane);
    tab[1][tap_slot<S>(lane)] = next_tap(kBK + lane);
  }
  __syncthreads();
  load(0, tab[0], 0);
  store(0);
  __syncthreads();
  // TF32 with weight pieces: two steps per trip, so each buffer's shared addresses are
  // constants rather than recomputed from the stage every step (about 30 instructions
  // fewer per step); the scalar-weight variants would spill, the others keep their code.
  constexpr int kUnroll = std::is_same_v<S, float> && VEC_W ? 2 : 1;
#pragma unroll kUnroll
  for (int s = 0; s < steps; ++s) {
    const int cur = s & 1;
    const bool next = s + 1 < steps;
    if (next) load(s + 1, tab[cur ^ 1], cur ^ 1);
    mma.run(acc, cur);
    if (next) store(cur ^ 1);
    if (warp == 0 && s + 2 < steps) tab[cur][tap_slot<S>(lane)] = next_tap((s + 2) * kBK + lane);
    __syncthreads();
  }

  // Epilogue: acc + bias (f32) rounded once to S into the output tile [channel][pixel] ...
  mma.write(acc, sB, [&](int r) {
    const int co = m0 + r;
    return bias != nullptr && co < g.Cout ? to_compute(bias[co]) : 0.0f;
  });
  __syncthreads();
  // ... then out[b, co, oh, ow] for this thread's two pixels (which may lie in two images),
  // rows brow, brow + kBRows, ...: a warp writes 64 consecutive pixels of a row.
  const bool ok0 = px[0].obase >= 0, ok1 = px[1].obase >= 0;
#pragma unroll 4
  for (int r = brow; r < kBM; r += kBRows) {
    const int co = m0 + r;
    if (co >= g.Cout) break;
    const Pair v = *reinterpret_cast<const Pair*>(sB + r * kLdO<S> + col);
    if (ok0) out[px[0].obase + co * g.P] = E::first(v);
    if (ok1) out[px[1].obase + co * g.P] = E::second(v);
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
  using Word = word_t<S>;
  const Word* xd = dptr<const Word>(x) + x.offset();
  const Word* wd = dptr<const Word>(weight) + weight.offset();
  using V = value_t<S>;
  const V* bias = p.bias.defined() ? dptr<const V>(p.bias) + p.bias.offset() : nullptr;
  Word* od = dptr<Word>(out) + out.offset();
  const bool vec_w = g.K % kVec<S> == 0 && reinterpret_cast<uintptr_t>(wd) % 16 == 0;
  const bool mask = kh * kw <= 32;
  auto kernel = vec_w ? (mask ? conv2d_igemm_kernel<S, true, true> : conv2d_igemm_kernel<S, true, false>)
                      : (mask ? conv2d_igemm_kernel<S, false, true> : conv2d_igemm_kernel<S, false, false>);
  constexpr size_t smem = kSmemBytes<S>;
  if constexpr (smem > kDefaultSmem) {
    // Above the default dynamic shared memory: opt in once per kernel and device (the
    // attribute is per device). Bit v * 2 + m of the device's word: kernel <S, v, m>.
    static std::atomic<uint64_t> opted_in[64];
    const uint64_t bit = uint64_t(1) << (int(vec_w) * 2 + int(mask));
    std::atomic<uint64_t>& dev_bits = opted_in[be.ordinal() & 63];
    if (!(dev_bits.load(std::memory_order_relaxed) & bit)) {
      WICK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
      dev_bits.fetch_or(bit, std::memory_order_relaxed);
    }
  }
  kernel<<<unsigned(blocks), kIgThreads, smem, be.stream()>>>(g, xd, wd, bias, od);
  check_launch("conv");
}

}  // namespace

bool conv2d_igemm(CudaBackend& be, const ConvParams& p, const Tensor& x, const Tensor& weight, const Tensor& out) {
  if (p.transposed || p.groups != 1 || !fits_32bit(p, x, weight, out)) return false;
  switch (x.dtype()) {
    case DType::F16: launch<__half>(be, p, x, weight, out); return true;
    case DType::BF16: launch<__nv_bfloat16>(be, p, x, weight, out); return true;
    case DType::F32:  // TF32 tensor cores only when allowed: f32 convs are exact by default
      if (allow_tf32())
        launch<float>(be, p, x, weight, out);
      else
        launch<ExactF32>(be, p, x, weight, out);
      return true;
    default: return false;
  }
}

}  // namespace wick::cuda
