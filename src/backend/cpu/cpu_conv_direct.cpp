// Direct forward convolution in f32 (cpu_conv_direct.h).
//
// Layout. A work item is one band of output rows [oh0, oh0 + rows) of one image and group.
// Its input rows (all cig channels) are copied, converted to f32, into a band buffer
// whose rows are padded with pw zeros on each side (wp = W + 2 pw floats) and where rows
// above or below the image are zeros: input (ih, iw) of the band sits at
// [ih - (oh0 sh - ph)][iw + pw] of its channel's plane. Output (oh, ow) at tap (i, j) then
// reads [(oh - oh0) sh + i dh][ow + j dw]: for a fixed tap, outputs along a row read
// consecutive floats, and with sh = 1 so do the outputs of consecutive rows if each row is
// given wp positions (its last wp - OW are the padding between rows: computed, never
// stored). A run is such a sequence of positions: the whole band when sh = 1, else one
// output row; runs are cut into tiles of kNr positions.
//
// A tile's kMr x kNr sums are kept in registers over one block of input channels (K steps of
// cig_block * kh * kw): per step three unaligned loads of 8 inputs and kMr broadcast weights
// (packed per tile of channels as [k][kMr], zero past cog), 12 FMAs. The sums go to a staging
// buffer laid out like the runs (one per output channel of a pass), where the next input
// block adds to them; a pass's channels are then copied out row by row. Writing each tile
// straight into the output planes instead (kMr x 24 floats in each of up to 64 planes at a
// time) outran the store prefetchers when K is short. Loop order per item: blocks of channel
// tiles whose weights and staging fit L2, then tiles, then blocks of input channels, then
// channel tiles, so a tile's inputs over one input block are reused from L1 by every channel
// tile.
#include "backend/cpu/cpu_conv_direct.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <type_traits>
#include <vector>

#include "backend/convert.h"
#include "backend/cpu/thread_pool.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define WICK_CONV_DIRECT_SIMD 1
#endif

namespace wick::cpu {

#ifdef WICK_CONV_DIRECT_SIMD
namespace {

// Output channels x positions of a tile: 12 accumulators + 3 inputs + 1 weight = 16 ymm.
constexpr int64_t kMr = 4, kNr = 24;
// A band buffer, a block of packed weights and the staged sums of a pass share an L2 (512 KB
// on the dev machine's Zen 3): a tile's inputs then come from L1 after the first channel
// tile, and the weights and sums from L2.
constexpr int64_t kBandBytes = int64_t(160) << 10;
constexpr int64_t kWeightBlockBytes = int64_t(192) << 10;
constexpr int64_t kStageBytes = int64_t(128) << 10;
// A tile's inputs over one block of input channels (kh rows of about kNr + (kw - 1) dw
// floats each) stay in L1 (32 KB) across the channel tiles.
constexpr int64_t kTileInputBytes = int64_t(16) << 10;
// Multiply-adds per thread below which another thread costs more than it saves.
constexpr int64_t kTaskWork = int64_t(1) << 18;

// a_v += w * x_v for the tile's first NV vectors.
template <int NV>
inline void fma_row(__m256 w, __m256 x0, __m256 x1, __m256 x2, __m256& a0, __m256& a1, __m256& a2) {
  a0 = _mm256_fmadd_ps(w, x0, a0);
  if constexpr (NV > 1) a1 = _mm256_fmadd_ps(w, x1, a1);
  if constexpr (NV > 2) a2 = _mm256_fmadd_ps(w, x2, a2);
}

// acc[m * acc_stride + e] (+)= sum over ci < cig, t < taps of w[(ci * taps + t) * kMr + m] *
// in[ci * plane + tap[t] + e], for m < kMr and e < 8 NV (a run's last tile may need fewer
// than kNr positions): adds to acc's values when `accumulate`, else overwrites them. Named
// accumulators: GCC keeps them in registers (an array of them would go through memory every
// step); those past NV are never used and vanish.
template <int NV>
void tile_kernel(const float* in, int64_t plane, int64_t cig, const int64_t* tap, int64_t taps, const float* w,
                 float* acc, int64_t acc_stride, bool accumulate) {
  static_assert(NV >= 1 && NV * 8 <= kNr);
  __m256 a00 = _mm256_setzero_ps(), a01 = a00, a02 = a00, a10 = a00, a11 = a00, a12 = a00;
  __m256 a20 = a00, a21 = a00, a22 = a00, a30 = a00, a31 = a00, a32 = a00;
  __m256* const rows[kMr][3] = {{&a00, &a01, &a02}, {&a10, &a11, &a12}, {&a20, &a21, &a22}, {&a30, &a31, &a32}};
  if (accumulate)
    for (int64_t m = 0; m < kMr; ++m)
      for (int64_t v = 0; v < NV; ++v) *rows[m][v] = _mm256_loadu_ps(acc + m * acc_stride + v * 8);
  const __m256 zero = _mm256_setzero_ps();
  for (int64_t ci = 0; ci < cig; ++ci, in += plane) {
    for (int64_t t = 0; t < taps; ++t, w += kMr) {
      const float* p = in + tap[t];
      const __m256 x0 = _mm256_loadu_ps(p);
      const __m256 x1 = NV > 1 ? _mm256_loadu_ps(p + 8) : zero, x2 = NV > 2 ? _mm256_loadu_ps(p + 16) : zero;
      fma_row<NV>(_mm256_broadcast_ss(w), x0, x1, x2, a00, a01, a02);
      fma_row<NV>(_mm256_broadcast_ss(w + 1), x0, x1, x2, a10, a11, a12);
      fma_row<NV>(_mm256_broadcast_ss(w + 2), x0, x1, x2, a20, a21, a22);
      fma_row<NV>(_mm256_broadcast_ss(w + 3), x0, x1, x2, a30, a31, a32);
    }
  }
  for (int64_t m = 0; m < kMr; ++m)
    for (int64_t v = 0; v < NV; ++v) _mm256_storeu_ps(acc + m * acc_stride + v * 8, *rows[m][v]);
}

using TileKernel = void (*)(const float*, int64_t, int64_t, const int64_t*, int64_t, const float*, float*, int64_t,
                            bool);
// By the number of 8-position vectors a tile needs.
constexpr TileKernel kTileKernels[] = {nullptr, tile_kernel<1>, tile_kernel<2>, tile_kernel<3>};

// The sizes of one convolution and how it is cut into bands and tiles.
struct Plan {
  int64_t n, groups, c_in, c_out, cig, cog;
  int64_t h, w, oh, ow, kh, kw;
  int64_t sh, ph, pw, dh, dw;
  int64_t wp;                // floats per band row: pw zeros, W inputs, pw zeros
  int64_t band, bands;       // output rows per band (the last may have fewer), bands per image
  int64_t plane;             // floats per channel of a band buffer
  int64_t ncb, cb_block;     // channel tiles per group; how many share one pass over the band
  int64_t ci_block;          // input channels summed per pass of a tile through the channel tiles
  int64_t stage_channel;     // floats of one output channel of a band in the staging buffer
  std::vector<int64_t> tap;  // tap (i, j) as an offset in a plane: i dh wp + j dw

