#include "core/train/lora_adapter.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/model/safetensors.h"
#include "core/model/safetensors_writer.h"

namespace crosslab::train {
namespace {

constexpr model::Proj kProjs[] = {model::Proj::Q, model::Proj::K,  model::Proj::V,   model::Proj::O,
                                  model::Proj::Gate, model::Proj::Up, model::Proj::Down};
constexpr int kNumProj = 7;

// (in, out) features of a projection, from the loaded weight [out, in].
std::pair<int64_t, int64_t> projShape(const model::LlamaModel& m, size_t layer, model::Proj p) {
  auto& L = const_cast<model::LlamaModel&>(m).weights().layers[layer];
  const at::Tensor* w = nullptr;
  switch (p) {
    case model::Proj::Q: w = &L.wq; break;
    case model::Proj::K: w = &L.wk; break;
    case model::Proj::V: w = &L.wv; break;
    case model::Proj::O: w = &L.wo; break;
    case model::Proj::Gate: w = &L.wGate; break;
    case model::Proj::Up: w = &L.wUp; break;
    case model::Proj::Down: w = &L.wDown; break;
  }
  return {w->size(1), w->size(0)};
}

}  // namespace

double LoraSpec::scaling() const { return rslora ? alpha / std::sqrt(double(rank)) : alpha / double(rank); }

std::string peftModule(size_t layer, model::Proj proj) {
  const bool attn = proj == model::Proj::Q || proj == model::Proj::K || proj == model::Proj::V || proj == model::Proj::O;
  return "model.layers." + std::to_string(layer) + (attn ? ".self_attn." : ".mlp.") + model::projName(proj);
}

LoraAdapter::LoraAdapter(const model::LlamaModel& m, LoraSpec spec, std::uint64_t seed) : spec_(std::move(spec)) {
  if (spec_.rank <= 0) throw std::runtime_error("LoRA rank must be > 0");
  for (const auto& t : spec_.targets) {
    bool known = false;
    for (auto p : kProjs) known = known || t == model::projName(p);
    if (!known) throw std::runtime_error("unknown LoRA target '" + t + "' (q_proj … down_proj)");
  }
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const size_t layers = size_t(m.config().numLayers);
  slot_.assign(layers * kNumProj, -1);
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  for (size_t l = 0; l < layers; ++l) {
    for (int pi = 0; pi < kNumProj; ++pi) {
      const auto p = kProjs[pi];
      if (std::find(spec_.targets.begin(), spec_.targets.end(), model::projName(p)) == spec_.targets.end()) continue;
      const auto [in, out] = projShape(m, l, p);
      // PEFT: kaiming_uniform_(a=sqrt(5)) -> bound = 1/sqrt(fan_in).
      const double bound = 1.0 / std::sqrt(double(in));
      at::Tensor a = at::empty({spec_.rank, in}, f32).uniform_(-bound, bound, gen);  // [r, in]
      at::Tensor b = at::zeros({out, spec_.rank}, f32);                             // [out, r]
      slot_[l * kNumProj + size_t(pi)] = int(params_.size());
      const std::string base = "base_model.model." + peftModule(l, p);
      names_.push_back(base + ".lora_A.weight");
      params_.push_back(a.to(m.device()).requires_grad_(true));
      names_.push_back(base + ".lora_B.weight");
      params_.push_back(b.to(m.device()).requires_grad_(true));
    }
  }
}

at::Tensor LoraAdapter::delta(size_t layer, model::Proj proj, const at::Tensor& x) const {
  const size_t key = layer * kNumProj + size_t(proj);
  if (key >= slot_.size() || slot_[key] < 0) return {};
  const at::Tensor& a = params_[size_t(slot_[key])];
  const at::Tensor& b = params_[size_t(slot_[key]) + 1];
  // Computed in the activation dtype (bf16 autocast semantics); grads reach the fp32 A/B
  // through the casts. x [B, T, in] -> [B, T, r] -> [B, T, out].
  at::Tensor h = training_ && spec_.dropout > 0 ? at::dropout(x, spec_.dropout, true) : x;
  const auto dt = x.scalar_type();
  return at::linear(at::linear(h, a.to(dt)), b.to(dt)) * spec_.scaling();
}

void LoraAdapter::save(const std::filesystem::path& dir, const std::string& baseModel) const {
  std::filesystem::create_directories(dir);
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (size_t i = 0; i < params_.size(); ++i) tensors.emplace_back(names_[i], params_[i].detach());
  writeTensors(dir / "adapter_model.safetensors", tensors);
  nlohmann::json cfg = {{"peft_type", "LORA"},
                        {"task_type", "CAUSAL_LM"},
                        {"r", spec_.rank},
                        {"lora_alpha", spec_.alpha},
                        {"lora_dropout", spec_.dropout},
                        {"target_modules", spec_.targets},
                        {"bias", "none"},
                        {"use_rslora", spec_.rslora},
                        {"use_dora", false},
                        {"fan_in_fan_out", false},
                        {"modules_to_save", nullptr},
                        {"init_lora_weights", true},
                        {"base_model_name_or_path", baseModel},
                        {"inference_mode", true}};
  model::writeFileAtomically(dir / "adapter_config.json", cfg.dump(2) + "\n");
}

void LoraAdapter::loadWeights(const std::filesystem::path& file) {
  const auto tensors = readTensors(file);
  at::NoGradGuard noGrad;
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto it = tensors.find(names_[i]);
    if (it == tensors.end()) throw std::runtime_error(file.string() + ": lacks '" + names_[i] + "'");
    if (it->second.sizes() != params_[i].sizes()) throw std::runtime_error(file.string() + ": '" + names_[i] + "' has the wrong shape");
    params_[i].copy_(it->second);
  }
}

std::map<std::string, at::Tensor> readTensors(const std::filesystem::path& file) {
  model::SafetensorsFile f(file);
  std::map<std::string, at::Tensor> out;
  for (const auto& info : f.header().tensors) {
    if (info.dtype != model::DType::F32) throw std::runtime_error(file.string() + ": '" + info.name + "' is not F32");
    const auto v = f.view(info);
    out[info.name] = at::from_blob(const_cast<uint8_t*>(v.data), info.shape, at::kFloat).clone();
  }
  return out;
}

void writeTensors(const std::filesystem::path& file, const std::vector<std::pair<std::string, at::Tensor>>& tensors) {
  std::vector<at::Tensor> keep;  // contiguous CPU copies alive until written
  std::vector<model::TensorToWrite> out;
  for (const auto& [name, t] : tensors) {
    keep.push_back(t.detach().to(at::kCPU, at::kFloat).contiguous());
    const at::Tensor& c = keep.back();
    out.push_back({name, model::DType::F32, c.sizes().vec(), c.data_ptr(), size_t(c.numel()) * sizeof(float)});
  }
  model::writeSafetensors(file, out);
}

}  // namespace crosslab::train
