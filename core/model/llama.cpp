#include "core/model/llama.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "core/model/adapter_config.h"
#include "core/model/cpu_attention.h"
#include "core/model/cpu_matmul.h"
#include "core/model/checkpoint_files.h"
#include "core/model/huge_pages.h"
#include "core/model/mapped_file.h"
#include "core/model/llama_layout.h"
#include "core/util/step_crew.h"

namespace crosslab::model {
namespace {

std::string shapeText(at::IntArrayRef shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

at::ScalarType torchType(DType dtype, const std::string& name) {
  switch (dtype) {
    case DType::F32: return at::kFloat;
    case DType::BF16: return at::kBFloat16;
    case DType::F16: return at::kHalf;
    default: throw std::runtime_error("tensor '" + name + "' has dtype " + dtypeName(dtype) + ", expected F32, BF16 or F16");
  }
}

// One checkpoint tensor as `dtype` on `device`, its shape checked against the config.
// The result aliases the read-only memory map when no conversion is needed.
class WeightLoader {
 public:
  WeightLoader(const CheckpointFiles& files, at::ScalarType dtype, at::Device device, bool copy)
      : files_(files), dtype_(dtype), device_(device), copy_(copy) {}

  at::Tensor get(const std::string& name, std::vector<int64_t> shape, bool required = true) const {
    const TensorView v = files_.find(name);
    if (!v.info) {
      if (required) throw std::runtime_error("checkpoint lacks tensor '" + name + "'");
      return {};
    }
    if (v.info->shape != shape)
      throw std::runtime_error("tensor '" + name + "' has shape " + shapeText(v.info->shape) + ", config expects " +
                               shapeText(shape));
    const auto type = torchType(v.info->dtype, name);
    // from_blob never frees: the map outlives the model (LlamaModel::files_).
    at::Tensor t = at::from_blob(const_cast<uint8_t*>(v.data), shape, at::TensorOptions().dtype(type));
    if (type == dtype_ && device_.is_cpu() && !copy_) return t;
    at::Tensor converted = device_.is_cpu() ? hugePageCopy(t, dtype_) : t.to(device_, dtype_);
    MappedFile::dropPages(v.data, size_t(v.info->bytes()));  // peak RSS ~ converted weights, not file + converted
    return converted;
  }

 private:
  const CheckpointFiles& files_;
  at::ScalarType dtype_;
  at::Device device_;
  bool copy_;
};

// y = x Wᵀ for a few rows (no autograd, CPU, contiguous W of x's dtype) through our kernels
// (core/model/cpu_matmul.h), W's rows split over threads: fp32 accumulators rounded once to
// x's dtype, as the bf16 matmul rounds. At these shapes libtorch 1.13 + OpenBLAS/oneDNN read W
// well below memory bandwidth (M = 1) or spend more on the call (dispatch, thread team) than on
// the product (the demo model's LM head at 8 rows: 85% of a decode step through at::linear).
// `rows` rows of dtype `t` on `device`: also asked before the rows exist (the fused step's LM head).
bool kernelRowsApply(at::ScalarType t, at::Device device, int64_t rows, const at::Tensor& w, int64_t maxRows) {
  const bool f32 = t == at::kFloat && vectorRowsAvailable(false);
  const bool bf16 = t == at::kBFloat16 && vectorRowsAvailable(true);
  return (f32 || bf16) && rows <= maxRows && w.scalar_type() == t && device.is_cpu() && w.is_contiguous() &&
         !at::GradMode::is_enabled();
}
bool kernelRowsApply(const at::Tensor& x, const at::Tensor& w, int64_t maxRows) {
  const int64_t width = x.size(-1);
  return kernelRowsApply(x.scalar_type(), x.device(), width > 0 ? x.numel() / width : 0, w, maxRows);
}

// logits() through our kernels for up to this many rows (a decode step's), at::linear beyond.
constexpr int64_t kLogitsKernelRows = 64;

at::Tensor projectRows(const at::Tensor& x, const at::Tensor& w) {
  const int64_t in = x.size(-1), out = w.size(0), n = x.numel() / in;
  const at::Tensor xc = x.reshape({n, in}).contiguous();
  at::Tensor y = at::empty({n, out}, x.options().dtype(at::kFloat));  // fp32 accumulators
  float* yp = y.data_ptr<float>();
  const int64_t grain = matmulGrain(in, n);
  if (x.scalar_type() == at::kFloat) {
    const float* wp = w.data_ptr<float>();
    const MatmulRows<float> rows(xc.data_ptr<float>(), n, in);
    at::parallel_for(0, out, grain, [&](int64_t b0, int64_t e0) { matmulRows(wp + b0 * in, e0 - b0, rows, yp + b0, out); });
  } else {
    const auto* wp = reinterpret_cast<const uint16_t*>(w.data_ptr<at::BFloat16>());
    MatmulRows<uint16_t> rows(reinterpret_cast<const uint16_t*>(xc.data_ptr<at::BFloat16>()), n, in);
    // Without the AVX-512 BF16 kernels the loop reads X as fp32: widened here once for every
    // thread (exact, so the same bits) instead of at each use. `taskset -c 1 matmul_bench
    // --shapes 128256:768:32 --dtypes bf16`, the `small` LM head at 32 rows, four runs: 52-53
    // GFLOP/s from bf16 X (gflop_s), 65-67 from fp32 X (x_f32).
    at::Tensor wide;
    std::vector<float> packedAvx2;
    if (!bf16KernelsAvailable()) {
      wide = xc.to(at::kFloat);
      rows.widen(wide.data_ptr<float>(), packedAvx2);
    }
    at::parallel_for(0, out, grain, [&](int64_t b0, int64_t e0) { matmulRows(wp + b0 * in, e0 - b0, rows, yp + b0, out); });
  }
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = out;
  return y.view(shape);
}

// y = x W^T + b, rounded once to x's dtype: through projectSums where it applies, otherwise
// at::linear.
at::Tensor project(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  at::Tensor y = projectSums(x, w);
  if (!y.defined()) return b.defined() ? at::linear(x, w, b) : at::linear(x, w);
  if (b.defined()) y = y + b.to(at::kFloat);
  return y.to(x.scalar_type());  // bf16: one rounding, as the bf16 matmul does
}

}  // namespace

// A single row (batch-1 decode) through projectRows, otherwise none — except in bf16 on a CPU
// without AVX512-BF16, where every row count goes through projectRows: there libtorch 1.13's
// bf16 product ran at 4-5 GFLOP/s (batch_bench's aten_gemm_gflop_s on the AVX2-only VM)
// against 38-64 for our AVX2 loop on two threads, and a bf16 model's prefill spent most of a
// short benchmark in it (the peers' `small` preset, 32 streams of 64 tokens: 42% of the run).
at::Tensor projectSums(const at::Tensor& x, const at::Tensor& w) {
  const int64_t maxRows =
      x.scalar_type() == at::kBFloat16 && !bf16KernelsAvailable() ? std::numeric_limits<int64_t>::max() : 1;
  return kernelRowsApply(x, w, maxRows) ? projectRows(x, w) : at::Tensor();
}

namespace {

// RMSNorm in fp32, cast back, then scaled (transformers' LlamaRMSNorm order).
at::Tensor rmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  at::Tensor h = x.to(at::kFloat);
  h = h * at::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return weight * h.to(x.scalar_type());
}

at::Tensor rotateHalf(const at::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

}  // namespace

bool KvCache::uniform() const {
  for (auto l : lengths)
    if (l != lengths[0]) return false;
  return true;
}

void KvCache::reset() {
  for (auto& l : lengths) l = 0;
  if (blocked.defined()) blocked.zero_();
}

void KvCache::setLength(size_t row, int64_t len) {
  lengths[row] = len;
  if (blocked.defined()) {
    int64_t& copied = blocked.data_ptr<int64_t>()[row];
    copied = std::min(copied, len);
  }
}

void KvCache::replaceRow(size_t row, int64_t len) {
  lengths[row] = len;
  if (blocked.defined()) blocked.data_ptr<int64_t>()[row] = 0;
}

void KvCache::copyRow(size_t from, size_t to) {
  const int64_t len = lengths[from], f = int64_t(from), t = int64_t(to);
  for (size_t l = 0; l < keys.size(); ++l) {  // [nkv, len, hd] per row
    keys[l][t].narrow(1, 0, len).copy_(keys[l][f].narrow(1, 0, len));
    values[l][t].narrow(1, 0, len).copy_(values[l][f].narrow(1, 0, len));
  }
  replaceRow(to, len);
  if (hasKeyBlocks()) {  // the key blocks too ([nkv, blocks, hd, 8] per row): no full recopy at the next step
    int64_t* copied = blocked.data_ptr<int64_t>();
    const int64_t n = std::min(copied[from], len), whole = (n + 7) / 8;
    for (size_t l = 0; l < keyBlocks.size(); ++l)
      keyBlocks[l][t].narrow(1, 0, whole).copy_(keyBlocks[l][f].narrow(1, 0, whole));
    copied[to] = n;
  }
}

bool KvCache::hasKeyBlocks() const {
  if (keyBlocks.size() != keys.size() || keys.empty() || !blocked.defined()) return false;
  const int64_t B = int64_t(lengths.size());
  if (blocked.numel() != B || !blocked.is_contiguous() || blocked.scalar_type() != at::kLong) return false;
  for (size_t l = 0; l < keys.size(); ++l) {
    const at::Tensor& k = keys[l];
    const at::Tensor& kb = keyBlocks[l];
    if (kb.dim() != 5 || !kb.is_contiguous() || kb.scalar_type() != k.scalar_type() || kb.size(0) != B ||
        kb.size(1) != k.size(1) || kb.size(2) != (capacity + 7) / 8 || kb.size(3) != k.size(3) || kb.size(4) != 8)
      return false;
  }
  return true;
}

std::vector<float> ropeInverseFrequencies(const ModelConfig& c) {
  // Same op sequence as transformers (fp32 torch math) so the angles agree to the bit.
  const at::Tensor exponents = at::arange(0, c.headDim, 2, at::kLong).to(at::kFloat) / double(c.headDim);
  at::Tensor inv = 1.0 / at::pow(c.ropeTheta, exponents);
  const RopeScaling& rs = c.ropeScaling;
  if (rs.type == RopeScaling::Type::Linear) inv = inv / rs.factor;
  if (rs.type == RopeScaling::Type::Llama3) {
    const double orig = double(rs.originalMaxPositions);
    const double lowWavelen = orig / rs.lowFreqFactor, highWavelen = orig / rs.highFreqFactor;
    const at::Tensor wavelen = 2 * M_PI / inv;
    const at::Tensor scaled = at::where(wavelen > lowWavelen, inv / rs.factor, inv);
    const at::Tensor smooth = (orig / wavelen - rs.lowFreqFactor) / (rs.highFreqFactor - rs.lowFreqFactor);
    const at::Tensor smoothed = (1 - smooth) * scaled / rs.factor + smooth * scaled;
    const at::Tensor medium = at::logical_not(wavelen < highWavelen).logical_and(at::logical_not(wavelen > lowWavelen));
    inv = at::where(medium, smoothed, scaled);
  }
  inv = inv.contiguous();
  return std::vector<float>(inv.data_ptr<float>(), inv.data_ptr<float>() + inv.numel());
}

LlamaModel::LlamaModel(ModelConfig config, at::ScalarType dtype, at::Device device)
    : config_(std::move(config)), dtype_(dtype), device_(device), crew_(std::make_shared<util::StepCrew>()) {
  auto inv = ropeInverseFrequencies(config_);
  invFreq_ = at::tensor(inv, at::kFloat).to(device_);
}

LlamaModel LlamaModel::load(const std::filesystem::path& dir, at::ScalarType dtype, at::Device device, bool copyWeights) {
  LlamaModel m(loadModelConfig(dir), dtype, device);
  m.files_ = std::make_shared<CheckpointFiles>(CheckpointFiles::open(dir));
  const ModelConfig& c = m.config_;
  checkLlamaCheckpoint(*m.files_, c);  // names the first bad tensor before anything is converted
  const WeightLoader w(*m.files_, dtype, device, copyWeights);
  const int64_t H = c.hiddenSize, I = c.intermediateSize, q = c.numHeads * c.headDim, kv = c.numKvHeads * c.headDim;
  m.weights_.embed = w.get("model.embed_tokens.weight", {c.vocabSize, H});
  m.weights_.finalNorm = w.get("model.norm.weight", {H});
  m.weights_.lmHead = c.tieWordEmbeddings ? m.weights_.embed : w.get("lm_head.weight", {c.vocabSize, H});
  for (int64_t i = 0; i < c.numLayers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    LlamaLayerWeights L;
    L.inputNorm = w.get(p + "input_layernorm.weight", {H});
    L.postNorm = w.get(p + "post_attention_layernorm.weight", {H});
    L.wq = w.get(p + "self_attn.q_proj.weight", {q, H});
    L.wk = w.get(p + "self_attn.k_proj.weight", {kv, H});
    L.wv = w.get(p + "self_attn.v_proj.weight", {kv, H});
    L.wo = w.get(p + "self_attn.o_proj.weight", {H, q});
    if (c.attentionBias) {  // q/k/v required; o optional (Qwen2 has none)
      L.bq = w.get(p + "self_attn.q_proj.bias", {q});
      L.bk = w.get(p + "self_attn.k_proj.bias", {kv});
      L.bv = w.get(p + "self_attn.v_proj.bias", {kv});
      L.bo = w.get(p + "self_attn.o_proj.bias", {H}, false);
    }
    L.wGate = w.get(p + "mlp.gate_proj.weight", {I, H});
    L.wUp = w.get(p + "mlp.up_proj.weight", {I, H});
    L.wDown = w.get(p + "mlp.down_proj.weight", {H, I});
    if (c.mlpBias) {
      L.bGate = w.get(p + "mlp.gate_proj.bias", {I});
      L.bUp = w.get(p + "mlp.up_proj.bias", {I});
      L.bDown = w.get(p + "mlp.down_proj.bias", {H});
    }
    m.weights_.layers.push_back(std::move(L));
  }
  return m;
}

KvCache LlamaModel::makeCache(int64_t batch, int64_t capacity) const {
  KvCache cache;
  cache.capacity = capacity;
  cache.lengths.assign(size_t(batch), 0);
  const auto opts = at::TensorOptions().dtype(dtype_).device(device_);
  // On the CPU in 2 MiB pages (huge_pages.h): the whole capacity is zeroed here, at startup.
  const auto zeros = [&](at::IntArrayRef shape) {
    return device_.is_cpu() ? hugePageZeros(shape, dtype_) : at::zeros(shape, opts);
  };
  for (int64_t i = 0; i < config_.numLayers; ++i) {
    cache.keys.push_back(zeros({batch, config_.numKvHeads, capacity, config_.headDim}));
    cache.values.push_back(zeros({batch, config_.numKvHeads, capacity, config_.headDim}));
  }
  // Where the fused step's scores read keys in blocks (cpu_attention.h): the keys held twice,
  // half as much memory again, for no transpose of them at every step.
  if (device_.is_cpu() && (dtype_ == at::kFloat || dtype_ == at::kBFloat16) && keyBlocksHelp()) {
    for (int64_t i = 0; i < config_.numLayers; ++i)
      cache.keyBlocks.push_back(zeros({batch, config_.numKvHeads, (capacity + 7) / 8, config_.headDim, 8}));
    cache.blocked = at::zeros({batch}, at::TensorOptions().dtype(at::kLong));
  }
  return cache;
}

void LlamaModel::mergeLoraAdapter(const std::filesystem::path& dir) {
  const double scaling = loadAdapterConfig(dir).scaling();

  SafetensorsFile file(dir / "adapter_model.safetensors");
  const auto get = [&](const std::string& name) -> at::Tensor {
    const TensorInfo* info = file.find(name);
    if (!info) return {};
    const auto v = file.view(*info);
    return at::from_blob(const_cast<uint8_t*>(v.data), info->shape, at::TensorOptions().dtype(torchType(info->dtype, name)))
        .to(device_, at::kFloat);
  };
  int merged = 0;
  const auto merge = [&](at::Tensor& w, const std::string& module) {
    const std::string p = "base_model.model." + module;
    const at::Tensor a = get(p + ".lora_A.weight"), b = get(p + ".lora_B.weight");  // [r, in], [out, r]
    if (!a.defined() && !b.defined()) return;
    if (!a.defined() || !b.defined()) throw std::runtime_error("adapter has only one of lora_A/lora_B for '" + module + "'");
    if (a.dim() != 2 || b.dim() != 2 || a.size(1) != w.size(1) || b.size(0) != w.size(0) || a.size(0) != b.size(1))
      throw std::runtime_error("adapter tensors for '" + module + "' do not fit the weight " + shapeText(w.sizes()));
    // W + s B A in fp32, rounded to the model's dtype once; a new tensor: the mapped weights stay
    // read-only. On the CPU each product, sum and result goes into 2 MiB pages (huge_pages.h):
    // ATen's fresh 4 KiB pages for them made a 1B adapter's merge take 40-50 s.
    if (!device_.is_cpu()) {
      w = (w.to(at::kFloat) + at::mm(b, a) * scaling).to(dtype_);
    } else {
      at::Tensor delta = hugePageEmpty({w.size(0), w.size(1)}, at::kFloat);
      at::mm_out(delta, b, a).mul_(scaling);
      at::Tensor sum = hugePageCopy(w, at::kFloat);
      sum.add_(delta);  // w + s·BA, the same sum as `w.to(kFloat) + delta`
      const at::Tensor old = w;
      w = dtype_ == at::kFloat ? sum : hugePageCopy(sum, dtype_);
      // A weight used from the file's map: its pages, read for the sum, are dead weight in the
      // resident set now (a merged bf16 1B server held 1.9 GB of them).
      if (files_ && files_->maps(old.data_ptr(), old.nbytes())) MappedFile::dropPages(old.data_ptr(), old.nbytes());
    }
    ++merged;
  };
  for (size_t i = 0; i < weights_.layers.size(); ++i) {
    auto& L = weights_.layers[i];
    const std::string p = "model.layers." + std::to_string(i) + ".";
    merge(L.wq, p + "self_attn.q_proj");
    merge(L.wk, p + "self_attn.k_proj");
    merge(L.wv, p + "self_attn.v_proj");
    merge(L.wo, p + "self_attn.o_proj");
    merge(L.wGate, p + "mlp.gate_proj");
    merge(L.wUp, p + "mlp.up_proj");
    merge(L.wDown, p + "mlp.down_proj");
  }
  if (merged == 0) throw std::runtime_error("adapter_model.safetensors has no LoRA weights for this model's layers");
}

at::Tensor LlamaModel::hidden(const at::Tensor& ids, KvCache* cache) const {
  if (canDecodeStepCpu(ids, cache)) return decodeStepCpu(ids, *cache);
  const int64_t B = ids.size(0), T = ids.size(1);
  const auto longOpts = at::TensorOptions().dtype(at::kLong).device(device_);
  // positions [B, T]: row b continues where its cache ends.
  at::Tensor positions = at::arange(T, longOpts).unsqueeze(0).repeat({B, 1});
  if (cache) {
    if (int64_t(cache->lengths.size()) != B) throw std::runtime_error("KV cache batch size does not match the input");
    for (int64_t b = 0; b < B; ++b)
      if (cache->lengths[size_t(b)] + T > cache->capacity) throw std::runtime_error("KV cache is full");
    positions = positions + at::tensor(cache->lengths, at::kLong).to(device_).unsqueeze(1);
  }
  // RoPE angles in fp32, cos/sin cast to the activation dtype: [B, 1, T, hd]
  const at::Tensor freqs = positions.to(at::kFloat).unsqueeze(-1) * invFreq_;  // [B, T, hd/2]
  const at::Tensor emb = at::cat({freqs, freqs}, -1);
  const at::Tensor cos = emb.cos().to(dtype_).unsqueeze(1), sin = emb.sin().to(dtype_).unsqueeze(1);

  at::Tensor x = at::embedding(weights_.embed, ids.to(device_));  // [B, T, H]
  for (size_t l = 0; l < weights_.layers.size(); ++l) {
    const auto& w = weights_.layers[l];
    x = x + attention(w, rmsNorm(x, w.inputNorm, config_.rmsNormEps), cos, sin, positions, cache, l);
    x = x + mlp(w, rmsNorm(x, w.postNorm, config_.rmsNormEps), l);
  }
  if (cache)
    for (auto& len : cache->lengths) len += T;
  return rmsNorm(x, weights_.finalNorm, config_.rmsNormEps);
}

at::Tensor LlamaModel::forward(const at::Tensor& ids, KvCache* cache) const {
  if (canDecodeStepCpu(ids, cache) && lmHeadInStep(ids.size(0))) return decodeStepCpu(ids, *cache, true);
  const at::Tensor h = hidden(ids, cache);
  if (!times_) return logits(h);
  const auto t0 = std::chrono::steady_clock::now();
  at::Tensor out = logits(h);
  times_->lmHead += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

// Where logits() takes our kernels for these rows, the step's own call of them computes what
// logits() would.
bool LlamaModel::lmHeadInStep(int64_t rows) const {
  return fastDecode_ && kernelRowsApply(dtype_, device_, rows, weights_.lmHead, kLogitsKernelRows);
}

at::Tensor LlamaModel::logits(const at::Tensor& hidden) const {
  // A decode step's rows (fused path): our kernels; one rounding to the dtype, as at::linear.
  if (fastDecode_ && kernelRowsApply(hidden, weights_.lmHead, kLogitsKernelRows))
    return projectRows(hidden, weights_.lmHead).to(dtype_).to(at::kFloat);  // [B, T, vocab]
  return project(hidden, weights_.lmHead, at::Tensor()).to(at::kFloat);
}

at::Tensor LlamaModel::attention(const LlamaLayerWeights& w, const at::Tensor& h, const at::Tensor& cos,
                                 const at::Tensor& sin, const at::Tensor& positions, KvCache* cache,
                                 size_t layer) const {
  const int64_t B = h.size(0), T = h.size(1), nh = config_.numHeads, nkv = config_.numKvHeads, hd = config_.headDim;
  const int64_t rep = nh / nkv;
  at::Tensor q = linear(layer, Proj::Q, h, w.wq, w.bq).view({B, T, nh, hd}).transpose(1, 2);   // [B, nh, T, hd]
  at::Tensor k = linear(layer, Proj::K, h, w.wk, w.bk).view({B, T, nkv, hd}).transpose(1, 2);  // [B, nkv, T, hd]
  at::Tensor v = linear(layer, Proj::V, h, w.wv, w.bv).view({B, T, nkv, hd}).transpose(1, 2);  // [B, nkv, T, hd]
  q = q * cos + rotateHalf(q) * sin;
  k = k * cos + rotateHalf(k) * sin;
  bool needMask = T > 1;
  if (cache) {
    int64_t maxLen = 0;
    for (int64_t b = 0; b < B; ++b) {  // append this step's keys/values at each row's end
      const int64_t len = cache->lengths[size_t(b)];
      cache->keys[layer][b].narrow(1, len, T).copy_(k[b]);
      cache->values[layer][b].narrow(1, len, T).copy_(v[b]);
      maxLen = std::max(maxLen, len);
    }
    needMask = needMask || !cache->uniform();
    k = cache->keys[layer].narrow(2, 0, maxLen + T);  // [B, nkv, S, hd]
    v = cache->values[layer].narrow(2, 0, maxLen + T);
  }
  const int64_t S = k.size(2);
  // GQA without copying K/V: query head j = g*rep + r reads kv head g.
  const at::Tensor qg = q.reshape({B, nkv, rep * T, hd});
  at::Tensor scores = at::matmul(qg, k.transpose(2, 3)) * (1.0 / std::sqrt(double(hd)));  // [B, nkv, rep*T, S]
  if (needMask) {
    // key j is visible to the query at position p iff j <= p: [B, 1, 1, T, S]
    const at::Tensor keyPos = at::arange(S, positions.options());
    const at::Tensor hidden = keyPos.view({1, 1, S}) > positions.unsqueeze(-1);
    scores = scores.view({B, nkv, rep, T, S})
                 .masked_fill(hidden.view({B, 1, 1, T, S}), -std::numeric_limits<float>::infinity())
                 .view({B, nkv, rep * T, S});
  }
  const at::Tensor probs = at::softmax(scores, -1, at::kFloat).to(dtype_);
  const at::Tensor o = at::matmul(probs, v).view({B, nh, T, hd}).transpose(1, 2).reshape({B, T, nh * hd});
  return linear(layer, Proj::O, o, w.wo, w.bo);
}

at::Tensor LlamaModel::mlp(const LlamaLayerWeights& w, const at::Tensor& h, size_t layer) const {
  const at::Tensor gated = at::silu(linear(layer, Proj::Gate, h, w.wGate, w.bGate)) * linear(layer, Proj::Up, h, w.wUp, w.bUp);
  return linear(layer, Proj::Down, gated, w.wDown, w.bDown);
}

at::Tensor LlamaModel::linear(size_t layer, Proj p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) const {
  at::Tensor y = project(x, w, b);
  if (delta_) {
    const at::Tensor d = delta_->delta(layer, p, x);
    if (d.defined()) y = y + d.to(y.scalar_type());
  }
  return y;
}

const char* projName(Proj p) {
  switch (p) {
    case Proj::Q: return "q_proj";
    case Proj::K: return "k_proj";
    case Proj::V: return "v_proj";
    case Proj::O: return "o_proj";
    case Proj::Gate: return "gate_proj";
    case Proj::Up: return "up_proj";
    case Proj::Down: return "down_proj";
  }
  return "?";
}

ProjInput inputOf(Proj p) {
  switch (p) {
    case Proj::Q: case Proj::K: case Proj::V: return ProjInput::Qkv;
    case Proj::O: return ProjInput::O;
    case Proj::Gate: case Proj::Up: return ProjInput::GateUp;
    case Proj::Down: return ProjInput::Down;
  }
  return ProjInput::Down;
}

}  // namespace crosslab::model