  int64_t taps() const { return kh * kw; }
  int64_t k() const { return cig * taps(); }
  // Input rows that `rows` output rows read.
  int64_t rows_in(int64_t rows) const { return (rows - 1) * sh + (kh - 1) * dh + 1; }
};

Plan make_plan(const ConvParams& p, const Tensor& x, const Tensor& weight, const Tensor& out) {
  Plan pl;
  pl.n = x.dim(0), pl.groups = p.groups, pl.c_in = x.dim(1), pl.c_out = out.dim(1);
  pl.cig = pl.c_in / pl.groups, pl.cog = pl.c_out / pl.groups;
  pl.h = x.dim(2), pl.w = x.dim(3), pl.oh = out.dim(2), pl.ow = out.dim(3);
  pl.kh = weight.dim(2), pl.kw = weight.dim(3);
  pl.sh = p.stride[0], pl.ph = p.padding[0], pl.pw = p.padding[1], pl.dh = p.dilation[0], pl.dw = p.dilation[1];
  pl.wp = pl.w + 2 * pl.pw;
  // The most output rows whose band buffer fits kBandBytes (at least one), then bands of
  // equal height.
  const int64_t row_bytes = pl.cig * pl.wp * int64_t(sizeof(float));
  int64_t band = 1;
  while (band < pl.oh && pl.rows_in(band + 1) * row_bytes <= kBandBytes) ++band;
  pl.bands = (pl.oh + band - 1) / band;
  pl.band = (pl.oh + pl.bands - 1) / pl.bands;
  // A tile's last loads reach kNr - 1 positions past its run and (kw - 1) dw past the row.
  pl.plane = pl.rows_in(pl.band) * pl.wp + kNr + (pl.kw - 1) * pl.dw;
  pl.ncb = (pl.cog + kMr - 1) / kMr;
  pl.stage_channel = pl.sh == 1 ? (pl.band * pl.wp + kNr - 1) / kNr * kNr : pl.band * ((pl.ow + kNr - 1) / kNr * kNr);
  const int64_t cb_fit = std::min(kWeightBlockBytes / (pl.k() * kMr * int64_t(sizeof(float))),
                                  kStageBytes / (pl.stage_channel * kMr * int64_t(sizeof(float))));
  pl.cb_block = std::clamp<int64_t>(cb_fit, 1, pl.ncb);
  const int64_t channel_tile_bytes = pl.kh * (kNr + (pl.kw - 1) * pl.dw + 16) * int64_t(sizeof(float));
  pl.ci_block = std::clamp<int64_t>(kTileInputBytes / channel_tile_bytes, 1, pl.cig);
  for (int64_t i = 0; i < pl.kh; ++i)
    for (int64_t j = 0; j < pl.kw; ++j) pl.tap.push_back(i * pl.dh * pl.wp + j * pl.dw);
  return pl;
}

// Where the weights of channel tile cb over input channels [ci0, ci0 + ci_block) start in a
// group's packed weights: blocks of input channels, in each the channel tiles one after the
// other, so the tiles of one pass read one sequential stream.
int64_t panel_offset(const Plan& pl, int64_t cb, int64_t ci0) {
  return (ci0 * pl.ncb + cb * std::min(pl.ci_block, pl.cig - ci0)) * pl.taps() * kMr;
}

// The weights as f32 panels [group][input channel block][channel tile][k][kMr], zero past cog.
template <class T>
std::unique_ptr<float[]> pack_weights(const Plan& pl, const T* w) {
  const int64_t k = pl.k(), taps = pl.taps(), tiles = pl.groups * pl.ncb;
  auto packed = std::make_unique_for_overwrite<float[]>(size_t(tiles * k * kMr));
  parallel_for(tiles, std::max<int64_t>(1, kElementwiseGrain / (k * kMr)), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t g = t / pl.ncb, cb = t % pl.ncb;
      for (int64_t ci0 = 0; ci0 < pl.cig; ci0 += pl.ci_block) {
        float* dst = packed.get() + g * pl.ncb * k * kMr + panel_offset(pl, cb, ci0);
        const int64_t n = std::min(pl.ci_block, pl.cig - ci0) * taps;
        for (int64_t m = 0; m < kMr; ++m) {
          const int64_t co = cb * kMr + m;
          if (co >= pl.cog) {
            for (int64_t i = 0; i < n; ++i) dst[i * kMr + m] = 0.0f;
            continue;
          }
          const T* src = w + (g * pl.cog + co) * k + ci0 * taps;
          for (int64_t i = 0; i < n; ++i) dst[i * kMr + m] = convert<float>(src[i]);
        }
      }
    }
  });
  return packed;
}

