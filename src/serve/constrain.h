// Grammar masks applied to a step's logits (engine_step.cpp): a sequence's mask settled
// with its stop tokens, then applied on the host (sampled rows) or on the logits' device
// (greedy rows, so that only the chosen ids come back, not vocabulary-wide rows).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "wick/tensor.h"
#include "wick/text/grammar.h"

namespace wick::serve {

// The matcher's next mask over `vocab` ids (the model's; ids past the token table's are
// never allowed), with the stop tokens allowed exactly when the text so far is a sentence.
// False when nothing at all is allowed (a dead end).
bool settled_mask(text::GrammarMatcher& matcher, size_t table_vocab, int64_t vocab, std::span<const int32_t> stops,
                  std::vector<uint32_t>& mask);

// row with every id the mask does not allow at -inf.
void apply_mask(std::span<float> row, std::span<const uint32_t> mask);

// The first maximum (argmax's pick) of each of `rows` of logits (R, vocab) among the ids its
// mask allows: i64 (rows.size()) on the logits' device, computed without waiting for it. The packed masks go to the
// logits' device (vocab / 8 bytes a row) and are unpacked there through `bits`, the (256, 8) u8 table of each byte's
// bits (bit_table()), so a constrained greedy row costs 8 bytes back instead of its whole row.
Tensor masked_argmax(const Tensor& logits, std::span<const int64_t> rows,
                     std::span<const std::vector<uint32_t>* const> masks, const Tensor& bits);

// The (256, 8) u8 table whose row b holds b's bits, lowest first, on device.
Tensor bit_table(Device device);

}  // namespace wick::serve
