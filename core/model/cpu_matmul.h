#pragma once
// Matrix products for decode steps on the CPU: Y = X Wᵀ with fp32 accumulation, where W is a
// weight matrix [rows, k] (row-major, streamed once per product) and X holds the few
// activation rows of a decode batch [n, k]. libtorch 1.13's paths leave speed unused at these
// shapes: at n = 1 its bf16 linear (oneDNN) is compute-bound and OpenBLAS sgemv reaches ~75%
// of a single sequential AVX-512 stream per row (measured on the 128256 x 768 LM head); at
// small n every op pays dispatch, allocation and conversion costs that dwarf the product.
//
// Three kernels, chosen by n:
//   n = 1       one W row at a time, four accumulators along k: a single sequential stream
//               keeps the hardware prefetcher ahead (measured 2.3x the bandwidth of four
//               interleaved rows); four rows' sums reduced together. Bandwidth-bound.
//   2 <= n < 16 tiles of 4 W rows x 4 X rows, every product vectorised along k (all lanes
//               busy: at these n even a weight read from memory is used often enough for the
//               arithmetic to count), the four W rows' sums reduced together at the end.
//   n >= 16     X repacked so that one vector holds 16 rows' values at the same k; each W
//               value is broadcast against it, so a tile of W rows x 16..64 X rows
//               accumulates with no horizontal reductions (about twice the throughput of the
//               reducing kernel at n = 32 here). Compute-bound. With one vector (16 rows or
//               fewer in a chunk) eight steps of k at a time, each W row's eight values read
//               from one address (matmul_bench, one thread, f32 384 x 128 at 16 rows: 140 ->
//               169 GFLOP/s; the same bits).
// Without AVX-512 (AVX512-BF16 for bf16) a portable loop computes the same products, eight
// lanes at a time where the CPU has AVX2 (four W rows against two X rows, the portable loop's
// sums bit for bit; a bf16 X given as fp32 read as it is; a W of 512 KB or more requested a
// couple of blocks ahead) — except at 16+ X rows on a CPU with AVX2 and FMA, where the packed
// kernels' design runs in eight lanes (cpu_matmul_packed.cpp: X packed in groups of 32 rows,
// W values broadcast, the chain of FMAs over k; `taskset -c 1 matmul_bench` at 16 to 64 rows,
// 28 old/new pairs: 0.89-2.25x the four-by-two loop's GFLOP/s, median 1.27x).

#include <cstdint>
#include <vector>

namespace crosslab::model {

// True when the CPU has AVX-512F (f32 kernels) / AVX512-BF16 and BW (bf16 kernels).
bool f32KernelsAvailable();
bool bf16KernelsAvailable();
// True where matmulRows runs vector code for that type: the AVX-512 kernels, or without them
// the AVX2 loop (a CPU with neither gets the portable loop, slower than libtorch's products).
bool vectorRowsAvailable(bool bf16);

// The X side of a product, prepared once and shared by the threads that split W's rows.
// T = float, or uint16_t holding bf16 bits. `x` (row-major [n, k]) must outlive this.
template <class T>
struct MatmulRows {
  MatmulRows(const T* x, int64_t n, int64_t k);
  // Packs into `buffer` (grown, never shrunk), so that a caller doing many products reuses one
  // allocation instead of a fresh one (page faults and zero fill) per product.
  MatmulRows(const T* x, int64_t n, int64_t k, std::vector<T>& buffer);
  MatmulRows(const MatmulRows&) = delete;
  MatmulRows& operator=(const MatmulRows&) = delete;
  const T* x;
  int64_t n, k;
  const T* packed = nullptr;  // n >= 16: chunks of up to 64 rows, k-interleaved (see cpu_matmul.cpp)
  // bf16: x's values as fp32 (exact), where the caller holds them so (the fused step's
  // activations, projectRows' rows without the AVX-512 BF16 kernels); the AVX2 loop reads these
  // instead of widening x at every use. nullptr: none.
  const float* widened = nullptr;
  // 16+ rows without the AVX-512 kernels, where the CPU has AVX2 and FMA: x's values as fp32,
  // packed for the AVX2 packed loop (see detail::matmulPackedAvx2); bf16 once widen() gave them.
  // nullptr: none.
  const float* packedAvx2 = nullptr;
  // bf16: x's values as fp32 (exact), held by the caller: sets `widened` and, where the AVX2
  // packed loop will read them, `packedAvx2` (packed into `buffer`, grown, never shrunk).
  void widen(const float* wide, std::vector<float>& buffer);