// The band buffer of output rows [oh0, oh0 + rows): rows_in(rows) input rows of each of the
// group's cig channels (x_group: its first channel), zero-padded, as f32.
template <class T>
void fill_band(const Plan& pl, const T* x_group, int64_t oh0, int64_t rows, float* buf) {
  const int64_t ih0 = oh0 * pl.sh - pl.ph, n_rows = pl.rows_in(rows);
  for (int64_t ci = 0; ci < pl.cig; ++ci) {
    const T* src = x_group + ci * pl.h * pl.w;
    for (int64_t r = 0; r < n_rows; ++r) {
      float* d = buf + ci * pl.plane + r * pl.wp;
      const int64_t ih = ih0 + r;
      if (ih < 0 || ih >= pl.h) {
        std::fill(d, d + pl.wp, 0.0f);
        continue;
      }
      const T* s = src + ih * pl.w;
      std::fill(d, d + pl.pw, 0.0f);
      for (int64_t iw = 0; iw < pl.w; ++iw) d[pl.pw + iw] = convert<float>(s[iw]);
      std::fill(d + pl.pw + pl.w, d + pl.wp, 0.0f);
    }
  }
}

// All outputs of one band of one image and group (out_group: the group's first output
// channel). The tiles' sums go to `stage` (per thread): per channel, each run's positions
// (rounded up to whole tiles), as the kernel computes them; a pass's channels are then
// copied out row by row, each a contiguous stretch of its output plane.
template <class T>
void compute_band(const Plan& pl, const float* buf, const float* w_group, const float* bias_group, int64_t oh0,
                  int64_t rows, float* stage, T* out_group) {
  const int64_t plane_out = pl.oh * pl.ow;
  // sh = 1: one run over the band, wp positions per row; else a run per output row.
  const int64_t runs = pl.sh == 1 ? 1 : rows, len = pl.sh == 1 ? rows * pl.wp : pl.ow;
  const int64_t run_stride = (len + kNr - 1) / kNr * kNr, chan_stride = runs * run_stride;
  const int64_t row_stride = pl.sh == 1 ? pl.wp : run_stride;  // output row r at r * row_stride
  for (int64_t cb0 = 0; cb0 < pl.ncb; cb0 += pl.cb_block) {
    const int64_t cb1 = std::min(cb0 + pl.cb_block, pl.ncb);
    for (int64_t run = 0; run < runs; ++run) {
      const float* src = buf + run * pl.sh * pl.wp;
      float* run_stage = stage + run * run_stride;
      for (int64_t q0 = 0; q0 < len; q0 += kNr) {
        const TileKernel kernel = kTileKernels[(std::min(kNr, len - q0) + 7) / 8];
        for (int64_t ci0 = 0; ci0 < pl.cig; ci0 += pl.ci_block)
          for (int64_t cb = cb0; cb < cb1; ++cb)
            kernel(src + q0 + ci0 * pl.plane, pl.plane, std::min(pl.ci_block, pl.cig - ci0), pl.tap.data(), pl.taps(),
                   w_group + panel_offset(pl, cb, ci0), run_stage + (cb - cb0) * kMr * chan_stride + q0, chan_stride,
                   ci0 > 0);
      }
    }
    for (int64_t co = cb0 * kMr; co < std::min(cb1 * kMr, pl.cog); ++co) {
      const float* st = stage + (co - cb0 * kMr) * chan_stride;
      T* o = out_group + co * plane_out + oh0 * pl.ow;
      const float b = bias_group[co];
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < pl.ow; ++c) o[r * pl.ow + c] = convert<T>(st[r * row_stride + c] + b);
    }
  }
}

