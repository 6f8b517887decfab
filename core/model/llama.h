#pragma once
// The Llama forward pass in libtorch, as transformers' LlamaForCausalLM computes it:
// embeddings, RMSNorm (fp32 math), RoPE (llama3 / linear scaling), GQA attention with a
// causal mask, SwiGLU MLP, final norm, LM head (tied or not), optional q/k/v/o biases.
// Engine-internal header: only code compiled into crosslab_engine includes it.
//
// Shapes: B batch, T new tokens, S cached + new tokens, H hidden, nh/nkv heads, hd head_dim.

#include <ATen/core/Tensor.h>

#include <array>
#include <filesystem>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "core/model/kv_cache.h"
#include "core/model/model_config.h"

namespace crosslab::util {
class StepCrew;
}

namespace crosslab::model {

class CheckpointFiles;

// The seven linear projections of a decoder layer (LoRA's target modules).
enum class Proj { Q, K, V, O, Gate, Up, Down };
const char* projName(Proj p);  // "q_proj" … "down_proj"

// Adds a term to a projection's output, y = x Wᵀ + b + delta(x): LoRA while training (A, B
// with gradients), and per-request adapters in the server. Returning an undefined tensor
// adds nothing. x is [B, T, in]; the result must broadcast to [B, T, out].
// The projections that read one input: Q, K and V (the normalised hidden state), O
// (attention's output), gate and up (the normalised residual), down (the activation). The fused
// CPU decode step runs the LoRA shrinks of an input's projections as one product.
enum class ProjInput { Qkv, O, GateUp, Down };
constexpr int kProjInputs = 4;
ProjInput inputOf(Proj p);

// One adapter's LoRA terms on the projections that read one input, for the batch rows that
// share the adapter, as the fused CPU decode step applies them: one shrink for all those rows
// and projections (x Aᵀ, the projections' A stacked), then per projection one expand (· Bᵀ)
// from its columns of the shrink (the S-LoRA / punica grouping).
struct LoraExpand {
  Proj proj = Proj::Q;
  int64_t offset = 0, rank = 0;  // its columns of the shrink
  // B with the scaling folded in: fp32 models Bᵀ [rank, out] in fp32, contiguous; bf16 models
  // packed for expandBf16 (raw data: no tensor call per step)
  const void* b = nullptr;
};
struct LoraRows {
  const void* a = nullptr;  // [ranks, in]: the projections' A stacked, contiguous, in the model's dtype
  int64_t ranks = 0, in = 0;
  std::array<LoraExpand, 3> expands{};
  int count = 0;                               // expands in use
  const std::vector<int64_t>* rows = nullptr;  // batch rows, ascending
};

// The fp32 sums of x Wᵀ ([..., out], not rounded) through our row kernels where the model's
// projections take them for x's rows (one row; in bf16 on a CPU without AVX512-BF16, any
// number: there libtorch's bf16 product is several times slower); an undefined tensor where
// they use at::linear. W [out, in] contiguous, x's dtype, no autograd.
at::Tensor projectSums(const at::Tensor& x, const at::Tensor& w);

class ProjectionDelta {
 public:
  virtual ~ProjectionDelta() = default;
  virtual at::Tensor delta(size_t layer, Proj proj, const at::Tensor& x) const = 0;
  // For the fused CPU decode step: true when this delta is, for every batch row, nothing or a
  // plain LoRA x Aᵀ Bᵀ whose factors loraGroups() hands out. Otherwise the op-by-op path runs.
  virtual bool rowLora() const { return false; }
  // Appends one entry per adapter that adapts some of `input`'s projections in `layer` for
  // some rows.
  virtual void loraGroups(size_t /*layer*/, ProjInput /*input*/, std::vector<LoraRows>& /*out*/) const {}
};

// Where the fused decode steps' time went (seconds, summed; LlamaModel::setDecodeTimes).
struct DecodeTimes {
  double matmul = 0;     // the seven projections' weight products
  double lora = 0;       // runtime LoRA: gather, shrink, expand, add
  double attention = 0;  // RoPE, KV append, scores, softmax, weighted values
  double other = 0;      // embedding, norms, activation, residual adds
  double lmHead = 0;     // forward()'s LM head: inside the step, or after it (over 64 rows)
  uint64_t steps = 0, rows = 0;
  uint64_t headRows = 0;  // rows whose LM head ran inside the step
  uint64_t groups = 0;   // row groups run (one per step unless the rows were split over threads)
  uint64_t crewLoops = 0;  // loops of one-group steps split over the step crew's threads
};

struct LlamaLayerWeights {
  at::Tensor inputNorm, postNorm;  // [H]
  at::Tensor wq, wk, wv, wo;       // [nh*hd, H], [nkv*hd, H] x2, [H, nh*hd]
  at::Tensor bq, bk, bv, bo;       // undefined unless attention_bias
  at::Tensor wGate, wUp, wDown;    // [I, H], [I, H], [H, I]
  at::Tensor bGate, bUp, bDown;    // undefined unless mlp_bias
};

struct LlamaWeights {
  at::Tensor embed;      // [vocab, H]
  at::Tensor finalNorm;  // [H]
  at::Tensor lmHead;     // [vocab, H]; the embedding matrix itself when tied
  std::vector<LlamaLayerWeights> layers;
};

class LlamaModel {
 public:
  // Reads config.json and the safetensors weights of `dir`; checks every shape against the
  // config. Weights in `dtype` on `device` (no copy when the file already matches on CPU,
  // unless copyWeights: then they are read into memory, and the file's pages handed back;
  // streamed at batch 1, anonymous memory reads faster here than the file's mapped pages).
  static LlamaModel load(const std::filesystem::path& dir, at::ScalarType dtype, at::Device device,
                         bool copyWeights = false);

