// LlamaModel::decodeStepCpu: one new token for each of B sequences on the CPU, each at its own
// position in its own KV-cache row, each with at most one runtime LoRA adapter — computed in
// plain loops over the weights' memory instead of ~20 ATen ops per layer. Each weight matrix
// is streamed once per step for all B rows (core/model/cpu_matmul.h: a small GEMM with the
// rows as the inner dimension); attention runs per row over that row's own slots; LoRA
// adapters are applied per group of rows sharing one (one shrink and one expand per adapter).
// At small sizes the ops are tiny and libtorch's per-op cost (dispatch, allocation, dtype
// conversions, OpenMP regions) is most of the time: on the demo model (hidden 128, 4 layers)
// this path decodes several times faster than the op-by-op path, and on `small` it removes
// the overhead around the bandwidth-bound products at B = 1.
//
// It computes what LlamaModel::hidden computes for T = 1, op for op, including where the
// op-by-op path rounds to the activation dtype: in bf16 every intermediate that ATen stores as
// a bf16 tensor is rounded to bf16 here too (round-to-nearest-even, c10's conversion), while
// sums accumulate in fp32 as ATen's bf16 kernels do. Only the summation order inside dot
// products differs. tests/model/test_llama_reference.cpp compares both paths and the PyTorch
// reference; tests/serve/test_batch_scheduler.cpp compares batched, sequential and op-by-op ids.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include <unistd.h>

#include "core/model/cpu_attention.h"
#include "core/model/cpu_elementwise.h"
#include "core/model/cpu_matmul.h"
#include "core/model/huge_pages.h"
#include "core/model/kv_cache.h"
#include "core/model/llama.h"
#include "core/util/step_crew.h"

namespace crosslab::model {
namespace {

// Activations are held in fp32; M::round rounds them to what the dtype can store.
struct F32Math {
  static constexpr bool kBf16 = false;
  using Storage = float;
  using Bits = float;  // what the matmul kernels take
  static float round(float x) { return x; }
  static float load(float x) { return x; }
  static float store(float x) { return x; }
};
struct Bf16Math {
  static constexpr bool kBf16 = true;
  using Storage = at::BFloat16;
  using Bits = uint16_t;
  static float round(float x) { return float(at::BFloat16(x)); }
  static float load(at::BFloat16 x) { return float(x); }
  static at::BFloat16 store(float x) { return at::BFloat16(x); }
};

// n activation rows of `width` values, row-major, fp32.
struct Rows {
  std::vector<float> v;
  int64_t n = 0, width = 0;
  void resize(int64_t rows, int64_t w) {
    n = rows;
    width = w;
    v.resize(size_t(rows * w));
  }
  float* row(int64_t b) { return v.data() + b * width; }
  const float* row(int64_t b) const { return v.data() + b * width; }
};

// Charges the time since the previous charge to one field of DecodeTimes (nothing when off).
class PhaseClock {
 public:
  explicit PhaseClock(DecodeTimes* times) : times_(times) {
    if (times_) last_ = std::chrono::steady_clock::now();
  }
  void charge(double DecodeTimes::*field) {
    if (!times_) return;
    const auto now = std::chrono::steady_clock::now();
    times_->*field += std::chrono::duration<double>(now - last_).count();
    last_ = now;
  }

