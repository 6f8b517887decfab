#pragma once
// CPU tensors whose memory the kernel is asked to back with 2 MiB pages (transparent huge
// pages; where the kernel's mode is `madvise` only advised memory gets them). For what is
// written whole when a model loads: weights copied or converted from the file (a 1B model in
// f32 is 1.2 million 4 KiB pages) and the KV cache, allocated for every row and position at
// once (`serve`'s default, 36 rows x 4k positions, is gigabytes). Each 4 KiB page's first touch
// is a page fault, and on a VM a costly one: `serve` of a 1B model in f32 became ready in 16-18 s
// instead of 61-63 (README, twenty-third session). Decode speed did not move measurably.

#include <ATen/core/Tensor.h>

namespace crosslab::model {

// Zero-filled, contiguous, on the CPU. Below 2 MiB (nothing to gain) a plain at::zeros.
// Where the kernel has no transparent huge pages the advice is ignored and the memory is
// ordinary; the tensor is the same either way.
at::Tensor hugePageZeros(at::IntArrayRef shape, at::ScalarType dtype);

// Uninitialised (the first write faults the pages in).
at::Tensor hugePageEmpty(at::IntArrayRef shape, at::ScalarType dtype);

// The bytes of `t` (any dtype, any device) as a contiguous CPU tensor of `dtype` in such memory.
at::Tensor hugePageCopy(const at::Tensor& t, at::ScalarType dtype);

}  // namespace crosslab::model
