#include "core/infer/runtime_lora.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <stdexcept>

#include "core/model/adapter_config.h"
#include "core/model/cpu_elementwise.h"
#include "core/model/cpu_matmul.h"
#include "core/model/safetensors.h"

namespace crosslab::infer {
namespace {

using model::Proj;

at::ScalarType scalarType(model::DType d, const std::string& name) {
  switch (d) {
    case model::DType::F32: return at::kFloat;
    case model::DType::BF16: return at::kBFloat16;
    case model::DType::F16: return at::kHalf;
    default: throw std::runtime_error("adapter tensor '" + name + "' is not F32, BF16 or F16");
  }
}

const char* moduleOf(Proj p) {
  switch (p) {
    case Proj::Q: case Proj::K: case Proj::V: case Proj::O: return "self_attn";
    default: return "mlp";
  }
}

const at::Tensor& weightOf(const model::LlamaLayerWeights& w, Proj p) {
  switch (p) {
    case Proj::Q: return w.wq;
    case Proj::K: return w.wk;
    case Proj::V: return w.wv;
    case Proj::O: return w.wo;
    case Proj::Gate: return w.wGate;
    case Proj::Up: return w.wUp;
    default: return w.wDown;
  }
}

// x Aᵀ (scaling·B)ᵀ, each product rounded to x's dtype as at::matmul rounds it. Where the
// projections run x's rows through our kernels (model::projectSums: in bf16 without
// AVX512-BF16 every prefill and op-by-op step, where libtorch's bf16 product runs at 4-5
// GFLOP/s), so do these two products: the shrink through the row kernels, the expand through
// the fused step's (expandBf16 / matmulTransposed over B as loaded for it) — the fused step's
// sums. Elsewhere at::matmul.
at::Tensor loraTerm(const LoraModule& mod, const at::Tensor& x) {
  const bool bf16 = x.scalar_type() == at::kBFloat16;
  at::Tensor mid;  // [..., r]: the shrink's fp32 sums
  if ((bf16 ? mod.bPacked : mod.bt).defined()) mid = model::projectSums(x, mod.a);
  if (!mid.defined()) return at::matmul(at::matmul(x, mod.a.t()), mod.b.t());
  const int64_t r = mod.a.size(0), out = mod.b.size(0), n = mid.numel() / r;
  float* mp = mid.data_ptr<float>();
  if (bf16) model::roundBf16(mp, mid.numel());  // the shrink's bf16 result, held as floats
  at::Tensor y = at::empty({n, out}, x.options().dtype(at::kFloat));
  float* yp = y.data_ptr<float>();
  // each thread's rows worth >= 1M multiply-adds (matmulGrain's measure)
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 20) / std::max<int64_t>(1, r * out));
  at::parallel_for(0, n, grain, [&](int64_t b, int64_t e) {
    if (bf16)
      model::expandBf16(reinterpret_cast<const uint16_t*>(mod.bPacked.data_ptr<at::BFloat16>()), r, out, mp + b * r,
                        e - b, yp + b * out, out);
    else
      model::matmulTransposed(mod.bt.data_ptr<float>(), r, out, mp + b * r, e - b, yp + b * out, out);
  });
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = out;
  return y.to(x.scalar_type()).view(shape);
}

}  // namespace