template <class T>
void direct_kernel(const ConvParams& p, const Tensor& x, const Tensor& weight, const Tensor& out) {
  const Plan pl = make_plan(p, x, weight, out);
  const auto w_packed = pack_weights(pl, static_cast<const T*>(weight.data()));
  std::vector<float> bias(size_t(pl.c_out), 0.0f);
  if (p.bias.defined()) {
    const T* b = static_cast<const T*>(p.bias.data());
    for (int64_t c = 0; c < pl.c_out; ++c) bias[size_t(c)] = convert<float>(b[c]);
  }
  const T* x_all = static_cast<const T*>(x.data());
  T* out_all = static_cast<T*>(out.mutable_data());
  // Items go out one at a time from a shared counter rather than in fixed halves: the last
  // band of an image is shorter, and on a machine shared with other work a thread may start late.
  const int64_t items = pl.n * pl.groups * pl.bands;
  const double work = double(items) * double(pl.band * pl.ow) * double(pl.cog * pl.k());
  const int64_t workers =
      std::clamp<int64_t>(int64_t(std::min(work / double(kTaskWork), 1e9)), 1, std::min<int64_t>(num_threads(), items));
  std::atomic<int64_t> next{0};
  parallel_for(workers, 1, [&](int64_t, int64_t) {
    // Zeroed once: the slack past each plane's rows is read (by discarded positions), never written.
    const auto buf = std::make_unique<float[]>(size_t(pl.cig * pl.plane));
    const auto stage = std::make_unique_for_overwrite<float[]>(size_t(pl.cb_block * kMr * pl.stage_channel));
    for (int64_t item; (item = next.fetch_add(1)) < items;) {
      const int64_t b = item % pl.bands, g = item / pl.bands % pl.groups, img = item / pl.bands / pl.groups;
      const int64_t oh0 = b * pl.band, rows = std::min(pl.band, pl.oh - oh0);
      fill_band(pl, x_all + (img * pl.c_in + g * pl.cig) * pl.h * pl.w, oh0, rows, buf.get());
      compute_band(pl, buf.get(), w_packed.get() + g * pl.ncb * pl.k() * kMr, bias.data() + g * pl.cog, oh0, rows,
                   stage.get(), out_all + (img * pl.c_out + g * pl.cog) * pl.oh * pl.ow);
    }
  });
}

}  // namespace
#endif

bool conv_direct_applies(const ConvParams& p, const Tensor& x, const Tensor& weight) {
#ifdef WICK_CONV_DIRECT_SIMD
  const DType dt = x.dtype();
  if (p.transposed || p.stride[1] != 1 || !(dt == DType::F32 || dt == DType::F16 || dt == DType::BF16)) return false;
  // A 1x1 stride-1 unpadded conv is one GEMM per image with no im2col at all (cpu_conv.cpp).
  const bool plain_gemm =
      weight.dim(2) == 1 && weight.dim(3) == 1 && p.stride[0] == 1 && p.padding == (std::array<int64_t, 2>{0, 0});
  return !plain_gemm;
#else
  (void)p, (void)x, (void)weight;
  return false;
#endif
}

void conv_direct(const ConvParams& p, const Tensor& x, const Tensor& weight, const Tensor& out) {
  WICK_CHECK(conv_direct_applies(p, x, weight), Internal, "conv (cpu): the direct kernel does not apply here");
#ifdef WICK_CONV_DIRECT_SIMD
  dispatch_float(x.dtype(), "conv", [&]<class T>() {
    if constexpr (std::is_same_v<compute_t<T>, float>) direct_kernel<T>(p, x, weight, out);
  });
#endif
}

}  // namespace wick::cpu
