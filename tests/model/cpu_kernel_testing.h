#pragma once
// Shared by the CPU kernel tests (test_cpu_matmul, test_cpu_attention, test_cpu_elementwise).
// First: the kernels' header silences GCC 12's false -Wuninitialized inside immintrin.h, which
// only works where it is the one that includes immintrin.h (Qt's headers may include it too).
#include "core/model/cpu_simd.h"

#include <QtTest>

#include <cstdint>
#include <cstring>
#include <initializer_list>

#include "core/model/cpu_matmul.h"

namespace crosslab::model::testing {

inline uint16_t toBf16(float f) {  // round to nearest even
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFF + ((u >> 16) & 1);
  return uint16_t(u >> 16);
}
inline float fromBf16(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

using detail::KernelCap;

// Runs `check` with the kernels capped at each of `caps` (detail::capKernels): every kernel
// this CPU has, the AVX2 loops in place of the AVX-512 ones (where it has AVX2; the portable
// loop where not), the portable loops; so that each loop is checked on any CPU that has it.
// Stops at the first cap whose check fails, saying which.
template <class F>
void onEachPath(std::initializer_list<KernelCap> caps, F check) {
  for (KernelCap cap : caps) {
    detail::capKernels(cap);
    // the loops asked for run: no AVX-512 below All, no AVX2 at Portable
    QVERIFY(cap == KernelCap::All || (!f32KernelsAvailable() && !bf16KernelsAvailable()));
    QCOMPARE(detail::avx2RowsAvailable(), cap != KernelCap::Portable && __builtin_cpu_supports("avx2"));
    check();
    if (QTest::currentTestFailed()) {
      qWarning("failed with the kernels capped at %s",
               cap == KernelCap::All ? "none" : cap == KernelCap::NoAvx512 ? "no AVX-512" : "portable");
      break;
    }
  }
  detail::capKernels(KernelCap::All);
}
template <class F>
void onEveryPath(F check) {
  onEachPath({KernelCap::All, KernelCap::NoAvx512, KernelCap::Portable}, check);
}

}  // namespace crosslab::model::testing
