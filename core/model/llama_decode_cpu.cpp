// LlamaModel::decodeStepCpu: one new token of one sequence on the CPU (with at most one
// runtime LoRA adapter, from ProjectionDelta::loraFactors), computed in plain
// loops over the weights' memory instead of ~20 ATen ops per layer. At batch 1 the ops are
// tiny and libtorch's per-op cost (dispatch, allocation, dtype conversions, OpenMP regions)
// is most of the time on a small model: measured on the demo model (hidden 128, 4 layers)
// this path decodes several times faster than the op-by-op path, and on `small` it removes
// the overhead around the bandwidth-bound matrix-vector products.
//
// It computes what LlamaModel::hidden computes for B = T = 1, op for op, including where
// the op-by-op path rounds to the activation dtype: in bf16 every intermediate that ATen
// stores as a bf16 tensor is rounded to bf16 here too (round-to-nearest-even, c10's
// conversion), while sums accumulate in fp32 as ATen's bf16 kernels do. Only the summation
// order inside dot products differs. tests/model/test_llama_reference.cpp compares both
// paths and the PyTorch reference.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "core/model/gemv.h"
#include "core/model/kv_cache.h"
#include "core/model/llama.h"

namespace crosslab::model {
namespace {

// Activations are held in fp32 vectors; R rounds them to what the dtype can store.
struct F32Math {
  using Storage = float;
  static float round(float x) { return x; }
  static float load(float x) { return x; }
  static float store(float x) { return x; }
};
struct Bf16Math {
  using Storage = at::BFloat16;
  static float round(float x) { return float(at::BFloat16(x)); }
  static float load(at::BFloat16 x) { return float(x); }
  static at::BFloat16 store(float x) { return at::BFloat16(x); }
};

// y[rows] = W x in fp32; W row-major [rows, k] of Storage. Rows split across the thread pool
// only when a chunk holds at least 64K weights: small matrices stay on the calling thread.
template <class M>
void gemv(const at::Tensor& w, const std::vector<float>& x, std::vector<float>& y,
          std::vector<typename M::Storage>& xs) {
  const int64_t rows = w.size(0), k = w.size(1);
  y.resize(size_t(rows));
  xs.resize(size_t(k));
  for (int64_t i = 0; i < k; ++i) xs[size_t(i)] = M::store(x[size_t(i)]);
  const int64_t grain = std::max<int64_t>(16, (int64_t(1) << 16) / std::max<int64_t>(1, k));
  const auto* wp = w.data_ptr<typename M::Storage>();
  const auto* xp = xs.data();
  float* yp = y.data();
  at::parallel_for(0, rows, grain, [&](int64_t b, int64_t e) {
    if constexpr (std::is_same_v<typename M::Storage, float>) {
      if (f32GemvAvailable()) return f32Gemv(wp + b * k, xp, yp + b, e - b, k);
    } else {
      if (bf16GemvAvailable())
        return bf16Gemv(reinterpret_cast<const uint16_t*>(wp + b * k), reinterpret_cast<const uint16_t*>(xp), yp + b,
                        e - b, k);
    }
    for (int64_t r = b; r < e; ++r) {  // portable fallback: eight partial sums along k
      float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      const auto* row = wp + r * k;
      int64_t i = 0;
      for (; i + 8 <= k; i += 8)
        for (int j = 0; j < 8; ++j) acc[j] += M::load(row[i + j]) * M::load(xp[i + j]);
      float s = 0;
      for (; i < k; ++i) s += M::load(row[i]) * M::load(xp[i]);
      for (float a : acc) s += a;
      yp[r] = s;
    }
  });
}

// project(): W x (+ b in fp32), rounded once to the dtype.
template <class M>
void project(const at::Tensor& w, const at::Tensor& b, const std::vector<float>& x, std::vector<float>& y,
             std::vector<typename M::Storage>& scratch) {
  gemv<M>(w, x, y, scratch);
  if (b.defined()) {
    const at::Tensor bf = b.to(at::kFloat).contiguous();
    const float* bp = bf.data_ptr<float>();
    for (size_t i = 0; i < y.size(); ++i) y[i] += bp[i];
  }
  for (float& v : y) v = M::round(v);
}

// rmsNorm(): fp32 statistics, normalised value rounded, then weight * value rounded.
template <class M>
void rmsNorm(const std::vector<float>& x, const at::Tensor& weight, double eps, std::vector<float>& out) {
  double ss = 0;  // ATen's mean of a few thousand fp32 values: any sane order agrees to ~1e-7
  for (float v : x) ss += double(v) * double(v);
  const float inv = 1.0f / std::sqrt(float(ss / double(x.size())) + float(eps));
  const auto* wp = weight.data_ptr<typename M::Storage>();
  out.resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = M::round(M::load(wp[i]) * M::round(x[i] * inv));
}

}  // namespace

bool LlamaModel::canDecodeStepCpu(const at::Tensor& ids, const KvCache* cache) const {
  return fastDecode_ && cache && ids.dim() == 2 && ids.size(0) == 1 && ids.size(1) == 1 && device_.is_cpu() &&
         (!delta_ || delta_->singleRowLora()) && !at::GradMode::is_enabled() && (dtype_ == at::kFloat || dtype_ == at::kBFloat16) &&
         cache->lengths.size() == 1 && !cache->keys.empty() && cache->keys[0].is_contiguous() &&
         cache->keys[0].scalar_type() == dtype_ && cache->keys[0].size(2) == cache->capacity;
}

template <class M>
at::Tensor LlamaModel::decodeStepCpuImpl(int64_t token, KvCache& cache) const {
  using S = typename M::Storage;
  const ModelConfig& c = config_;
  const int64_t H = c.hiddenSize, nh = c.numHeads, nkv = c.numKvHeads, hd = c.headDim, half = hd / 2, rep = nh / nkv;
  const int64_t pos = cache.lengths[0];
  if (pos + 1 > cache.capacity) throw std::runtime_error("KV cache is full");
  if (token < 0 || token >= c.vocabSize) throw std::runtime_error("token id out of range");

  // RoPE at `pos`: angle in fp32 (float(pos) * inv_freq), cos/sin rounded to the dtype.
  std::vector<float> cosv(static_cast<size_t>(half)), sinv(static_cast<size_t>(half));
  const float* invFreq = invFreq_.data_ptr<float>();
  for (int64_t i = 0; i < half; ++i) {
    const float angle = float(pos) * invFreq[i];
    cosv[size_t(i)] = M::round(std::cos(angle));
    sinv[size_t(i)] = M::round(std::sin(angle));
  }
  const auto rope = [&](float* v) {  // v*cos + rotate_half(v)*sin, each product and the sum rounded
    for (int64_t i = 0; i < half; ++i) {
      const float a = v[i], b = v[i + half], cs = cosv[size_t(i)], sn = sinv[size_t(i)];
      v[i] = M::round(M::round(a * cs) + M::round(-b * sn));
      v[i + half] = M::round(M::round(b * cs) + M::round(a * sn));
    }
  };

  std::vector<float> x(static_cast<size_t>(H)), h, q, k, v, o(static_cast<size_t>(nh * hd)), attn, gate, up, down, scores;
  std::vector<S> scratch;
  const S* emb = weights_.embed.data_ptr<S>() + token * H;
  for (int64_t i = 0; i < H; ++i) x[size_t(i)] = M::load(emb[i]);
  const float scale = float(1.0 / std::sqrt(double(hd)));

  // project() plus a runtime LoRA term, as linear() adds it: y + round(round(x Aᵀ) Bᵀ), rounded.
  std::vector<float> loraMid, loraOut;
  const auto linear = [&](size_t layer, Proj p, const at::Tensor& wt, const at::Tensor& bias,
                          const std::vector<float>& in, std::vector<float>& out) {
    project<M>(wt, bias, in, out, scratch);
    if (!delta_) return;
    const auto [a, b] = delta_->loraFactors(layer, p);
    if (!a.defined()) return;
    gemv<M>(a, in, loraMid, scratch);
    for (float& m : loraMid) m = M::round(m);
    gemv<M>(b, loraMid, loraOut, scratch);
    for (size_t i = 0; i < out.size(); ++i) out[i] = M::round(out[i] + M::round(loraOut[i]));
  };

  for (size_t l = 0; l < weights_.layers.size(); ++l) {
    const LlamaLayerWeights& w = weights_.layers[l];
    rmsNorm<M>(x, w.inputNorm, c.rmsNormEps, h);
    linear(l, Proj::Q, w.wq, w.bq, h, q);  // [nh*hd]
    linear(l, Proj::K, w.wk, w.bk, h, k);  // [nkv*hd]
    linear(l, Proj::V, w.wv, w.bv, h, v);  // [nkv*hd]
    for (int64_t j = 0; j < nh; ++j) rope(q.data() + j * hd);
    for (int64_t g = 0; g < nkv; ++g) rope(k.data() + g * hd);

    // Cache layout [1, nkv, capacity, hd]: append this position's k and v.
    S* kc = cache.keys[l].data_ptr<S>();
    S* vc = cache.values[l].data_ptr<S>();
    const int64_t cap = cache.capacity;
    for (int64_t g = 0; g < nkv; ++g)
      for (int64_t d = 0; d < hd; ++d) {
        kc[(g * cap + pos) * hd + d] = M::store(k[size_t(g * hd + d)]);
        vc[(g * cap + pos) * hd + d] = M::store(v[size_t(g * hd + d)]);
      }

    // Attention over positions 0..pos (all visible to the newest token): query head j reads
    // kv head j / rep. Scores: dot rounded, times 1/sqrt(hd) rounded; softmax in fp32, the
    // probabilities rounded; the weighted sum of values in fp32, rounded.
    const int64_t len = pos + 1;
    scores.resize(size_t(len));
    for (int64_t j = 0; j < nh; ++j) {
      const int64_t g = j / rep;
      const float* qh = q.data() + j * hd;
      const S* kg = kc + g * cap * hd;
      const S* vg = vc + g * cap * hd;
      float mx = -INFINITY;
      for (int64_t t = 0; t < len; ++t) {
        float dot = 0;
        for (int64_t d = 0; d < hd; ++d) dot += qh[d] * M::load(kg[t * hd + d]);
        scores[size_t(t)] = M::round(M::round(dot) * scale);
        mx = std::max(mx, scores[size_t(t)]);
      }
      float sum = 0;
      for (int64_t t = 0; t < len; ++t) sum += (scores[size_t(t)] = std::exp(scores[size_t(t)] - mx));
      float* oh = o.data() + j * hd;
      std::fill(oh, oh + hd, 0.0f);
      for (int64_t t = 0; t < len; ++t) {
        const float p = M::round(scores[size_t(t)] / sum);
        for (int64_t d = 0; d < hd; ++d) oh[d] += p * M::load(vg[t * hd + d]);
      }
      for (int64_t d = 0; d < hd; ++d) oh[d] = M::round(oh[d]);
    }
    linear(l, Proj::O, w.wo, w.bo, o, attn);
    for (int64_t i = 0; i < H; ++i) x[size_t(i)] = M::round(x[size_t(i)] + attn[size_t(i)]);

    rmsNorm<M>(x, w.postNorm, c.rmsNormEps, h);
    linear(l, Proj::Gate, w.wGate, w.bGate, h, gate);
    linear(l, Proj::Up, w.wUp, w.bUp, h, up);
    for (size_t i = 0; i < gate.size(); ++i) {
      const float gv = gate[i];
      gate[i] = M::round(M::round(gv / (1.0f + std::exp(-gv))) * up[i]);  // silu(gate) * up
    }
    linear(l, Proj::Down, w.wDown, w.bDown, gate, down);
    for (int64_t i = 0; i < H; ++i) x[size_t(i)] = M::round(x[size_t(i)] + down[size_t(i)]);
  }
  cache.lengths[0] = pos + 1;

  rmsNorm<M>(x, weights_.finalNorm, c.rmsNormEps, h);
  at::Tensor out = at::empty({1, 1, H}, at::TensorOptions().dtype(dtype_));  // [B=1, T=1, H]
  S* op = out.data_ptr<S>();
  for (int64_t i = 0; i < H; ++i) op[i] = M::store(h[size_t(i)]);
  return out;
}

at::Tensor LlamaModel::decodeStepCpu(const at::Tensor& ids, KvCache& cache) const {
  const int64_t token = ids.to(at::kLong).item<int64_t>();
  return dtype_ == at::kFloat ? decodeStepCpuImpl<F32Math>(token, cache) : decodeStepCpuImpl<Bf16Math>(token, cache);
}

}  // namespace crosslab::model
