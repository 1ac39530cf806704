// Aliasing checks for in-place ops: the rules of docs/ops.md, "Aliasing rules for in-place
// ops", in one place so that every op that writes into a caller's tensor applies them alike.
//
//   - A destination whose layout maps two indices to one element (an expand()ed view)
//     is refused: the result would depend on the order of the writes.
//   - An input that shares memory with the destination is read through a private copy
//     when it could be overwritten before it is read, so the in-place op gives what the
//     out-of-place op would. Elementwise ops may keep an input that views exactly the
//     destination's elements in its order (copy_ of a tensor onto itself).
#pragma once

#include <string_view>

#include "wick/tensor.h"

namespace wick::detail {

// True when two distinct index tuples of layout address one element: a stride of 0 over
// a dim of size > 1 (expand, broadcast_as), or a hand-made layout whose strides collide.
// Exact for layouts whose strides nest (every view wick makes of a non-overlapping
// tensor) and, by enumeration, for other layouts up to 2^20 elements; a larger layout
// with colliding-looking strides is reported as overlapping.
bool has_internal_overlap(const Layout& layout);

enum class Overlap {
  None,     // no byte in common
  Same,     // the same elements in the same order (same address, element size, shape, strides)
  Partial,  // anything else that may share a byte
};
// How the memory of a and b (on one device) relates. Decided from the byte ranges the
// two layouts span, refined by one exact case: views with one element size whose start
// elements differ by a non-multiple of the gcd of all their strides (even and odd columns)
// are disjoint. Other interleaved views that are in fact disjoint count as Partial.
Overlap memory_overlap(const Tensor& a, const Tensor& b);

// Raises InvalidArgument naming op when dst has internal overlap.
void check_no_internal_overlap(std::string_view op, const Tensor& dst);

// `in` itself when it shares no memory with dst, otherwise a private contiguous copy of
// it: for ops that read inputs in another order than they write dst (index_copy_), where
// even an input equal to dst could be overwritten before it is read.
Tensor unaliased_input(const Tensor& dst, const Tensor& in);

}  // namespace wick::detail