LoraAdapter loadLoraAdapter(const std::string& name, const std::filesystem::path& dir, const model::LlamaModel& m) {
  const double scaling = model::loadAdapterConfig(dir).scaling();
  model::SafetensorsFile file(dir / "adapter_model.safetensors");
  auto& weights = const_cast<model::LlamaModel&>(m).weights();  // read only: shapes
  const auto get = [&](const std::string& key) -> at::Tensor {
    const model::TensorInfo* info = file.find(key);
    if (!info) return {};
    const auto v = file.view(*info);
    return at::from_blob(const_cast<uint8_t*>(v.data), info->shape, at::TensorOptions().dtype(scalarType(info->dtype, key)))
        .to(at::kFloat, /*non_blocking=*/false, /*copy=*/true);  // a real copy: the map closes with `file`
  };
  LoraAdapter adapter{name, std::vector<std::array<LoraModule, 7>>(weights.layers.size()),
                      std::vector<std::array<at::Tensor, model::kProjInputs>>(weights.layers.size()),
                      std::vector<std::array<model::LoraRows, model::kProjInputs>>(weights.layers.size())};
  int found = 0;
  for (size_t l = 0; l < weights.layers.size(); ++l) {
    for (int pi = 0; pi < 7; ++pi) {
      const Proj p = Proj(pi);
      const std::string module = "model.layers." + std::to_string(l) + "." + moduleOf(p) + "." + model::projName(p);
      const std::string prefix = "base_model.model." + module;
      const at::Tensor a = get(prefix + ".lora_A.weight"), b = get(prefix + ".lora_B.weight");  // [r, in], [out, r]
      if (!a.defined() && !b.defined()) continue;
      if (!a.defined() || !b.defined()) throw std::runtime_error("adapter has only one of lora_A/lora_B for '" + module + "'");
      const at::Tensor& w = weightOf(weights.layers[l], p);  // [out, in]
      if (a.dim() != 2 || b.dim() != 2 || a.size(1) != w.size(1) || b.size(0) != w.size(0) || a.size(0) != b.size(1))
        throw std::runtime_error("adapter tensors for '" + module + "' do not fit the model");
      if (a.size(0) == 0) throw std::runtime_error("adapter tensors for '" + module + "' have rank 0");
      const at::Tensor scaled = (b * scaling).to(m.device(), m.dtype()).contiguous();
      LoraModule& mod = adapter.layers[l][size_t(pi)];
      mod.a = a.to(m.device(), m.dtype()).contiguous();
      mod.b = scaled;
      if (m.device().is_cpu() && m.dtype() == at::kBFloat16) {
        const int64_t r = scaled.size(1), out = scaled.size(0);
        mod.bPacked = at::empty({model::expandBf16PackedSize(r, out)}, at::kBFloat16);
        model::packExpandBf16(reinterpret_cast<const uint16_t*>(scaled.data_ptr<at::BFloat16>()), out, r,
                              reinterpret_cast<uint16_t*>(mod.bPacked.data_ptr<at::BFloat16>()));
      } else {
        mod.bt = scaled.t().to(at::kFloat).contiguous();  // widened (exact): no conversion per use
      }
      ++found;
    }
    // Each input's A stacked, so that the fused decode step shrinks once for Q, K and V, and
    // once for gate and up; the modules' A become views of it (contiguous: whole rows).
    for (int in = 0; in < model::kProjInputs; ++in) {
      std::vector<at::Tensor> parts;
      for (int pi = 0; pi < 7; ++pi)
        if (int(model::inputOf(Proj(pi))) == in && adapter.layers[l][size_t(pi)].a.defined())
          parts.push_back(adapter.layers[l][size_t(pi)].a);
      if (parts.empty()) continue;
      const at::Tensor stacked = at::cat(parts, 0).contiguous();
      adapter.stacked[l][size_t(in)] = stacked;
      model::LoraRows& fused = adapter.fused[l][size_t(in)];
      fused.a = stacked.data_ptr();
      fused.ranks = stacked.size(0);
      fused.in = stacked.size(1);
      int64_t offset = 0;
      for (int pi = 0; pi < 7; ++pi) {
        LoraModule& mod = adapter.layers[l][size_t(pi)];
        if (int(model::inputOf(Proj(pi))) != in || !mod.a.defined()) continue;
        const int64_t r = mod.a.size(0);
        mod.a = stacked.narrow(0, offset, r);
        mod.offset = offset;
        const at::Tensor& b = mod.bPacked.defined() ? mod.bPacked : mod.bt;
        fused.expands[size_t(fused.count++)] = {Proj(pi), offset, r, b.defined() ? b.data_ptr() : nullptr};
        offset += r;
      }
    }
  }
  if (found == 0) throw std::runtime_error((dir / "adapter_model.safetensors").string() + ": no LoRA weights for this model");
  return adapter;
}

BatchLoraDelta::BatchLoraDelta(const std::vector<LoraAdapter>& adapters, const std::vector<int>& rowAdapter, at::Device device)
    : adapters_(adapters) {
  std::map<int, std::vector<int64_t>> rows;
  for (size_t b = 0; b < rowAdapter.size(); ++b)
    if (rowAdapter[b] >= 0) rows[rowAdapter[b]].push_back(int64_t(b));
  for (auto& [adapter, idx] : rows) {
    wholeBatch_ = rows.size() == 1 && idx.size() == rowAdapter.size();
    groups_.push_back({adapter, idx, at::tensor(idx, at::kLong).to(device)});
  }
}

void BatchLoraDelta::loraGroups(size_t layer, model::ProjInput input, std::vector<model::LoraRows>& out) const {
  for (const auto& g : groups_) {
    const model::LoraRows& fused = adapters_[size_t(g.adapter)].fused[layer][size_t(input)];
    if (fused.count == 0) continue;
    out.push_back(fused);
    out.back().rows = &g.rowList;
  }
}

at::Tensor BatchLoraDelta::delta(size_t layer, model::Proj proj, const at::Tensor& x) const {
  at::Tensor out;  // [B, T, out]; undefined = no row adapted
  for (const auto& g : groups_) {
    const LoraModule& mod = adapters_[size_t(g.adapter)].layers[layer][size_t(proj)];
    if (!mod.a.defined()) continue;
    if (wholeBatch_) return loraTerm(mod, x);
    const at::Tensor d = loraTerm(mod, x.index_select(0, g.rows));  // [n, T, out]
    if (!out.defined()) out = at::zeros({x.size(0), x.size(1), d.size(2)}, d.options());
    out.index_copy_(0, g.rows, d);
  }
  return out;
}

}  // namespace crosslab::infer
