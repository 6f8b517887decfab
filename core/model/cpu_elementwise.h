#pragma once
// Elementwise steps of the fused decode step (core/model/llama_decode_cpu.cpp) on fp32 rows,
// 16 lanes at a time where the CPU has AVX-512F, a scalar loop with the same results otherwise.

#include <cstdint>

namespace crosslab::model {

// With `bf16` each result is rounded to bf16 (round to nearest even, NaN to 0x7FC0:
// c10::BFloat16's conversion, bit for bit) where the op-by-op path stores a bf16 tensor;
// without it, plain fp32.
//   roundBf16:      v[i] = r(v[i])                                          (bf16 only)
//   scaleRoundMax:  s[t] = r(r(s[t]) * scale); returns the max (-inf for len 0)
//   divideRound:    s[t] = r(s[t] / d)
//   addRound:       x[i] = r(x[i] + r(y[i]) if roundY, else x[i] + y[i])
//   mulRound:       g[i] = r(r(g[i]) * u[i])
void roundBf16(float* v, int64_t n);
float scaleRoundMax(float* s, int64_t len, float scale, bool bf16);
void divideRound(float* s, int64_t len, float d, bool bf16);
void addRound(float* x, const float* y, int64_t n, bool roundY, bool bf16);
void mulRound(float* g, const float* u, int64_t n, bool bf16);
// s[t] = e^(s[t] - shift) for values <= shift (softmax after its max); returns the sum.
float expShifted(float* s, int64_t len, float shift);
// g[i] = silu(g[i]) = g / (1 + e^-g), fp32.
void siluInPlace(float* g, int64_t n);

}  // namespace crosslab::model
