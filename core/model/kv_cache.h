#pragma once
// Preallocated key/value cache for incremental decoding: per layer [B, nkv, capacity, hd],
// with a length per batch row so a batched server can hold sequences at different positions.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace crosslab::model {

struct KvCache {
  std::vector<at::Tensor> keys;    // per layer [B, nkv, capacity, hd]
  std::vector<at::Tensor> values;  // per layer [B, nkv, capacity, hd]
  std::vector<int64_t> lengths;    // tokens held per row
  int64_t capacity = 0;

  int64_t length(size_t row) const { return lengths[row]; }
  bool uniform() const;  // every row at the same length
  void reset();          // forget every row (the memory stays allocated)
};

}  // namespace crosslab::model
