// The memory fit of a LoRA recipe per GPU. An estimate, stated as one: weights in bf16,
// LoRA states in fp32 (weights + grads + Adam m and v = 16 bytes per trainable
// parameter), activations after Korthikanti et al. (34·s·b·h bytes per layer with
// flash attention; only layer inputs kept under gradient checkpointing) plus fp32
// logits and their gradient, and a fixed runtime overhead.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/venues/preflight.h"

namespace crosslab::venues {
namespace {

constexpr double kGb = 1e9;
constexpr double kOverheadGb = 2.0;        // CUDA/HIP context, allocator slack, NCCL buffers
constexpr double kLiveParams = 1e9;        // stage3_max_live_parameters in our ZeRO-3 JSON
constexpr double kTightFraction = 0.90;    // above this share of the card: warn

struct Shape {
  double h, inter, layers, heads, kvHeads, headDim, vocab;
  bool tied;
};

Shape shapeOf(const nlohmann::json& c) {
  auto num = [&](const char* k, double fallback) {
    auto it = c.find(k);
    return (it != c.end() && it->is_number()) ? it->get<double>() : fallback;
  };
  Shape s{};
  s.h = num("hidden_size", 0);
  s.inter = num("intermediate_size", 4 * s.h);
  s.layers = num("num_hidden_layers", 0);
  s.heads = num("num_attention_heads", 1);
  s.kvHeads = num("num_key_value_heads", s.heads);
  s.headDim = num("head_dim", s.heads > 0 ? s.h / s.heads : 0);
  s.vocab = num("vocab_size", 0);
  auto tied = c.find("tie_word_embeddings");
  s.tied = tied != c.end() && tied->is_boolean() && tied->get<bool>();
  if (s.h <= 0 || s.layers <= 0 || s.vocab <= 0)
    throw std::invalid_argument("config.json lacks hidden_size, num_hidden_layers or vocab_size");
  return s;
}

std::string gb(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", v);
  return buf;
}

}  // namespace

std::int64_t parameterCount(const nlohmann::json& config) {
  const Shape s = shapeOf(config);
  const double q = s.h * s.heads * s.headDim, kv = 2 * s.h * s.kvHeads * s.headDim, o = s.heads * s.headDim * s.h;
  const double perLayer = q + kv + o + 3 * s.h * s.inter + 2 * s.h;
  return static_cast<std::int64_t>(s.vocab * s.h * (s.tied ? 1 : 2) + s.layers * perLayer + s.h);
}

std::int64_t loraParameterCount(const nlohmann::json& config, int rank) {
  const Shape s = shapeOf(config);
  const double qOut = s.heads * s.headDim, kvOut = s.kvHeads * s.headDim;
  // r·(in + out) per adapted Linear: q, k, v, o, gate, up, down.
  const double perLayer = (s.h + qOut) + 2 * (s.h + kvOut) + (qOut + s.h) + 3 * (s.h + s.inter);
  return static_cast<std::int64_t>(s.layers * rank * perLayer);
}

std::vector<FitEstimate> estimateFit(const nlohmann::json& config, const LoraRecipe& r, int gpus) {
  const Shape s = shapeOf(config);
  const double n = std::max(1, gpus);
  const double weights = 2.0 * static_cast<double>(parameterCount(config)) / kGb;           // bf16
  const double lora = 16.0 * static_cast<double>(loraParameterCount(config, r.rank)) / kGb;  // fp32 w, g, m, v
  const double tokens = static_cast<double>(r.microBatch) * r.cutoff;
  const double layerAct = 34.0 * tokens * s.h;                        // bytes, one layer
  const double kept = r.gradientCheckpointing ? s.layers * tokens * s.h * 2.0 + layerAct : s.layers * layerAct;
  const double logits = 2.0 * tokens * s.vocab * 4.0;                 // fp32 logits + their gradient
  const double act = (kept + logits) / kGb;
  const double live = std::min(weights, 2.0 * kLiveParams / kGb);     // ZeRO-3 gathers up to this much

  std::vector<FitEstimate> out;
  out.push_back({"zero0", weights, lora, act, kOverheadGb, weights + lora + act + kOverheadGb, 0});
  out.push_back({"zero3", weights / n + live, lora / n, act, kOverheadGb, weights / n + live + lora / n + act + kOverheadGb, 0});
  out.push_back({"zero3_offload", live, 0, act, kOverheadGb, live + act + kOverheadGb, weights + lora});
  return out;
}

void checkFit(const nlohmann::json& config, const LoraRecipe& recipe, int gpus, double gpuMemoryGb,
              std::optional<double> hostRamGb, PreflightReport& report) {
  const std::string chosen = recipe.deepspeed == "none" ? "zero0" : recipe.deepspeed == "z3" ? "zero3" : "zero3_offload";
  for (const auto& e : estimateFit(config, recipe, gpus)) {
    std::ostringstream msg;
    msg << e.strategy << (e.strategy == chosen ? " (the recipe's)" : "") << ": " << gb(e.perGpuGb) << " per GPU of "
        << gb(gpuMemoryGb) << " (weights " << gb(e.weightsGb) << ", LoRA states " << gb(e.loraStatesGb)
        << ", activations " << gb(e.activationsGb) << ")";
    if (e.cpuRamGb > 0) msg << ", host RAM " << gb(e.cpuRamGb);
    Finding::Level level = Finding::Level::Ok;
    if (e.perGpuGb > gpuMemoryGb) {
      msg << " — will not fit";
      level = e.strategy == chosen ? Finding::Level::Error : Finding::Level::Warning;
    } else if (e.perGpuGb > kTightFraction * gpuMemoryGb) {
      msg << " — tight: under " << gb(gpuMemoryGb - e.perGpuGb) << " left";
      level = Finding::Level::Warning;
    }
    if (hostRamGb && e.cpuRamGb > *hostRamGb) {
      msg << " — host RAM too small";
      level = e.strategy == chosen ? Finding::Level::Error : Finding::Level::Warning;
    }
    report.add(level, "fit", msg.str());
  }
}

std::optional<std::uint64_t> parseDfAvailable(const std::string& dfOutput) {
  // POSIX `df -Pk`: header, then "fs 1024-blocks used available capacity mount".
  std::istringstream in(dfOutput);
  std::string header, line;
  if (!std::getline(in, header) || !std::getline(in, line)) return std::nullopt;
  std::istringstream ls(line);
  std::string fs;
  std::uint64_t blocks = 0, used = 0, avail = 0;
  if (!(ls >> fs >> blocks >> used >> avail)) return std::nullopt;
  return avail * 1024;
}

void checkDisk(std::uint64_t availableBytes, std::uint64_t neededBytes, PreflightReport& report) {
  const std::string msg = gb(availableBytes / kGb) + " free, " + gb(neededBytes / kGb) + " to be written";
  report.add(availableBytes < neededBytes ? Finding::Level::Error : Finding::Level::Ok, "disk", msg);
}

}  // namespace crosslab::venues
