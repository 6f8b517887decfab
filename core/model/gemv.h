#pragma once
// Matrix-vector products for batch-1 decode, y = W x with fp32 accumulation, where the
// time is reading W once. libtorch 1.13's paths for M = 1 leave bandwidth unused: its bf16
// linear (oneDNN) is compute-bound, OpenBLAS sgemv reaches ~75% of what a single
// sequential AVX-512 stream per row does (measured on the 128256 x 768 LM head).

#include <cstdint>

namespace crosslab::model {

// True when the CPU has AVX512-BF16 (checked once).
bool bf16GemvAvailable();

// w: bf16 bits, row-major [rows, k]; x: bf16 bits [k]; y: fp32 [rows].
// Only call when bf16GemvAvailable().
void bf16Gemv(const uint16_t* w, const uint16_t* x, float* y, int64_t rows, int64_t k);

// True when the CPU has AVX-512F. f32: w [rows, k] row-major, x [k], y [rows].
bool f32GemvAvailable();
void f32Gemv(const float* w, const float* x, float* y, int64_t rows, int64_t k);

}  // namespace crosslab::model
