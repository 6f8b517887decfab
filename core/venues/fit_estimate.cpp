// The memory fit of a LoRA recipe per GPU. An estimate, stated as one; every figure
// below is counted from what the software keeps, not fitted to an observation:
//  - weights: bf16, 2 bytes per parameter (the frozen base);
//  - LoRA states: fp32 weight + grad + Adam m and v = 16 bytes per trainable parameter;
//  - activations at the cutoff (the worst case: LLaMA-Factory pads a batch to its longest
//    row, at most cutoff_len), counted per token and decoder layer from what autograd
//    keeps in Hugging Face's LlamaDecoderLayer under PEFT LoRA with SDPA attention (see
//    kActBytesPerH / kActBytesPerI); under gradient checkpointing (LLaMA-Factory's
//    default, `disable_gradient_checkpointing: false`) only each layer's bf16 input is
//    kept, plus one layer recomputed in full during backward;
//  - logits and their loss: see kLogitBytes;
//  - ZeRO-3 working set: the gathered parameters DeepSpeed may hold at once;
//  - a fixed runtime reserve (kOverheadGb).
// What it cannot count is the caching allocator's fragmentation (reserved − allocated),
// which depends on the order of allocations, not on shapes: instead of a hidden constant,
// anything above kTightFraction of the card is reported as tight.
//
// Checked against the reference lab (seeds/000): Llama 3.1 70B, r16 all linear, cutoff
// 4096, 2× MI300X 192 GB. Plain ZeRO-3 OOMed with 120 MB left; ZeRO-3 + CPU offload fit.
// With every layer's activations kept (no checkpointing) this model gives ~217 GB per GPU
// for ZeRO-3 (will not fit) and ~145 GB with offload (fits), i.e. the lab's outcome. With
// checkpointing on it gives ~90 GB for plain ZeRO-3: the lab's OOM is not explained by the
// model state then, and the estimate does not pretend otherwise (tests/core/test_venues_core).
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/venues/preflight.h"

namespace crosslab::venues {
namespace {

constexpr double kGb = 1e9;
// CUDA/HIP context (~0.5–1 GB per process), NCCL/RCCL communicator buffers and the
// cuBLAS/hipBLASLt workspace: a fixed reserve, the same on every card.
constexpr double kOverheadGb = 2.0;
// ZeRO-3 working set of gathered (bf16) parameters: stage3_max_live_parameters in our
// ds_z3 JSON (LLaMA-Factory's examples/deepspeed/ds_z3_config.json) plus the prefetch
// bucket, which HF's "auto" sets to 0.9·hidden² (transformers integrations/deepspeed.py).
constexpr double kLiveParams = 1e9;
constexpr double kPrefetchPerH2 = 0.9;
constexpr double kTightFraction = 0.90;  // above this share of the card: warn (fragmentation, see above)
// Bytes autograd keeps per token in one LlamaDecoderLayer (bf16 activations, frozen base
// Linear layers keep nothing for their own weights): the two RMSNorms upcast to fp32 and
// keep that fp32 input (2 × 4h); the LoRA A of q/k/v and of gate/up keep their shared
// normalized input (2 × 2h); SDPA keeps q, k and v (repeat_kv expands k and v to every
// head) and its output (4 × 2h); o_proj's LoRA keeps the reshaped attention output (2h):
// 22·h. The SwiGLU MLP keeps gate, up, silu(gate) and their product (down_proj's LoRA
// input): 4 × 2 = 8 bytes per intermediate unit. LoRA's r-wide intermediates and the
// attention's log-sum-exp are negligible. (Korthikanti et al.'s 34·h is for GPT blocks with
// a 4h GELU MLP and dropout masks; Llama's 3.5h SwiGLU MLP keeps more.)
constexpr double kActBytesPerH = 22.0;
constexpr double kActBytesPerI = 8.0;
constexpr double kCheckpointBytesPerH = 2.0;  // a checkpointed layer keeps its bf16 input
// Per token and vocabulary entry at the loss (transformers' ForCausalLMLoss): the bf16
// logits the model returns (2), their fp32 upcast whose log_softmax output cross_entropy
// keeps (4), and in backward its fp32 gradient (4) and the bf16 gradient into lm_head (2).
constexpr double kLogitBytes = 12.0;

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

namespace {

double activationBytes(const Shape& s, const train::Recipe& r, bool checkpointing) {
  const double tokens = static_cast<double>(r.perDeviceTrainBatchSize) * r.cutoffLen;
  const double layer = (kActBytesPerH * s.h + kActBytesPerI * s.inter) * tokens;  // one layer, in full
  const double kept = checkpointing ? s.layers * tokens * s.h * kCheckpointBytesPerH + layer : s.layers * layer;
  return kept + kLogitBytes * tokens * s.vocab;
}

}  // namespace

std::vector<FitEstimate> estimateFit(const nlohmann::json& config, const train::Recipe& r, int gpus) {
  const Shape s = shapeOf(config);
  const double n = std::max(1, gpus);
  const double weights = 2.0 * static_cast<double>(parameterCount(config)) / kGb;           // bf16
  const double lora = 16.0 * static_cast<double>(loraParameterCount(config, r.loraRank)) / kGb;  // fp32 w, g, m, v
  const double act = activationBytes(s, r, r.gradientCheckpointing) / kGb;
  const double live = std::min(weights, 2.0 * (kLiveParams + kPrefetchPerH2 * s.h * s.h) / kGb);

  std::vector<FitEstimate> out;
  out.push_back({"zero0", weights, lora, act, kOverheadGb, weights + lora + act + kOverheadGb, 0});
  out.push_back({"zero3", weights / n + live, lora / n, act, kOverheadGb, weights / n + live + lora / n + act + kOverheadGb, 0});
  out.push_back({"zero3_offload", live, 0, act, kOverheadGb, live + act + kOverheadGb, weights + lora});
  return out;
}

void checkFit(const nlohmann::json& config, const train::Recipe& recipe, int gpus, double gpuMemoryGb,
              std::optional<double> hostRamGb, PreflightReport& report) {
  // ZeRO-2 keeps the whole bf16 weights on every GPU, as ZeRO-0 does: the weights dominate.
  const std::string chosen = recipe.deepspeedStage < 3 ? "zero0" : recipe.deepspeedOffload ? "zero3_offload" : "zero3";
  for (const auto& e : estimateFit(config, recipe, gpus)) {
    std::ostringstream msg;
    msg << e.strategy << (e.strategy == chosen ? " (the recipe's)" : "") << ": " << gb(e.perGpuGb) << " per GPU of "
        << gb(gpuMemoryGb) << " (weights " << gb(e.weightsGb) << ", LoRA states " << gb(e.loraStatesGb)
        << ", activations " << gb(e.activationsGb) << ")";
    if (e.cpuRamGb > 0) msg << ", host RAM " << gb(e.cpuRamGb);
    Finding::Level level = Finding::Level::Ok;
    if (e.perGpuGb > gpuMemoryGb) {
      msg << " — will not fit";
      if (!recipe.gradientCheckpointing) {  // the cheapest way out: say what checkpointing would save
        const Shape s = shapeOf(config);
        const double saved = (activationBytes(s, recipe, false) - activationBytes(s, recipe, true)) / kGb;
        msg << " (gradient checkpointing would save " << gb(saved) << ")";
      }
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