 private:
  DecodeTimes* times_;
  std::chrono::steady_clock::time_point last_;
};

// The X side of products, prepared once for every weight matrix that reads it (Q, K, V and
// their LoRA shrinks read the same normalised rows; so do gate and up): X in the storage type
// and, for 16+ rows, packed for the kernels (core/model/cpu_matmul.h). Buffers are reused.
template <class M>
struct PreparedX {
  using Bits = typename M::Bits;
  std::vector<typename M::Storage> xs;
  std::vector<Bits> packed;
  std::vector<float> packedAvx2;  // bf16 without AVX-512 BF16: the fp32 rows packed (MatmulRows::widen)
  std::unique_ptr<MatmulRows<Bits>> rows;
  const Rows* source = nullptr;
  void prepare(const Rows& x) {
    // Grown only: the layer's inputs alternate between widths (hidden, heads, intermediate), and
    // each regrowth of a shrunk vector zero-fills the new part (a bf16 vector's element by
    // element: 1.2% of a demo-model server's engine samples at 32 streams, `perf`).
    const size_t count = x.v.size();
    if (xs.size() < count) xs.resize(count);
    if constexpr (M::kBf16)  // exact: x is already rounded
      toBf16Bits(x.v.data(), reinterpret_cast<uint16_t*>(xs.data()), int64_t(count));
    else
      std::memcpy(xs.data(), x.v.data(), sizeof(float) * count);
    rows = std::make_unique<MatmulRows<Bits>>(reinterpret_cast<const Bits*>(xs.data()), x.n, x.width, packed);
    if constexpr (M::kBf16) rows->widen(x.v.data(), packedAvx2);  // the same values, fp32
    source = &x;
  }
};

template <class M>
struct Scratch {
  PreparedX<M> in;        // a layer input, shared by the products that read it
  PreparedX<M> gathered;  // one adapter's rows of it, when not all rows have that adapter
  std::vector<LoraRows> groups;
  std::vector<int64_t> local;  // one adapter's rows within this step's row range, 0-based
  Rows gatheredRows, mid;
};

// The model's step crew while this thread computes a step as one group (set by
// decodeStepCpu): its parallel loops split over the crew's threads, whose workers poll
// between runs, instead of OpenMP's pool, whose workers a server keeps asleep (a wake of a
// sleeping vCPU per product, tens of microseconds on a VM; the cause of a cliff in
// throughput once products grew large enough to be split).
thread_local util::StepCrew* tlStepCrew = nullptr;
thread_local DecodeTimes* tlStepTimes = nullptr;  // counts the loops run on tlStepCrew

// at::parallel_for's split (up to the thread count, chunks of at least `grain`), on the step's
// crew; inside a row group of a split step (core/util/step_crew.h) the loop runs on the
// group's own thread, as it would inside an OpenMP region; at::parallel_for without a crew.
template <class F>
void parallelFor(int64_t begin, int64_t end, int64_t grain, const F& f) {
  if (begin >= end) return;
  if (util::StepCrew::inJob()) {
    f(begin, end);
    return;
  }
  if (!tlStepCrew) {
    at::parallel_for(begin, end, grain, f);
    return;
  }
  const int64_t range = end - begin;
  const int64_t chunks = std::min<int64_t>(at::get_num_threads(), (range + grain - 1) / std::max<int64_t>(1, grain));
  if (chunks <= 1) {
    f(begin, end);
    return;
  }
  const int64_t size = (range + chunks - 1) / chunks;
  if (tlStepTimes) ++tlStepTimes->crewLoops;
  tlStepCrew->run(int(chunks), [&](int g) {
    const int64_t b = begin + g * size, e = std::min(end, b + size);
    if (b < e) f(b, e);
  });
}

// Values per chunk below which per-row work between steps (sampling) stays on one thread.
constexpr int64_t kRowsWorkGrain = 1 << 16;

// Sets tlStepCrew for one step and restores the previous one however the step ends.
class StepCrewScope {
 public:
  StepCrewScope(util::StepCrew* crew, DecodeTimes* times) : crew_(tlStepCrew), times_(tlStepTimes) {
    tlStepCrew = crew;
    tlStepTimes = times;
  }
  ~StepCrewScope() {
    tlStepCrew = crew_;
    tlStepTimes = times_;
  }
  StepCrewScope(const StepCrewScope&) = delete;
  StepCrewScope& operator=(const StepCrewScope&) = delete;