 private:
  std::vector<T> own_;
};

// How many of W's rows one thread's share of Y = X Wᵀ must hold at least (W [rows, k], X n
// rows): enough that the share streams >= 256K weights or does >= 1M multiply-adds. Waking
// the thread team for less costs more than it saves: on the 2-vCPU VM a wake after ~100 µs of
// single-threaded work measured ~100 µs, while the demo model's whole LM head (964 x 128) at
// one row takes ~15 µs on one thread.
int64_t matmulGrain(int64_t k, int64_t n);

// Y[b * ldy + r] = W_r · X_b for r in [0, rows) and b in [0, x.n); w points at the first of
// the rows (a thread's share of the matrix), y at that row's column. With roundOut each value
// ends rounded to bf16 (the bits roundBf16 gives afterwards): the packed bf16 kernels (16+
// rows) round as they store, so a bf16 model's LM head does not read its 0.5 MB logit rows a
// second time to round them; the other kernels round in a pass after their product.
void matmulRows(const float* w, int64_t rows, const MatmulRows<float>& x, float* y, int64_t ldy, bool roundOut = false);
void matmulRows(const uint16_t* w, int64_t rows, const MatmulRows<uint16_t>& x, float* y, int64_t ldy,
                bool roundOut = false);

// The LoRA expands (defined in cpu_expand.cpp).
// How the LoRA expands below leave a sum s in Y: stored (y = s), added (y = y + s, an fp32
// model's LoRA term), or added as a bf16 model adds it (y = r(y + r(s)), r rounding to bf16:
// addRound(y, s, …, true, true) in cpu_elementwise.h) — the sums never pass through memory.
enum class ExpandStore { Set, Add, AddRounded };

// Y[b * ldy + j] (.)= sum_i X[b * ldx + i] * Wt[i * out + j] for b in [0, n), j in [0, out): W
// given transposed (Wt [k, out]), for a small k such as a LoRA expand's rank; X's rows ldx
// apart (0: k), so that one expand can read its columns of a shrink shared by several
// projections. Vector multiply-adds run along the output, i in order (FMAs with AVX-512; a
// multiply then an add with AVX2, the portable loop's bits); no horizontal sum per output (the
// gemv's cost when k is 16).
void matmulTransposed(const float* wt, int64_t k, int64_t out, const float* x, int64_t n, float* y, int64_t ldy,
                      ExpandStore store = ExpandStore::Set, int64_t ldx = 0);
void matmulTransposed(const uint16_t* wt, int64_t k, int64_t out, const float* x, int64_t n, float* y, int64_t ldy,
                      ExpandStore store = ExpandStore::Set, int64_t ldx = 0);

// A bf16 model's LoRA expand, Y[b * ldy + j] (.)= sum_i X[b * ldx + i] * B[j * k + i] with B [out, k]
// bf16 and X's values bf16 (the shrink's output after its rounding; held as floats): the same
// sums, bit for bit, as matmulTransposed over Bᵀ widened to fp32 (each product exact, added
// in i's order, rounded at each add; AVX512-BF16 treats subnormal inputs and results as zero,
// so a sum that passes below 2^-126 may differ: LoRA terms do not come near), from half the
// bytes of B and half the multiply-adds: VDPBF16PS on pairs of the rank against B laid out by
// packExpandBf16 (blocks of 64 outputs; per pair of i, each output's two values as one 32-bit
// lane; zero padded). Without AVX512-BF16, the same layout read one i at a time (AVX2, or the
// portable loop): the same sums.
int64_t expandBf16PackedSize(int64_t k, int64_t out);  // uint16 values
void packExpandBf16(const uint16_t* b, int64_t out, int64_t k, uint16_t* packed);
void expandBf16(const uint16_t* packed, int64_t k, int64_t out, const float* x, int64_t n, float* y, int64_t ldy,
                ExpandStore store = ExpandStore::Set, int64_t ldx = 0);

// For tests: the loop that runs without the AVX-512 kernels on a CPU with AVX2 (the portable
// loop's sums bit for bit, eight lanes at a time), and the portable loop itself; x unpacked.
namespace detail {
// Runs the slower loops on this CPU: every kernel it has (All), the AVX2 loops where it has
// AVX-512 (NoAvx512), or the portable loops (Portable), in every kernel file (matrix rows, LoRA
// expands, attention rows, elementwise steps). For tests of the loops themselves: only while no
// model is loaded or decoding (a model packs its LoRA weights for the kernels it will use).
enum class KernelCap { All, NoAvx512, Portable };
void capKernels(KernelCap cap);
// capKernels(cap) for a scope: back to All however the scope ends (a failed QVERIFY returns).
struct CappedKernels {
  explicit CappedKernels(KernelCap cap) { capKernels(cap); }
  ~CappedKernels() { capKernels(KernelCap::All); }
  CappedKernels(const CappedKernels&) = delete;
  CappedKernels& operator=(const CappedKernels&) = delete;
};
bool avx2RowsAvailable();
// Lines of W the AVX2 loop has requested ahead of its blocks on this thread so far: a block of
// four rows requests the block two further on, when its share of W is 512 KB or more.
int64_t matmulAheadLinesIssued();
void matmulRowsAvx2(const float* w, int64_t rows, const MatmulRows<float>& x, float* y, int64_t ldy);
void matmulRowsAvx2(const uint16_t* w, int64_t rows, const MatmulRows<uint16_t>& x, float* y, int64_t ldy);
// The packed loop for 16+ X rows on CPUs with AVX2 and FMA (cpu_matmul_packed.cpp): W [rows, k]
// (a bf16 W widened as it is read) against X as MatmulRows::packedAvx2 holds it: groups of up to
// 32 rows, each padded to 16 or 32 (zeros), group g at g * 32 * k, its element (i, b) at
// i * width + b. Each sum is the chain of fused multiply-adds over k from zero, as the AVX-512
// fp32 packed kernel's. matmulRows runs it where the AVX-512 kernels are not used.
bool avx2PackedAvailable();
void matmulPackedAvx2(const float* w, int64_t rows, int64_t k, const float* xp, int64_t n, float* y, int64_t ldy);
void matmulPackedAvx2(const uint16_t* w, int64_t rows, int64_t k, const float* xp, int64_t n, float* y, int64_t ldy);
void matmulRowsPortable(const float* w, int64_t rows, const MatmulRows<float>& x, float* y, int64_t ldy);
void matmulRowsPortable(const uint16_t* w, int64_t rows, const MatmulRows<uint16_t>& x, float* y, int64_t ldy);
}  // namespace detail

}  // namespace crosslab::model
