#pragma once
// CPU tensors whose memory the kernel is asked to back with 2 MiB pages (transparent huge
// pages, madvise mode as on Debian 12). Batch-1 decode streams every weight once per token and
// the fused step's attention walks each row's keys and values at every step: with 4 KiB pages
// that is a TLB miss every 4 KiB (a 1B model in f32 is 1.2 million pages, a 32-row cache of
// the demo model thousands scattered over its capacity), with 2 MiB pages one per 2 MiB.

#include <ATen/core/Tensor.h>

namespace crosslab::model {

// Zero-filled, contiguous, on the CPU. Below 2 MiB (nothing to gain) a plain at::zeros.
// Where the kernel has no transparent huge pages the advice is ignored and the memory is
// ordinary; the tensor is the same either way.
at::Tensor hugePageZeros(at::IntArrayRef shape, at::ScalarType dtype);

// The bytes of `t` (any dtype, any device) as a contiguous CPU tensor of `dtype` in such memory.
at::Tensor hugePageCopy(const at::Tensor& t, at::ScalarType dtype);

}  // namespace crosslab::model