 private:
  util::StepCrew* const crew_;
  DecodeTimes* const times_;
};

}  // namespace

void LlamaModel::parallelRows(int64_t n, int64_t values, const std::function<void(int64_t, int64_t)>& f) const {
  StepCrewScope scope(util::StepCrew::inJob() ? nullptr : crew_.get(), nullptr);
  const int64_t per = std::max<int64_t>(1, values);
  parallelFor(0, n, (kRowsWorkGrain + per - 1) / per, f);  // chunks of 64K values or more
}

namespace {

// Y [n, out] = X [n, k] Wᵀ in fp32 (row stride ldy), W [out, k] in the storage type. W's rows
// are split across the thread pool only in chunks worth a wake (matmulGrain): small products
// stay on the calling thread. Each chunk streams its rows once for all n rows.
template <class M>
void matmulInto(const typename M::Bits* wp, int64_t out, int64_t k, const PreparedX<M>& x, float* yp, int64_t ldy,
                bool roundOut = false) {
  const MatmulRows<typename M::Bits>& rows = *x.rows;
  parallelFor(0, out, matmulGrain(k, rows.n),
              [&](int64_t b, int64_t e) { matmulRows(wp + b * k, e - b, rows, yp + b, ldy, roundOut); });
}
template <class M>
void matmulInto(const at::Tensor& w, const PreparedX<M>& x, float* yp, int64_t ldy, bool roundOut = false) {
  const auto* wp = reinterpret_cast<const typename M::Bits*>(w.data_ptr<typename M::Storage>());
  matmulInto<M>(wp, w.size(0), w.size(1), x, yp, ldy, roundOut);
}

// Into Rows y, resized to [n, out].
template <class M>
void matmul(const at::Tensor& w, const PreparedX<M>& x, Rows& y, bool roundOut = false) {
  y.resize(x.rows->n, w.size(0));
  matmulInto<M>(w, x, y.v.data(), w.size(0), roundOut);
}

// project(): X Wᵀ (+ b in fp32), rounded once to the dtype.
template <class M>
void project(const at::Tensor& w, const at::Tensor& bias, const PreparedX<M>& x, Rows& y) {
  if (!bias.defined()) return matmul<M>(w, x, y, M::kBf16);  // rounded as stored
  matmul<M>(w, x, y);
  const at::Tensor bf = bias.to(at::kFloat).contiguous();
  const float* bp = bf.data_ptr<float>();
  for (int64_t b = 0; b < y.n; ++b)
    for (int64_t i = 0; i < y.width; ++i) y.row(b)[i] += bp[i];
  if (M::kBf16) roundBf16(y.v.data(), int64_t(y.v.size()));
}

// The runtime LoRA terms of the projections that read one input (`outs`: their outputs, by
// Proj; the base products already in them), as the op-by-op path adds them per row:
// out + round(round(x Aᵀ) Bᵀ), rounded. Rows sharing an adapter go through A and B together,
// and the input's projections through one shrink (their A stacked: each output column's sum is
// the one the projection's own product gives); each expand adds its sums to the output as it
// stores them. `in` (prepared) and the outputs hold batch rows r0, r0+1, …; an adapter's rows
// outside them are not ours.
template <class M>
void addLora(const ProjectionDelta& delta, size_t layer, ProjInput input, int64_t r0, const PreparedX<M>& in,
             const std::array<Rows*, 7>& outs, Scratch<M>& s) {
  const Rows& inRows = *in.source;
  s.groups.clear();
  delta.loraGroups(layer, input, s.groups);
  constexpr ExpandStore store = M::kBf16 ? ExpandStore::AddRounded : ExpandStore::Add;
  for (const LoraRows& g : s.groups) {
    s.local.clear();
    for (int64_t r : *g.rows)
      if (r >= r0 && r < r0 + inRows.n) s.local.push_back(r - r0);
    if (s.local.empty()) continue;
    const std::vector<int64_t>& rows = s.local;
    const bool all = int64_t(rows.size()) == inRows.n;
    const PreparedX<M>* x = &in;
    if (!all) {  // gather this adapter's rows
      s.gatheredRows.resize(int64_t(rows.size()), inRows.width);
      for (size_t i = 0; i < rows.size(); ++i)
        std::memcpy(s.gatheredRows.row(int64_t(i)), inRows.row(rows[i]), sizeof(float) * size_t(inRows.width));
      s.gathered.prepare(s.gatheredRows);
      x = &s.gathered;
    }
    s.mid.resize(x->rows->n, g.ranks);  // shrink: [rows, sum of the ranks]
    matmulInto<M>(static_cast<const typename M::Bits*>(g.a), g.ranks, g.in, *x, s.mid.v.data(), g.ranks);
    if (M::kBf16) roundBf16(s.mid.v.data(), int64_t(s.mid.v.size()));
    const int64_t ldx = s.mid.width;
    for (int e = 0; e < g.count; ++e) {
      const LoraExpand& ex = g.expands[size_t(e)];
      Rows& out = *outs[size_t(ex.proj)];
      const float* mid = s.mid.v.data() + ex.offset;
      // expand: multiply-adds along the output, none of a gemv's per-output sums over the rank;
      // fp32 through Bᵀ, bf16 on pairs of the rank (the same sums, half the bytes)
      const auto expand = [&](const float* xr, int64_t n, float* y) {
        if constexpr (M::kBf16)
          expandBf16(static_cast<const uint16_t*>(ex.b), ex.rank, out.width, xr, n, y, out.width, store, ldx);
        else
          matmulTransposed(static_cast<const float*>(ex.b), ex.rank, out.width, xr, n, y, out.width, store, ldx);
      };
      if (all) {
        expand(mid, s.mid.n, out.v.data());
      } else {
        for (size_t i = 0; i < rows.size(); ++i) expand(mid + int64_t(i) * ldx, 1, out.row(rows[i]));
      }
    }
  }
}

// rmsNorm(): fp32 statistics per row, normalised value rounded, then weight * value rounded.
template <class M>
void rmsNorm(const Rows& x, const at::Tensor& weight, double eps, Rows& out) {
  const auto* wp = weight.data_ptr<typename M::Storage>();
  out.resize(x.n, x.width);
  for (int64_t b = 0; b < x.n; ++b) {
    const float* xr = x.row(b);
    // ATen's mean of a few thousand fp32 values: any sane order agrees to ~1e-7
    const double ss = sumSquares(xr, x.width);
    const float inv = 1.0f / std::sqrt(float(ss / double(x.width)) + float(eps));
    if constexpr (M::kBf16)
      normRound(xr, inv, reinterpret_cast<const uint16_t*>(wp), out.row(b), x.width, true);
    else
      normRound(xr, inv, wp, out.row(b), x.width, false);
  }
}

// RoPE tables, one row per sequence: angle in fp32 (float(pos) * inv_freq), cos/sin rounded.
template <class M>
void ropeTables(const int64_t* positions, int64_t n, const float* invFreq, int64_t half, Rows& cosv, Rows& sinv) {
  cosv.resize(n, half);
  sinv.resize(n, half);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < half; ++i) {
      const float angle = float(positions[b]) * invFreq[i];
      cosv.row(b)[i] = M::round(std::cos(angle));
      sinv.row(b)[i] = M::round(std::sin(angle));
    }
}

// Attention of the `heads` query heads that share one kv head (q: [heads, hd], out likewise)
// over positions 0..len-1 (all visible to the newest token); the kv head's rows are read from
// memory once for all of them (core/model/cpu_attention.h). Per head: scores dot rounded,
// times 1/sqrt(hd) rounded; softmax in fp32, the probabilities rounded; the weighted sum of
// values in fp32, rounded. kg/vg: [capacity, hd]. With readAhead the kernels prefetch what comes
// next: the values while they score the keys, `nextKeys` (the next pair's keys, if any) while
// they weigh the values.
// kb: the pair's keys in blocks (cpu_attention.h), positions 0..len-1 copied; nullptr: none.
template <class M>
void attendGroup(const float* q, int64_t heads, const typename M::Storage* kg, const typename M::Storage* kb,
                 const typename M::Storage* vg, int64_t len, int64_t hd, float scale, std::vector<float>& scores,
                 float* out, bool readAhead, ReadAhead nextKeys) {
  using Bits = typename M::Bits;
  const ReadAhead values = readAhead ? ReadAhead{vg, len * hd * int64_t(sizeof(typename M::Storage))} : ReadAhead{};
  scores.resize(size_t(heads * len));
  // A bf16 model's q is bf16 after RoPE's rounding and its probabilities after divideRound:
  // exact as bits, for the kernels that multiply bf16 pairs (without them, the fp32 loops).
  const bool pairs = M::kBf16 && bf16KernelsAvailable();
  if (pairs) {
    thread_local std::vector<uint16_t> qb;
    qb.resize(size_t(heads * hd));
    toBf16Bits(q, qb.data(), heads * hd);
    dotRows(qb.data(), heads, reinterpret_cast<const uint16_t*>(kg), len, hd, scores.data(), len, values);
  } else if (kb) {
    dotKeyBlocks(q, heads, reinterpret_cast<const Bits*>(kb), len, hd, scores.data(), len, values);
  } else {
    dotRows(q, heads, reinterpret_cast<const Bits*>(kg), len, hd, scores.data(), len, values);
  }
  for (int64_t h = 0; h < heads; ++h) {
    float* sh = scores.data() + h * len;
    const float mx = scaleRoundMax(sh, len, scale, M::kBf16);
    const float sum = expShifted(sh, len, mx);
    divideRound(sh, len, sum, M::kBf16);
  }
  std::fill(out, out + heads * hd, 0.0f);
  if (pairs) {
    thread_local std::vector<uint16_t> pb;
    pb.resize(scores.size());
    toBf16Bits(scores.data(), pb.data(), int64_t(pb.size()));
    weightedRows(pb.data(), heads, len, reinterpret_cast<const uint16_t*>(vg), len, hd, out, nextKeys);
  } else {
    weightedRows(scores.data(), heads, len, reinterpret_cast<const Bits*>(vg), len, hd, out, nextKeys);
  }
  if (M::kBf16) roundBf16(out, heads * hd);
}

// The cached keys and values a step's attention reads on one thread above which its kernels
// read ahead (cpu_attention.h): twice the core's L2. Below, the rows are still in cache from
// the step before and the prefetches only cost issue slots (matmul_bench --attention
// 8:260:32:2:2048, one stream of the demo model, 0.27 MB: 6.3-9.1 µs per step without, 8.4-13.2
// with; 64 pairs, 2.1 MB, no clear difference; 512 pairs, 17 MB: 2.3-2.4 ms against 0.9-1.2).
int64_t readAheadFromBytes() {
  static const int64_t bytes = [] {
    const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return 2 * int64_t(l2 > 0 ? l2 : 1 << 20);
  }();
  return bytes;
}

// The logits of a step, [n, 1, vocab] fp32 (uninitialised): a view of this thread's buffer from
// the step before when the caller has let go of that step's logits, otherwise a new buffer
// (kept for the next step). A server's step at 32 rows of a 128k vocabulary writes 16 MB of
// logits; from a fresh allocation each time, glibc's malloc on the server's engine thread handed
// out new mappings in some runs and every page of them was faulted in as the LM head wrote it:
// `perf` on `serve` (peers' tiny, bf16, 32 streams arriving continuously) put 44% of its samples
// in page faults and 9% in munmap.
at::Tensor stepLogits(int64_t n, int64_t vocab) {
  thread_local at::Tensor buffer;
  const int64_t need = n * vocab;
  // Free: no tensor but `buffer` refers to its storage (each view of it holds the storage once).
  const bool free = buffer.defined() && buffer.use_count() == 1 && buffer.storage().use_count() == 1;
  if (!free || buffer.numel() < need) {  // the largest so far: rows come and go from step to step
    // An ordinary tensor even when made under InferenceMode: a later step's caller outside it
    // may change its logits in place, which ATen refuses for inference tensors there.
    c10::InferenceMode ordinary(false);
    buffer = hugePageEmpty({std::max(need, buffer.defined() ? buffer.numel() : int64_t(0))}, at::kFloat);
  }
  return buffer.narrow(0, 0, need).view({n, 1, vocab});
}

}  // namespace

