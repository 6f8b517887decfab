#include "core/model/huge_pages.h"

#include <ATen/ATen.h>

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <new>

namespace crosslab::model {

namespace {

constexpr size_t kHugePage = size_t(2) << 20;

// Uninitialised unless `zero` (the first write faults the pages in, as huge pages when the
// kernel has them).
at::Tensor allocate(at::IntArrayRef shape, at::ScalarType dtype, bool zero) {
  const auto options = at::TensorOptions().dtype(dtype);
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  const size_t bytes = size_t(numel) * at::elementSize(dtype);
  if (bytes < kHugePage) return zero ? at::zeros(shape, options) : at::empty(shape, options);
  const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, rounded);
  if (!p) throw std::bad_alloc();
  ::madvise(p, rounded, MADV_HUGEPAGE);  // advisory: without THP the pages are ordinary
  if (zero) std::memset(p, 0, bytes);
  return at::from_blob(p, shape, [](void* q) { std::free(q); }, options);
}

}  // namespace

at::Tensor hugePageZeros(at::IntArrayRef shape, at::ScalarType dtype) { return allocate(shape, dtype, true); }

at::Tensor hugePageEmpty(at::IntArrayRef shape, at::ScalarType dtype) { return allocate(shape, dtype, false); }

at::Tensor hugePageCopy(const at::Tensor& t, at::ScalarType dtype) {
  at::Tensor out = hugePageEmpty(t.sizes(), dtype);
  out.copy_(t);
  return out;
}

}  // namespace crosslab::model
