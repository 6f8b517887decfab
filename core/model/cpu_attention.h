#pragma once
// Attention rows of the fused decode step (core/model/llama_decode_cpu.cpp): one row's query
// heads against the cached keys and values of the kv head they share, AVX-512 where the CPU
// has it (bf16KernelsAvailable in cpu_matmul.h), otherwise the portable loops' sums (AVX2
// loops where the CPU has AVX2).

#include <cstdint>

namespace crosslab::model {

// The bytes a caller reads right after this call (the pair's values after its keys, the next
// (row, kv head) pair's keys after the values): the vector kernels prefetch them into L2 as
// they read their own rows, a line as each line's worth of their rows is read, so the next call
// does not start cold (the portable loops do not). One pair's cached rows are a short stream (a
// 260-token row of the demo model: 16 KB) that the hardware prefetchers pick up only after a few
// misses, and the next pair's start a cache capacity further on: with many streams the kernels
// waited on memory at each start (matmul_bench --attention ROWS:LEN:HD:HEADS:CAP, CAP = LEN
// against 2048, --read-ahead on|off). Empty: nothing.
struct ReadAhead {
  const void* data = nullptr;
  int64_t bytes = 0;
};

// Attention of `heads` query heads (q row-major [heads, hd]) over the cached rows of the kv
// head they share (row-major [len, hd]; bf16 as uint16_t bits), fp32 arithmetic; each cached
// row is read from memory once for all the heads (bf16 scores for one or two heads: once per
// head, sixteen rows at a time, the second read from L1), and each head's result is
// bit-identical to computing it alone (heads = 1):
//   s[h * ss + t] = q_h · K_t        out[h * hd + d] += sum_t p[h * ps + t] V_t[d] (t in order)
// Without the AVX-512 kernels: each score summed over d in order and each output over t in
// order, a multiply and an add at a time (eight at a time where the CPU has AVX2, the same bits).
void dotRows(const float* q, int64_t heads, const float* k, int64_t len, int64_t hd, float* s, int64_t ss,
             ReadAhead next = {});
void dotRows(const float* q, int64_t heads, const uint16_t* k, int64_t len, int64_t hd, float* s, int64_t ss,
             ReadAhead next = {});
// The same with bf16 queries (bits): each product of two bf16 values exact, summed in fp32 in
// pairs (AVX512-BF16's VDPBF16PS, half the work of widening the keys, which reads denormal
// inputs as zero and flushes denormal sums; without it the queries are widened and summed as
// the fp32 rows above are). Each head
// bit-identical to computing it alone here too.
void dotRows(const uint16_t* q, int64_t heads, const uint16_t* k, int64_t len, int64_t hd, float* s, int64_t ss,
             ReadAhead next = {});
void weightedRows(const float* p, int64_t heads, int64_t ps, const float* v, int64_t len, int64_t hd, float* out,
                  ReadAhead next = {});
void weightedRows(const float* p, int64_t heads, int64_t ps, const uint16_t* v, int64_t len, int64_t hd, float* out,
                  ReadAhead next = {});
// The same with bf16 weights (bits): exact products summed in fp32 two cached rows at a time
// (VDPBF16PS, t + 1's product first, denormals as above), not t by t, into two partial sums
// (rows 4i, 4i + 1 onto `out`; rows 4i + 2, 4i + 3 and an odd last row from zero) added at
// the end.
void weightedRows(const uint16_t* p, int64_t heads, int64_t ps, const uint16_t* v, int64_t len, int64_t hd, float* out,
                  ReadAhead next = {});

// Keys in blocks of eight positions, each block transposed: position t's value at d is
// kb[(t / 8) * hd * 8 + d * 8 + t % 8]. The AVX2 score loops want eight positions' values at one
// d in one vector; from row-major keys they transpose them at every call, about three quarters
// of the scores' time. The fused step keeps such a copy of the cached keys beside the cache
// where those loops run (keyBlocksHelp: AVX2 and no AVX-512 kernels; KvCache::keyBlocks),
// copying each key in as it is written.
bool keyBlocksHelp();
// Positions from … to-1 of row-major keys k ([*, hd]) into the blocks kb.
void copyToKeyBlocks(const float* k, int64_t from, int64_t to, int64_t hd, float* kb);
void copyToKeyBlocks(const uint16_t* k, int64_t from, int64_t to, int64_t hd, uint16_t* kb);
// dotRows' scores (fp32 queries) from positions 0 … len-1 of blocked keys: the same bits as
// dotRows without the AVX-512 kernels (each score summed over d in order, a multiply and an add
// at a time). A last partial block's lanes past len are read (any values) and not stored.
void dotKeyBlocks(const float* q, int64_t heads, const float* kb, int64_t len, int64_t hd, float* s, int64_t ss,
                  ReadAhead next = {});
void dotKeyBlocks(const float* q, int64_t heads, const uint16_t* kb, int64_t len, int64_t hd, float* s, int64_t ss,
                  ReadAhead next = {});

// Lines of ReadAhead ranges the kernels have prefetched on this thread so far (for tests).
int64_t readAheadLinesIssued();

}  // namespace crosslab::model