bool LlamaModel::canDecodeStepCpu(const at::Tensor& ids, const KvCache* cache) const {
  if (!fastDecode_ || !cache || ids.dim() != 2 || ids.size(1) != 1 || !device_.is_cpu() || at::GradMode::is_enabled())
    return false;
  if ((delta_ && !delta_->rowLora()) || (dtype_ != at::kFloat && dtype_ != at::kBFloat16)) return false;
  const int64_t B = ids.size(0);
  if (B < 1 || int64_t(cache->lengths.size()) != B || cache->keys.empty()) return false;
  for (size_t l = 0; l < cache->keys.size(); ++l)
    for (const at::Tensor* t : {&cache->keys[l], &cache->values[l]})
      if (!t->is_contiguous() || t->scalar_type() != dtype_ || t->size(0) != B || t->size(2) != cache->capacity)
        return false;
  return true;
}

// Rows r0 … r1-1 of the batch through every layer; the caller checked every row and bumps the
// lengths afterwards. Writes those rows of `out` ([B, 1, H] in the model's dtype), or with
// `logits` those rows' logits there ([B, vocab] fp32, as logits() computes them) instead.
template <class M>
void LlamaModel::decodeStepCpuImpl(const std::vector<int64_t>& tokens, KvCache& cache, int64_t r0, int64_t r1,
                                   at::Tensor& out, float* logits, DecodeTimes* times, bool blocks) const {
  using S = typename M::Storage;
  const ModelConfig& c = config_;
  const int64_t n = r1 - r0, H = c.hiddenSize, nh = c.numHeads, nkv = c.numKvHeads, hd = c.headDim;
  const int64_t half = hd / 2, rep = nh / nkv, cap = cache.capacity;
  const int64_t* lengths = cache.lengths.data() + r0;
  // With `blocks` (the scores read the keys in blocks): each row's positions from blocked[b] to
  // the new one copied in at each layer; decodeStepCpu moves blocked[b] past the new one once
  // every row group has finished. Unused, the copy stays valid up to blocked[b].
  const int64_t* blocked = blocks ? cache.blocked.data_ptr<int64_t>() + r0 : nullptr;
  int64_t maxLen = 0;
  for (int64_t b = 0; b < n; ++b) maxLen = std::max(maxLen, lengths[b] + 1);
  PhaseClock clock(times);
  // Buffers kept per thread from step to step (a step's rows run on one thread): no
  // allocation, page faults or zero fill per step. Not reentrant on a thread, as a step isn't.
  struct Buffers {
    Scratch<M> s;
    Rows x, h, q, k, v, o, attn, gate, up, down, cosv, sinv;
  };
  thread_local Buffers buffers;
  Scratch<M>& s = buffers.s;
  Rows &x = buffers.x, &h = buffers.h, &q = buffers.q, &k = buffers.k, &v = buffers.v, &o = buffers.o;
  Rows &attn = buffers.attn, &gate = buffers.gate, &up = buffers.up, &down = buffers.down;
  Rows &cosv = buffers.cosv, &sinv = buffers.sinv;
  ropeTables<M>(lengths, n, invFreq_.data_ptr<float>(), half, cosv, sinv);
  x.resize(n, H);
  for (int64_t b = 0; b < n; ++b) {
    const S* emb = weights_.embed.data_ptr<S>() + tokens[size_t(r0 + b)] * H;
    for (int64_t i = 0; i < H; ++i) x.row(b)[i] = M::load(emb[i]);
  }
  const float scale = float(1.0 / std::sqrt(double(hd)));
  int64_t cached = 0;  // positions the attention reads per layer and kv head, this step
  for (int64_t b = 0; b < n; ++b) cached += lengths[b] + 1;
  const bool readAhead =
      cached * nkv * hd * int64_t(sizeof(S)) * 2 * int64_t(weights_.layers.size()) > readAheadFromBytes();

  // project() per projection, then the runtime LoRA terms of those projections (which read
  // the same input, `in`, prepared by the caller), as linear() adds them.
  const std::array<Rows*, 7> outs = {&q, &k, &v, &attn, &gate, &up, &down};  // by Proj
  const auto projectAll = [&](size_t layer, ProjInput input, std::initializer_list<Proj> projs, const PreparedX<M>& in) {
    const LlamaLayerWeights& w = weights_.layers[layer];
    for (Proj p : projs) {
      switch (p) {
        case Proj::Q: project<M>(w.wq, w.bq, in, q); break;
        case Proj::K: project<M>(w.wk, w.bk, in, k); break;
        case Proj::V: project<M>(w.wv, w.bv, in, v); break;
        case Proj::O: project<M>(w.wo, w.bo, in, attn); break;
        case Proj::Gate: project<M>(w.wGate, w.bGate, in, gate); break;
        case Proj::Up: project<M>(w.wUp, w.bUp, in, up); break;
        case Proj::Down: project<M>(w.wDown, w.bDown, in, down); break;
      }
    }
    clock.charge(&DecodeTimes::matmul);
    if (!delta_) return;
    addLora<M>(*delta_, layer, input, r0, in, outs, s);
    clock.charge(&DecodeTimes::lora);
  };

  for (size_t l = 0; l < weights_.layers.size(); ++l) {
    const LlamaLayerWeights& w = weights_.layers[l];
    rmsNorm<M>(x, w.inputNorm, c.rmsNormEps, h);
    clock.charge(&DecodeTimes::other);
    s.in.prepare(h);
    projectAll(l, ProjInput::Qkv, {Proj::Q, Proj::K, Proj::V}, s.in);  // [n, nh*hd], [n, nkv*hd] x2

    // Cache layout [B, nkv, capacity, hd]: batch row r0+b's keys/values of kv head g at [r0+b, g].
    S* kc = cache.keys[l].data_ptr<S>() + r0 * nkv * cap * hd;
    S* vc = cache.values[l].data_ptr<S>() + r0 * nkv * cap * hd;
    const int64_t blockStride = (cap + 7) / 8 * 8 * hd;  // one (row, kv head) pair's blocks
    S* kbc = blocks ? cache.keyBlocks[l].data_ptr<S>() + r0 * nkv * blockStride : nullptr;
    for (int64_t b = 0; b < n; ++b) {
      // v*cos + rotate_half(v)*sin over each head, each product and the sum rounded
      for (int64_t j = 0; j < nh; ++j) ropeRound(q.row(b) + j * hd, cosv.row(b), sinv.row(b), half, M::kBf16);
      for (int64_t g = 0; g < nkv; ++g) ropeRound(k.row(b) + g * hd, cosv.row(b), sinv.row(b), half, M::kBf16);
      const int64_t pos = lengths[b];
      for (int64_t g = 0; g < nkv; ++g)
        for (int64_t d = 0; d < hd; ++d) {
          kc[((b * nkv + g) * cap + pos) * hd + d] = M::store(k.row(b)[g * hd + d]);
          vc[((b * nkv + g) * cap + pos) * hd + d] = M::store(v.row(b)[g * hd + d]);
        }
      if (blocks)
        for (int64_t g = 0; g < nkv; ++g)
          copyToKeyBlocks(reinterpret_cast<const typename M::Bits*>(kc + (b * nkv + g) * cap * hd),
                          std::min(blocked[b], pos), pos + 1, hd,
                          reinterpret_cast<typename M::Bits*>(kbc + (b * nkv + g) * blockStride));
    }
    // Every (row, kv head) pair on its own, with the rep query heads that read that kv head
    // (heads g*rep … g*rep+rep-1, adjacent in q and o). Split over threads only when a chunk
    // holds about a million multiply-adds: waking a thread team costs more than a small
    // model's attention (on a busy machine, a timeslice).
    o.resize(n, nh * hd);
    const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 20) / std::max<int64_t>(1, maxLen * hd * rep));
    parallelFor(0, n * nkv, grain, [&](int64_t begin, int64_t end) {
      thread_local std::vector<float> scores;
      for (int64_t bg = begin; bg < end; ++bg) {
        const int64_t b = bg / nkv, g = bg % nkv;
        const size_t off = size_t(bg * cap * hd);  // row b's kv head g: [r0 + b, g] of [B, nkv, cap, hd]
        ReadAhead nextKeys;  // the next pair's keys, which the next iteration reads first
        if (readAhead && bg + 1 < end) {
          const int64_t next = lengths[(bg + 1) / nkv] + 1;  // positions; blocks: whole blocks of them
          nextKeys = blocks ? ReadAhead{kbc + (bg + 1) * blockStride, (next + 7) / 8 * 8 * hd * int64_t(sizeof(S))}
                            : ReadAhead{kc + off + size_t(cap * hd), next * hd * int64_t(sizeof(S))};
        }
        attendGroup<M>(q.row(b) + g * rep * hd, rep, kc + off, blocks ? kbc + bg * blockStride : nullptr, vc + off,
                       lengths[b] + 1, hd, scale, scores, o.row(b) + g * rep * hd, readAhead, nextKeys);
      }
    });
    clock.charge(&DecodeTimes::attention);
    s.in.prepare(o);
    projectAll(l, ProjInput::O, {Proj::O}, s.in);
    addRound(x.v.data(), attn.v.data(), int64_t(x.v.size()), false, M::kBf16);

    rmsNorm<M>(x, w.postNorm, c.rmsNormEps, h);
    clock.charge(&DecodeTimes::other);
    s.in.prepare(h);
    projectAll(l, ProjInput::GateUp, {Proj::Gate, Proj::Up}, s.in);
    siluInPlace(gate.v.data(), int64_t(gate.v.size()));
    mulRound(gate.v.data(), up.v.data(), int64_t(gate.v.size()), M::kBf16);  // silu(gate) * up
    clock.charge(&DecodeTimes::other);
    s.in.prepare(gate);
    projectAll(l, ProjInput::Down, {Proj::Down}, s.in);
    addRound(x.v.data(), down.v.data(), int64_t(x.v.size()), false, M::kBf16);
  }

  rmsNorm<M>(x, weights_.finalNorm, c.rmsNormEps, h);
  clock.charge(&DecodeTimes::other);
  if (logits) {  // these rows' logits as logits() computes them: X Wᵀ in fp32, rounded once to the dtype
    s.in.prepare(h);
    float* y = logits + r0 * c.vocabSize;
    matmulInto<M>(weights_.lmHead, s.in, y, c.vocabSize, M::kBf16);  // rounded as stored
    clock.charge(&DecodeTimes::lmHead);
    return;
  }
  S* op = out.data_ptr<S>() + r0 * H;
  for (size_t i = 0; i < h.v.size(); ++i) op[i] = M::store(h.v[i]);
  clock.charge(&DecodeTimes::other);
}

