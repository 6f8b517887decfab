#pragma once
// Shared by the CPU kernel files (cpu_matmul.cpp, cpu_elementwise.cpp): the AVX-512 intrinsics
// and the target attributes they compile under (runtime-checked: f32KernelsAvailable /
// bf16KernelsAvailable in cpu_matmul.h), and the few helpers both use. Internal: not for
// files that are not kernels.

// GCC 12 reports -W(maybe-)uninitialized inside immintrin.h's AVX-512 intrinsics that pass
// _mm512_undefined_*() through (a false positive). GCC judges by the location of the warning,
// here the header's lines, so the header alone is read with those two silenced.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <cstdint>
#include <cstring>

#define CROSSLAB_F32_TARGET __attribute__((target("avx512f")))
#define CROSSLAB_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512bf16")))

namespace crosslab::model::simd {

// Horizontal sums through memory: GCC 12's _mm512_reduce_add_ps trips -Wmaybe-uninitialized.
CROSSLAB_F32_TARGET inline float sum16(__m512 v) {
  alignas(64) float t[16];
  _mm512_store_ps(t, v);
  float s = 0;
  for (float x : t) s += x;
  return s;
}

// The first `left` of 16 lanes (all of them for 16 or more).
CROSSLAB_F32_TARGET inline __mmask16 laneMask(int64_t left) {
  return left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
}

inline float bf16ToFloat(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace crosslab::model::simd
