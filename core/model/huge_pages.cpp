#include "core/model/huge_pages.h"

#include <ATen/ATen.h>

#include <sys/mman.h>

#include <cstdint>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define CROSSLAB_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define CROSSLAB_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define CROSSLAB_POISON(p, n) ((void)(p), (void)(n))
#define CROSSLAB_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace crosslab::model {

namespace {

constexpr size_t kHugePage = size_t(2) << 20;

// `bytes` (a multiple of kHugePage) of fresh anonymous memory on a 2 MiB boundary: mapped with
// one page to spare, the unaligned head and tail handed back. The kernel fills anonymous pages
// with zeros at their first touch, so nothing needs zeroing here, and a page never touched
// never joins the resident set: a KV cache allocated for every row and position costs memory
// only as far as sequences fill it (glibc's aligned_alloc below its mmap threshold, 32 MiB at
// most, may hand back reused heap memory, which would need a memset that touches every page).
void* mapAligned(size_t bytes) {
  const size_t span = bytes + kHugePage;
  void* raw = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > start) ::munmap(raw, aligned - start);
  const uintptr_t end = aligned + bytes, spanEnd = start + span;
  if (spanEnd > end) ::munmap(reinterpret_cast<void*>(end), spanEnd - end);
  void* p = reinterpret_cast<void*>(aligned);
  ::madvise(p, bytes, MADV_HUGEPAGE);  // advisory: without THP the pages are ordinary
  return p;
}

at::Tensor allocate(at::IntArrayRef shape, at::ScalarType dtype, bool zero) {
  const auto options = at::TensorOptions().dtype(dtype);
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  const size_t bytes = size_t(numel) * at::elementSize(dtype);
  if (bytes < kHugePage) return zero ? at::zeros(shape, options) : at::empty(shape, options);
  const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = mapAligned(rounded);  // zero-filled by the kernel: `zero` needs nothing more
  // Under ASan the slack after the tensor is poisoned, so a read or write past its end is
  // still reported (memory from mmap has no redzones of its own).
  CROSSLAB_POISON(static_cast<char*>(p) + bytes, rounded - bytes);
  return at::from_blob(p, shape,
                       [rounded](void* q) {
                         CROSSLAB_UNPOISON(q, rounded);
                         ::munmap(q, rounded);
                       },
                       options);
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