at::Tensor LlamaModel::decodeStepCpu(const at::Tensor& ids, KvCache& cache, bool withLogits) const {
  const at::Tensor flat = ids.to(at::kLong).reshape({-1}).contiguous();
  const std::vector<int64_t> tokens(flat.data_ptr<int64_t>(), flat.data_ptr<int64_t>() + flat.numel());
  const int64_t n = int64_t(tokens.size());
  for (int64_t b = 0; b < n; ++b) {  // refuse before anything is written
    if (cache.lengths[size_t(b)] + 1 > cache.capacity) throw std::runtime_error("KV cache is full");
    if (tokens[size_t(b)] < 0 || tokens[size_t(b)] >= config_.vocabSize) throw std::runtime_error("token id out of range");
  }
  at::Tensor out = withLogits ? stepLogits(n, config_.vocabSize)
                              : at::empty({n, 1, config_.hiddenSize}, at::TensorOptions().dtype(dtype_));  // [B, T=1, …]
  float* logits = withLogits ? out.data_ptr<float>() : nullptr;
  // Keys in blocks where the scores read them so (keyBlocksHelp; the check can change in tests)
  // and the cache holds them: one decision for every row group of the step.
  const bool blocks = keyBlocksHelp() && cache.hasKeyBlocks();
  const auto rows = [&](int64_t r0, int64_t r1, DecodeTimes* times) {
    if (dtype_ == at::kFloat)
      decodeStepCpuImpl<F32Math>(tokens, cache, r0, r1, out, logits, times, blocks);
    else
      decodeStepCpuImpl<Bf16Math>(tokens, cache, r0, r1, out, logits, times, blocks);
  };
  // Rows split into groups, each through every layer on one thread: no synchronisation
  // inside the step, each weight streamed once per group (the group holding row 0 is timed).
  // The groups run on the model's step crew, whose workers wait for the next step spinning
  // briefly instead of asleep as a server's OpenMP workers do (core/util/step_crew.h).
  // One group: its products and attention split over the same crew when large enough.
  const int64_t threads = at::get_num_threads();
  const int64_t groups = std::min<int64_t>({int64_t(std::max(1, decodeSplit_)), n, threads});
  if (groups > 1) {
    crew_->run(int(groups), [&](int g) { rows(g * n / groups, (g + 1) * n / groups, g == 0 ? times_ : nullptr); });
  } else {
    StepCrewScope scope(util::StepCrew::inJob() ? nullptr : crew_.get(), times_);
    rows(0, n, times_);
  }
  // Only now, every group done: a step that threw leaves blocked[b] <= lengths[b].
  if (blocks) {
    int64_t* blocked = cache.blocked.data_ptr<int64_t>();
    for (int64_t b = 0; b < n; ++b) blocked[b] = cache.lengths[size_t(b)] + 1;
  }
  for (auto& len : cache.lengths) ++len;
  if (times_) {
    ++times_->steps;
    times_->rows += uint64_t(n);
    times_->groups += uint64_t(std::max<int64_t>(1, groups));
    if (withLogits) times_->headRows += uint64_t(n);
  }
  return out;
}

}  // namespace crosslab::model
