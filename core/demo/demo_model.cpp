#include "core/demo/demo_model.h"

#include <nlohmann/json.hpp>

#include <random>
#include <vector>

#include "core/model/safetensors_writer.h"

namespace crosslab::demo {
namespace {

struct InitTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;
};

// transformers' LlamaPreTrainedModel._init_weights: normal(0, initializer_range) for
// linear and embedding weights, ones for RMSNorm weights.
constexpr float kInitStd = 0.02f;

}  // namespace

DemoModelSpec demoModelSpec(bool quick) {
  DemoModelSpec s;
  if (quick) {
    s.hidden = 64;
    s.intermediate = 192;
    s.layers = 2;
  }
  return s;
}

void writeDemoBaseModel(const std::filesystem::path& dir, const tokenizer::TrainedBpe& tok, const DemoModelSpec& s) {
  std::filesystem::create_directories(dir);
  const int64_t vocab = tok.vocabSize(), hd = s.hidden / s.heads;
  // mt19937 + normal_distribution: the same stream on every libstdc++ build.
  std::mt19937 rng(s.seed);
  std::normal_distribution<float> normal(0.f, kInitStd);
  std::vector<InitTensor> tensors;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, bool ones = false) {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    InitTensor t{name, std::move(shape), std::vector<float>(size_t(n), 1.f)};
    if (!ones)
      for (auto& x : t.data) x = normal(rng);
    tensors.push_back(std::move(t));
  };
  add("model.embed_tokens.weight", {vocab, s.hidden});  // tied: also the LM head
  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    add(p + "input_layernorm.weight", {s.hidden}, true);
    add(p + "self_attn.q_proj.weight", {s.heads * hd, s.hidden});
    add(p + "self_attn.k_proj.weight", {s.kvHeads * hd, s.hidden});
    add(p + "self_attn.v_proj.weight", {s.kvHeads * hd, s.hidden});
    add(p + "self_attn.o_proj.weight", {s.hidden, s.heads * hd});
    add(p + "post_attention_layernorm.weight", {s.hidden}, true);
    add(p + "mlp.gate_proj.weight", {s.intermediate, s.hidden});
    add(p + "mlp.up_proj.weight", {s.intermediate, s.hidden});
    add(p + "mlp.down_proj.weight", {s.hidden, s.intermediate});
  }
  add("model.norm.weight", {s.hidden}, true);
  std::vector<model::TensorToWrite> out;
  for (const auto& t : tensors) out.push_back({t.name, model::DType::F32, t.shape, t.data.data(), t.data.size() * 4});
  model::writeSafetensors(dir / "model.safetensors", out, {{"format", "pt"}});

  const int32_t bos = tok.specialId("<|begin_of_text|>"), eot = tok.specialId("<|eot_id|>"),
                eos = tok.specialId("<|end_of_text|>"), eom = tok.specialId("<|eom_id|>");
  nlohmann::ordered_json config = {{"architectures", {"LlamaForCausalLM"}},
                                   {"attention_bias", false},
                                   {"attention_dropout", 0.0},
                                   {"bos_token_id", bos},
                                   {"eos_token_id", {eos, eom, eot}},
                                   {"head_dim", hd},
                                   {"hidden_act", "silu"},
                                   {"hidden_size", s.hidden},
                                   {"initializer_range", kInitStd},
                                   {"intermediate_size", s.intermediate},
                                   {"max_position_embeddings", s.maxPositions},
                                   {"mlp_bias", false},
                                   {"model_type", "llama"},
                                   {"num_attention_heads", s.heads},
                                   {"num_hidden_layers", s.layers},
                                   {"num_key_value_heads", s.kvHeads},
                                   {"pretraining_tp", 1},
                                   {"rms_norm_eps", 1e-5},
                                   {"rope_scaling", nullptr},
                                   {"rope_theta", 500000.0},
                                   {"tie_word_embeddings", true},
                                   {"torch_dtype", "float32"},
                                   {"use_cache", true},
                                   {"vocab_size", vocab}};
  model::writeFileAtomically(dir / "config.json", config.dump(2) + "\n");
  nlohmann::ordered_json gen = {{"bos_token_id", bos}, {"eos_token_id", {eos, eom, eot}}, {"do_sample", false}};
  model::writeFileAtomically(dir / "generation_config.json", gen.dump(2) + "\n");
  tok.write(dir);
}

}  // namespace crosslab::demo
