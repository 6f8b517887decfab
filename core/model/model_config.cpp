#include "core/model/model_config.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace crosslab::model {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error("config.json: " + what); }

const json& need(const json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) fail(std::string("missing key '") + key + "'");
  return j[key];
}

int64_t positiveInt(const json& j, const char* key) {
  const json& v = need(j, key);
  if (!v.is_number_integer() || v.get<int64_t>() <= 0) fail(std::string("'") + key + "' must be a positive integer");
  return v.get<int64_t>();
}

double number(const json& j, const char* key) {
  const json& v = need(j, key);
  if (!v.is_number()) fail(std::string("'") + key + "' must be a number");
  return v.get<double>();
}

template <typename T>
T optional(const json& j, const char* key, T fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  try {
    return j[key].get<T>();
  } catch (const json::exception&) {
    fail(std::string("'") + key + "' has the wrong type");
  }
}

// bos/eos ids: an int, a list of ints, or absent.
std::vector<int64_t> idList(const json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return {};
  const json& v = j[key];
  if (v.is_number_integer()) return {v.get<int64_t>()};
  if (!v.is_array()) fail(std::string("'") + key + "' must be an int or a list of ints");
  std::vector<int64_t> out;
  for (const auto& x : v) {
    if (!x.is_number_integer()) fail(std::string("'") + key + "' must be an int or a list of ints");
    out.push_back(x.get<int64_t>());
  }
  return out;
}

RopeScaling parseRopeScaling(const json& j) {
  RopeScaling rs;
  if (!j.contains("rope_scaling") || j["rope_scaling"].is_null()) return rs;
  const json& s = j["rope_scaling"];
  if (!s.is_object()) fail("'rope_scaling' must be an object");
  // Newer files say rope_type, older ones type.
  const std::string type = s.contains("rope_type") ? optional<std::string>(s, "rope_type", "")
                                                   : optional<std::string>(s, "type", "default");
  if (type == "default") return rs;
  if (type == "linear") {
    rs.type = RopeScaling::Type::Linear;
    rs.factor = number(s, "factor");
  } else if (type == "llama3") {
    rs.type = RopeScaling::Type::Llama3;
    rs.factor = number(s, "factor");
    rs.lowFreqFactor = number(s, "low_freq_factor");
    rs.highFreqFactor = number(s, "high_freq_factor");
    rs.originalMaxPositions = positiveInt(s, "original_max_position_embeddings");
    if (rs.highFreqFactor <= rs.lowFreqFactor) fail("rope_scaling high_freq_factor must exceed low_freq_factor");
  } else {
    fail("unsupported rope_scaling type '" + type + "' (supported: default, linear, llama3)");
  }
  if (rs.factor <= 0) fail("rope_scaling factor must be positive");
  return rs;
}

}  // namespace

int64_t ModelConfig::parameterCount() const {
  const int64_t q = hiddenSize * numHeads * headDim, kv = 2 * hiddenSize * numKvHeads * headDim;
  const int64_t o = numHeads * headDim * hiddenSize, mlp = 3 * hiddenSize * intermediateSize;
  int64_t bias = attentionBias ? (numHeads + 2 * numKvHeads) * headDim : 0;
  if (mlpBias) bias += 2 * intermediateSize + hiddenSize;
  const int64_t perLayer = q + kv + o + mlp + bias + 2 * hiddenSize;
  const int64_t embed = vocabSize * hiddenSize;
  return numLayers * perLayer + embed + (tieWordEmbeddings ? 0 : embed) + hiddenSize;
}

ModelConfig parseModelConfig(const std::string& jsonText) {
  json j;
  try {
    j = json::parse(jsonText);
  } catch (const json::exception&) {
    fail("not valid JSON");
  }
  if (!j.is_object()) fail("not a JSON object");
  ModelConfig c;
  c.modelType = optional<std::string>(j, "model_type", "");
  if (c.modelType.empty()) fail("missing key 'model_type'");
  if (c.modelType != "llama" && c.modelType != "mistral" && c.modelType != "qwen2")
    fail("unsupported model_type '" + c.modelType + "' (supported: llama, mistral, qwen2)");
  c.hiddenSize = positiveInt(j, "hidden_size");
  c.intermediateSize = positiveInt(j, "intermediate_size");
  c.numLayers = positiveInt(j, "num_hidden_layers");
  c.numHeads = positiveInt(j, "num_attention_heads");
  c.numKvHeads = j.contains("num_key_value_heads") ? positiveInt(j, "num_key_value_heads") : c.numHeads;
  if (c.numHeads % c.numKvHeads != 0) fail("num_attention_heads must be a multiple of num_key_value_heads");
  c.headDim = j.contains("head_dim") && !j["head_dim"].is_null() ? positiveInt(j, "head_dim")
                                                                 : c.hiddenSize / c.numHeads;
  if (c.headDim % 2 != 0 || c.headDim == 0) fail("head_dim must be even and positive");
  c.vocabSize = positiveInt(j, "vocab_size");
  c.rmsNormEps = number(j, "rms_norm_eps");
  c.ropeTheta = optional<double>(j, "rope_theta", 10000.0);
  c.ropeScaling = parseRopeScaling(j);
  c.maxPositions = optional<int64_t>(j, "max_position_embeddings", 2048);
  c.tieWordEmbeddings = optional<bool>(j, "tie_word_embeddings", false);
  // Qwen2 has q/k/v bias without saying so in the config.
  c.attentionBias = optional<bool>(j, "attention_bias", c.modelType == "qwen2");
  c.mlpBias = optional<bool>(j, "mlp_bias", false);
  c.bosIds = idList(j, "bos_token_id");
  c.eosIds = idList(j, "eos_token_id");
  c.torchDtype = optional<std::string>(j, "torch_dtype", "float32");
  const std::string act = optional<std::string>(j, "hidden_act", "silu");
  if (act != "silu") fail("unsupported hidden_act '" + act + "' (supported: silu)");
  return c;
}

ModelConfig loadModelConfig(const std::filesystem::path& dir) {
  std::ifstream in(dir / "config.json", std::ios::binary);
  if (!in) throw std::runtime_error((dir / "config.json").string() + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return parseModelConfig(ss.str());
}

}  // namespace crosslab::model
