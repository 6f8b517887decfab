#pragma once
// config.json of a Llama-family checkpoint as typed values ("parse JSON at the edge").

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace crosslab::model {

struct RopeScaling {
  enum class Type { None, Linear, Llama3 } type = Type::None;
  double factor = 1.0;
  double lowFreqFactor = 1.0;   // llama3 only
  double highFreqFactor = 4.0;  // llama3 only
  int64_t originalMaxPositions = 8192;
};

struct ModelConfig {
  std::string modelType = "llama";
  int64_t hiddenSize = 0;
  int64_t intermediateSize = 0;
  int64_t numLayers = 0;
  int64_t numHeads = 0;
  int64_t numKvHeads = 0;  // GQA: numHeads % numKvHeads == 0
  int64_t headDim = 0;     // explicit, or hiddenSize / numHeads
  int64_t vocabSize = 0;
  double rmsNormEps = 1e-6;
  double ropeTheta = 10000.0;
  RopeScaling ropeScaling;
  int64_t maxPositions = 2048;
  bool tieWordEmbeddings = false;
  bool attentionBias = false;
  bool mlpBias = false;
  std::vector<int64_t> bosIds;
  std::vector<int64_t> eosIds;
  std::string torchDtype = "float32";

  // Parameter count implied by the shapes (embeddings counted once when tied).
  int64_t parameterCount() const;
};

// Throws std::runtime_error "config.json: missing key 'hidden_size'" and the like.
ModelConfig parseModelConfig(const std::string& jsonText);
ModelConfig loadModelConfig(const std::filesystem::path& dir);

}  // namespace crosslab::model
