#pragma once
// Preflight: what to check before the meter runs for nothing. Model folder complete
// (every shard named in the index present and as long as its own header says, config
// and tokenizer files present), SHA-256 provenance against recorded references, Hugging
// Face cache hazards, the memory fit of a recipe per GPU under ZeRO-0/3/offload, and
// free disk on the box.

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/train/recipe.h"

namespace crosslab::venues {

struct Finding {
  enum class Level { Ok, Warning, Error };
  Level level = Level::Ok;
  std::string check;    // "model folder", "provenance", "hf cache", "fit", "disk"
  std::string message;
};

struct PreflightReport {
  std::vector<Finding> findings;
  void add(Finding::Level level, const std::string& check, const std::string& message) {
    findings.push_back({level, check, message});
  }
  bool blocked() const;  // any Error
  nlohmann::json toJson() const;
};

// Files, shards (headers and sizes), config and tokenizer of a Hugging Face model folder.
// Our engine reads tokenizer.json alone; LLaMA-Factory and vLLM also need
// tokenizer_config.json (`needTokenizerConfig`).
void checkModelFolder(const std::filesystem::path& dir, PreflightReport& report, bool needTokenizerConfig = true);
// `hashesFile` in sha256sum format ("HEX  name"). Shards are hashed only when `allShards`.
void checkProvenance(const std::filesystem::path& dir, const std::filesystem::path& hashesFile, bool allShards,
                     PreflightReport& report);
// Lock files under the cache owned by another user (a previously dockered HF_HOME).
void checkHfCache(const std::filesystem::path& hfHome, PreflightReport& report);
// The snapshot folder for `repoId` in a hub cache (use it instead of a hub lookup offline).
std::optional<std::filesystem::path> hfSnapshotPath(const std::filesystem::path& hubCache, const std::string& repoId);

// Memory per GPU in bytes for a LoRA recipe on a model config.json.
struct FitEstimate {
  std::string strategy;  // "zero0", "zero3", "zero3_offload"
  double weightsGb = 0, loraStatesGb = 0, activationsGb = 0, overheadGb = 0;
  double perGpuGb = 0;   // sum on each GPU
  double cpuRamGb = 0;   // offloaded state in host RAM (whole box)
};
std::int64_t parameterCount(const nlohmann::json& config);
std::int64_t loraParameterCount(const nlohmann::json& config, int rank);
std::vector<FitEstimate> estimateFit(const nlohmann::json& config, const train::Recipe& recipe, int gpus);
// Adds a Finding per strategy against `gpuMemoryGb` (and host RAM when known).
void checkFit(const nlohmann::json& config, const train::Recipe& recipe, int gpus, double gpuMemoryGb,
              std::optional<double> hostRamGb, PreflightReport& report);
// Parses `df -Pk DIR` output; bytes available, or nullopt.
std::optional<std::uint64_t> parseDfAvailable(const std::string& dfOutput);
void checkDisk(std::uint64_t availableBytes, std::uint64_t neededBytes, PreflightReport& report);

}  // namespace crosslab::venues
