#pragma once
// Elementwise steps of the fused decode step (core/model/llama_decode_cpu.cpp) on fp32 rows,
// 16 lanes at a time where the CPU has AVX-512F, 8 with AVX2 alone, a scalar loop otherwise: the
// same results on each, bit for bit; but exp (expShifted, siluInPlace) is a polynomial within
// 2 ulp in the vector loops, e^x below -87.3 (and -inf) comes out ~1e-38 there, and
// expShifted's sum is added in lanes.
// detail::capKernels (cpu_matmul.h) runs the slower loops, for tests.

#include <cstdint>

namespace crosslab::model {

// With `bf16` each result is rounded to bf16 (round to nearest even, NaN to 0x7FC0:
// c10::BFloat16's conversion, bit for bit) where the op-by-op path stores a bf16 tensor;
// without it, plain fp32.
//   roundBf16:      v[i] = r(v[i])                                          (bf16 only)
//   scaleRoundMax:  s[t] = r(r(s[t]) * scale); returns the max (-inf for len 0; the first of equal ones)
//   divideRound:    s[t] = r(s[t] / d)
//   addRound:       x[i] = r(x[i] + r(y[i]) if roundY, else x[i] + y[i])
//   mulRound:       g[i] = r(r(g[i]) * u[i])
void roundBf16(float* v, int64_t n);
float scaleRoundMax(float* s, int64_t len, float scale, bool bf16);
void divideRound(float* s, int64_t len, float d, bool bf16);
void addRound(float* x, const float* y, int64_t n, bool roundY, bool bf16);
void mulRound(float* g, const float* u, int64_t n, bool bf16);
//   normRound:      out[i] = r(w[i] * r(x[i] * inv))     (RMSNorm's scaling; w fp32 or bf16 bits)
//   ropeRound:      v[i] = r(r(v[i] cos[i]) + r(-v[i+half] sin[i])),
//                   v[i+half] = r(r(v[i+half] cos[i]) + r(v[i] sin[i]))    for i < half
void normRound(const float* x, float inv, const float* w, float* out, int64_t n, bool bf16);
void normRound(const float* x, float inv, const uint16_t* w, float* out, int64_t n, bool bf16);
void ropeRound(float* v, const float* cos, const float* sin, int64_t half, bool bf16);
// out[i] = the bf16 bits of r(v[i]) (of v[i] itself when it is already a bf16 value).
void toBf16Bits(const float* v, uint16_t* out, int64_t n);
// Σ x[i]² in double (8 partial sums: the order differs from a sequential loop by ~1e-16).
double sumSquares(const float* x, int64_t n);
// s[t] = e^(s[t] - shift) for values <= shift (softmax after its max); returns the sum.
float expShifted(float* s, int64_t len, float shift);
// g[i] = silu(g[i]) = g / (1 + e^-g), fp32.
void siluInPlace(float* g, int64_t n);

}  // namespace crosslab::model