  // ids [B, T] int64 -> final hidden states [B, T, H]. With a cache, row b continues at
  // position cache->length(b) and the new keys/values are appended to it.
  at::Tensor hidden(const at::Tensor& ids, KvCache* cache = nullptr) const;
  // hidden [B, T, H] -> logits [B, T, vocab] in fp32.
  at::Tensor logits(const at::Tensor& hidden) const;
  // logits(hidden(ids, cache)); a fused decode step (below) runs the LM head inside the step,
  // each row group over its own rows: no second wake of the thread pool per step.
  at::Tensor forward(const at::Tensor& ids, KvCache* cache = nullptr) const;

  KvCache makeCache(int64_t batch, int64_t capacity) const;

  // Merges a PEFT LoRA adapter (adapter_config.json + adapter_model.safetensors) into the
  // weights: W += scaling * B A, computed in fp32 (scaling = lora_alpha / r, or
  // lora_alpha / sqrt(r) with use_rslora). Throws naming the bad file or tensor.
  void mergeLoraAdapter(const std::filesystem::path& adapterDir);

  // Consulted by every projection of every layer until replaced; nullptr = none. The model
  // does not own a training graph: it neither enables nor disables autograd itself.
  void setProjectionDelta(std::shared_ptr<const ProjectionDelta> delta) { delta_ = std::move(delta); }
  const ProjectionDelta* projectionDelta() const { return delta_.get(); }

  // Decode steps on the CPU (T = 1 with a cache of B rows, no autograd, at most a per-row
  // LoRA delta) run through a fused loop over the B rows instead of op by op
  // (core/model/llama_decode_cpu.cpp); on by default. Off: always the op-by-op path (tests
  // compare the two; the batch scheduler picks the faster for each batch size).
  void setFastDecode(bool on) { fastDecode_ = on; }
  bool fastDecode() const { return fastDecode_; }
  // The fused step runs its B rows as up to `groups` groups at once (at most the thread
  // count), each group through every layer on one thread of the model's step crew
  // (core/util/step_crew.h; a group no worker has taken yet is run by the caller): no
  // synchronisation inside the step, each weight streamed once per group. Wins where the
  // weights stay in cache and one thread per step leaves cores idle (small models, large
  // batches); 1 = one group, the default. With one group, products and attention large
  // enough to be worth a second thread split over the same crew (not OpenMP's pool, whose
  // workers a server keeps asleep).
  void setDecodeSplit(int groups) { decodeSplit_ = groups; }
  int decodeSplit() const { return decodeSplit_; }
  // Runs f(begin, end) over rows [0, n) of `values` each, split over the step crew's threads
  // when a chunk would hold enough work (64K values), else on the calling thread: per-row work
  // between steps, such as sampling a batch's logits.
  void parallelRows(int64_t n, int64_t values, const std::function<void(int64_t, int64_t)>& f) const;
  // True when hidden(ids, cache) would take the fused step.
  bool fusedDecodeApplies(const at::Tensor& ids, const KvCache* cache) const { return canDecodeStepCpu(ids, cache); }
  // Adds each fused step's phase times, and forward()'s LM head time on any path, to *times
  // (nullptr: not timed, the default).
  void setDecodeTimes(DecodeTimes* times) { times_ = times; }

  const ModelConfig& config() const { return config_; }
  LlamaWeights& weights() { return weights_; }  // trainers attach LoRA around these
  at::ScalarType dtype() const { return dtype_; }
  at::Device device() const { return device_; }

 private:
  LlamaModel(ModelConfig config, at::ScalarType dtype, at::Device device);
  at::Tensor attention(const LlamaLayerWeights& w, const at::Tensor& h, const at::Tensor& cos, const at::Tensor& sin,
                       const at::Tensor& positions, KvCache* cache, size_t layer) const;
  at::Tensor mlp(const LlamaLayerWeights& w, const at::Tensor& h, size_t layer) const;
  bool canDecodeStepCpu(const at::Tensor& ids, const KvCache* cache) const;
  // [B, 1, H]; withLogits: logits [B, 1, vocab] fp32 instead, the LM head run by each row group
  at::Tensor decodeStepCpu(const at::Tensor& ids, KvCache& cache, bool withLogits = false) const;
  template <class M>
  // keyBlocks: the step scores from cache.keyBlocks (decided once per step by decodeStepCpu).
  void decodeStepCpuImpl(const std::vector<int64_t>& tokens, KvCache& cache, int64_t r0, int64_t r1, at::Tensor& out,
                         float* logits, DecodeTimes* times, bool keyBlocks) const;
  bool lmHeadInStep(int64_t rows) const;  // the step can run the LM head as logits() would
  // project() plus the delta hook.
  at::Tensor linear(size_t layer, Proj p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) const;

  ModelConfig config_;
  at::ScalarType dtype_;
  at::Device device_;
  at::Tensor invFreq_;  // [hd/2] fp32
  LlamaWeights weights_;
  std::shared_ptr<CheckpointFiles> files_;  // keeps the memory maps alive for zero-copy weights
  bool fastDecode_ = true;
  int decodeSplit_ = 1;
  DecodeTimes* times_ = nullptr;
  std::shared_ptr<const ProjectionDelta> delta_;
  // The fused step's threads (row groups, or a one-group step's split loops): made with the
  // model (its workers start on first need), so steps on several threads never race to make it.
  std::shared_ptr<util::StepCrew> crew_;
};

// inv_freq of RoPE with the config's scaling (transformers' _compute_llama3_parameters), fp32.
std::vector<float> ropeInverseFrequencies(const ModelConfig& config);

}  // namespace crosslab::model
