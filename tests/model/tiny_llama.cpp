#include "tests/model/tiny_llama.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "core/model/safetensors_writer.h"

namespace crosslab::testing {
namespace {

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;
};

uint16_t toBf16(float f) {  // round to nearest even, as torch does
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFF + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

}  // namespace

std::string writeTinyLlama(const std::string& dir, const TinyLlamaSpec& s) {
  std::filesystem::create_directories(dir);
  std::mt19937 rng(s.seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  const int64_t hd = s.hidden / s.heads;
  std::vector<Tensor> tensors;
  // std = scale: projections 1/sqrt(fan_in) keep activations O(1).
  auto add = [&](const std::string& name, std::vector<int64_t> shape, float scale, float offset = 0.f) {
    Tensor t{name, shape, {}};
    int64_t n = 1;
    for (auto d : shape) n *= d;
    t.data.resize(size_t(n));
    for (auto& x : t.data) x = offset + scale * normal(rng);
    tensors.push_back(std::move(t));
  };
  const float inH = 1.f / std::sqrt(float(s.hidden)), inI = 1.f / std::sqrt(float(s.intermediate));
  add("model.embed_tokens.weight", {s.vocab, s.hidden}, 1.f);
  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    add(p + "input_layernorm.weight", {s.hidden}, 0.1f, 1.f);  // 1 + 0.1 N: a dropped norm shows
    add(p + "self_attn.q_proj.weight", {s.heads * hd, s.hidden}, 2 * inH);
    add(p + "self_attn.k_proj.weight", {s.kvHeads * hd, s.hidden}, 2 * inH);
    add(p + "self_attn.v_proj.weight", {s.kvHeads * hd, s.hidden}, inH);
    add(p + "self_attn.o_proj.weight", {s.hidden, s.heads * hd}, inH);
    if (s.attentionBias) {
      add(p + "self_attn.q_proj.bias", {s.heads * hd}, 0.5f);
      add(p + "self_attn.k_proj.bias", {s.kvHeads * hd}, 0.5f);
      add(p + "self_attn.v_proj.bias", {s.kvHeads * hd}, 0.5f);
      add(p + "self_attn.o_proj.bias", {s.hidden}, 0.5f);
    }
    add(p + "post_attention_layernorm.weight", {s.hidden}, 0.1f, 1.f);
    add(p + "mlp.gate_proj.weight", {s.intermediate, s.hidden}, inH);
    add(p + "mlp.up_proj.weight", {s.intermediate, s.hidden}, inH);
    add(p + "mlp.down_proj.weight", {s.hidden, s.intermediate}, inI);
  }
  add("model.norm.weight", {s.hidden}, 0.1f, 1.f);
  if (!s.tied) add("lm_head.weight", {s.vocab, s.hidden}, 3 * inH);

  std::vector<std::vector<uint16_t>> halves;
  halves.reserve(tensors.size());
  std::vector<model::TensorToWrite> out;
  for (const auto& t : tensors) {
    if (s.bf16) {
      halves.emplace_back(t.data.size());
      for (size_t k = 0; k < t.data.size(); ++k) halves.back()[k] = toBf16(t.data[k]);
      out.push_back({t.name, model::DType::BF16, t.shape, halves.back().data(), halves.back().size() * 2});
    } else {
      out.push_back({t.name, model::DType::F32, t.shape, t.data.data(), t.data.size() * 4});
    }
  }
  model::writeSafetensors(std::filesystem::path(dir) / "model.safetensors", out, {{"format", "pt"}});

  nlohmann::json config = {{"architectures", {"LlamaForCausalLM"}},
                           {"model_type", "llama"},
                           {"hidden_size", s.hidden},
                           {"intermediate_size", s.intermediate},
                           {"num_hidden_layers", s.layers},
                           {"num_attention_heads", s.heads},
                           {"num_key_value_heads", s.kvHeads},
                           {"vocab_size", s.vocab},
                           {"rms_norm_eps", 1e-5},
                           {"rope_theta", 500000.0},
                           {"max_position_embeddings", 4096},
                           {"tie_word_embeddings", s.tied},
                           {"attention_bias", s.attentionBias},
                           {"hidden_act", "silu"},
                           {"bos_token_id", 1},
                           {"eos_token_id", {2, 3}},
                           {"torch_dtype", s.bf16 ? "bfloat16" : "float32"}};
  // Small original context so that positions in the tests cross all three llama3 bands.
  if (s.llama3Rope)
    config["rope_scaling"] = {{"rope_type", "llama3"},
                              {"factor", 8.0},
                              {"low_freq_factor", 1.0},
                              {"high_freq_factor", 4.0},
                              {"original_max_position_embeddings", 64}};
  const std::string text = config.dump(2);
  model::writeFileAtomically(std::filesystem::path(dir) / "config.json", text);
  return text;
}

void writeTinyLora(const std::string& dir, const TinyLlamaSpec& s, int r, double alpha, bool rslora, uint32_t seed) {
  std::filesystem::create_directories(dir);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  const int64_t hd = s.hidden / s.heads;
  struct Module {
    const char* name;
    int64_t out, in;
  };
  const Module modules[] = {{"self_attn.q_proj", s.heads * hd, s.hidden},   {"self_attn.k_proj", s.kvHeads * hd, s.hidden},
                            {"self_attn.v_proj", s.kvHeads * hd, s.hidden}, {"self_attn.o_proj", s.hidden, s.heads * hd},
                            {"mlp.gate_proj", s.intermediate, s.hidden},    {"mlp.up_proj", s.intermediate, s.hidden},
                            {"mlp.down_proj", s.hidden, s.intermediate}};
  std::vector<std::vector<float>> data;
  data.reserve(size_t(s.layers) * 14);
  std::vector<model::TensorToWrite> out;
  for (int64_t i = 0; i < s.layers; ++i)
    for (const auto& m : modules) {
      const std::string p = "base_model.model.model.layers." + std::to_string(i) + "." + m.name;
      for (int ab = 0; ab < 2; ++ab) {
        const std::vector<int64_t> shape = ab == 0 ? std::vector<int64_t>{r, m.in} : std::vector<int64_t>{m.out, r};
        data.emplace_back(size_t(shape[0] * shape[1]));
        for (auto& x : data.back()) x = 0.05f * normal(rng);
        out.push_back({p + (ab == 0 ? ".lora_A.weight" : ".lora_B.weight"), model::DType::F32, shape, data.back().data(),
                       data.back().size() * 4});
      }
    }
  model::writeSafetensors(std::filesystem::path(dir) / "adapter_model.safetensors", out);
  nlohmann::json cfg = {{"peft_type", "LORA"},     {"task_type", "CAUSAL_LM"}, {"r", r},
                        {"lora_alpha", alpha},     {"lora_dropout", 0.0},      {"bias", "none"},
                        {"use_rslora", rslora},    {"fan_in_fan_out", false},  {"inference_mode", true},
                        {"target_modules", {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}}};
  model::writeFileAtomically(std::filesystem::path(dir) / "adapter_config.json", cfg.dump(2));
}

}  // namespace crosslab::testing
