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
  // The fused decode step's copy of the keys in blocks of eight positions (cpu_attention.h,
  // keyBlocksHelp), where its scores read them from there: per layer [B, nkv, ceil(capacity /
  // 8), hd, 8], in the keys' dtype; empty elsewhere. blocked (int64 [B]): row b's positions
  // 0 … blocked[b]-1 are copied there, never more than lengths[b]. Writes that append to a row
  // leave its copy valid; whoever shortens a row or replaces its positions goes through
  // setLength or replaceRow. Views of some rows narrow these as they narrow keys and values.
  std::vector<at::Tensor> keyBlocks;
  at::Tensor blocked;

  int64_t length(size_t row) const { return lengths[row]; }
  bool uniform() const;  // every row at the same length
  void reset();          // forget every row (the memory stays allocated)
  void setLength(size_t row, int64_t len);   // a row cut back (or grown by appending)
  void replaceRow(size_t row, int64_t len);  // a row's positions 0 … len-1 written anew
  void copyRow(size_t from, size_t to);      // row `from` (keys, values, key blocks, length) into `to`
  // Whether keyBlocks fits keys: as many layers, each [B, nkv, ceil(capacity / 8), hd, 8].
  bool hasKeyBlocks() const;
};

}  // namespace crosslab::model
