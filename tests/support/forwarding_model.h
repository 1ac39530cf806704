// A CausalLM that passes forward() and its cache's layout on to another model and offers
// nothing else (no batched decode step, forward_batch the default one): the tests wrap a
// real model in it to take features away or to add a failure.
#pragma once

#include "wick/models/causal_lm.h"

namespace wick::test {

class ForwardingModel : public models::CausalLM {
 public:
  explicit ForwardingModel(const models::CausalLM& m) : m_(m) {}
  int64_t vocab_size() const override { return m_.vocab_size(); }
  int64_t context_length() const override { return m_.context_length(); }
  Device device() const override { return m_.device(); }
  DType dtype() const override { return m_.dtype(); }
  Tensor forward(const Tensor& ids, models::KvCache* c, bool last) const override { return m_.forward(ids, c, last); }
  void reserve_cache(models::KvCache& c) const override { m_.reserve_cache(c); }

 protected:
  const models::CausalLM& m_;
};

}  // namespace wick::test
