#include "constrain.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "wick/error.h"
#include "wick/ops.h"

namespace wick::serve {

namespace {

constexpr float kNever = -std::numeric_limits<float>::infinity();

void set_bit(std::vector<uint32_t>& mask, int32_t id, bool on) {
  const uint32_t bit = 1u << (uint32_t(id) % 32);
  mask[size_t(id) / 32] = on ? mask[size_t(id) / 32] | bit : mask[size_t(id) / 32] & ~bit;
}

}  // namespace

bool settled_mask(text::GrammarMatcher& matcher, size_t table_vocab, int64_t vocab, std::span<const int32_t> stops,
                  std::vector<uint32_t>& mask) {
  const size_t table_words = (table_vocab + 31) / 32, words = (size_t(vocab) + 31) / 32;
  mask.assign(std::max(table_words, words), 0);
  matcher.fill_mask(std::span(mask).first(table_words));
  mask.resize(words);  // ids past the model's never come
  if (vocab % 32) mask.back() &= (1u << (vocab % 32)) - 1;
  const bool can_end = matcher.can_end();
  for (const int32_t t : stops) set_bit(mask, t, can_end);
  return std::any_of(mask.begin(), mask.end(), [](uint32_t w) { return w != 0; });
}

void apply_mask(std::span<float> row, std::span<const uint32_t> mask) {
  for (size_t id = 0; id < row.size(); ++id)
    if (id / 32 >= mask.size() || !((mask[id / 32] >> (id % 32)) & 1)) row[id] = kNever;
}

Tensor bit_table(Device device) {
  std::vector<uint8_t> bits(256 * 8);
  for (size_t b = 0; b < 256; ++b)
    for (size_t j = 0; j < 8; ++j) bits[b * 8 + j] = uint8_t((b >> j) & 1);
  return Tensor::from_vector(bits, Shape{256, 8}).to(device);
}

Tensor masked_argmax(const Tensor& logits, std::span<const int64_t> rows,
                     std::span<const std::vector<uint32_t>* const> masks, const Tensor& bits) {
  WICK_CHECK(rows.size() == masks.size() && !rows.empty(), Internal, "masked_argmax: ", rows.size(), " rows and ",
             masks.size(), " masks");
  const int64_t vocab = logits.shape()[1];
  const auto row_bytes = size_t(vocab + 7) / 8;
  // One upload (each waits for the device): the masks, then the rows' indices as bytes when
  // every one fits a byte (index_select takes u8 indices). Words are little-endian on the
  // hosts wick builds for: byte k of a row's mask holds ids 8k..8k+7.
  const auto n = int64_t(rows.size());
  const bool byte_rows = *std::max_element(rows.begin(), rows.end()) < 256;
  const size_t mask_bytes = rows.size() * row_bytes;
  std::vector<uint8_t> packed(mask_bytes + (byte_rows ? rows.size() : 0));
  for (size_t r = 0; r < rows.size(); ++r) {
    WICK_CHECK(masks[r]->size() * 4 >= row_bytes, Internal, "masked_argmax: a mask of ", masks[r]->size(),
               " words for ", vocab, " ids");
    std::memcpy(packed.data() + r * row_bytes, masks[r]->data(), row_bytes);
    if (byte_rows) packed[mask_bytes + r] = uint8_t(rows[r]);
  }
  const Device dev = logits.device();
  const Tensor up = Tensor::from_data(packed.data(), DType::U8, packed.size(), Shape{int64_t(packed.size())}, dev);
  const Tensor ids = up.narrow(0, 0, int64_t(mask_bytes)).reshape({n, int64_t(row_bytes)});
  const Tensor index = byte_rows ? up.narrow(0, int64_t(mask_bytes), n)
                                 : Tensor::from_vector(std::vector<int64_t>(rows.begin(), rows.end())).to(dev);
  const Tensor allowed = embedding(ids, bits).reshape({n, int64_t(row_bytes) * 8}).narrow(1, 0, vocab);
  const Tensor picked = index_select(logits, 0, index);
  const Tensor never = full(Shape{}, kNever, logits.dtype(), dev);
  return argmax(where(allowed, picked, never), -1);
}

}  // namespace wick::serve
