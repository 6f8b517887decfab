#pragma once
// CPU tensors whose memory the kernel is asked to back with 2 MiB pages (transparent huge
// pages; where the kernel's mode is `madvise` only advised memory gets them). For what is
// written whole when a model loads: weights copied or converted from the file (a 1B model in
// f32 is 1.2 million 4 KiB pages) and the KV cache, allocated for every row and position at
// once (`serve`'s default, 36 rows x 4k positions, is gigabytes). Each 4 KiB page's first touch
// is a page fault, and on a VM a costly one: `serve` of a 1B model in f32 became ready in 16-18 s
// instead of 61-63 (README, twenty-third session). Decode speed did not move measurably.
// From 2 MiB up the memory is a fresh anonymous mapping: the kernel zero-fills each page at its
// first touch, so zeros cost nothing up front and a page never written is never resident (a
// 1B f32 server's 10 GB cache: ready in ~5 s at 4.9 GB RSS instead of 20-33 s at 14.5 GB,
// README, twenty-fourth session).

#include <ATen/core/Tensor.h>

namespace crosslab::model {

// Zero-filled, contiguous, on the CPU; from 2 MiB up resident only as far as it is written.
// Below 2 MiB (nothing to gain) a plain at::zeros.
// Where the kernel has no transparent huge pages the advice is ignored and the memory is
// ordinary; the tensor is the same either way.
at::Tensor hugePageZeros(at::IntArrayRef shape, at::ScalarType dtype);

// Uninitialised (the first write faults the pages in).
at::Tensor hugePageEmpty(at::IntArrayRef shape, at::ScalarType dtype);

// The bytes of `t` (any dtype, any device) as a contiguous CPU tensor of `dtype` in such memory.
at::Tensor hugePageCopy(const at::Tensor& t, at::ScalarType dtype);

}  // namespace crosslab::model
