#include "core/demo/demo_pretrain.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <stdexcept>
#include <thread>

#include "core/model/llama.h"
#include "core/model/safetensors_writer.h"
#include "core/tokenizer/bpe_tokenizer.h"

namespace crosslab::demo {
namespace {

using Clock = std::chrono::steady_clock;

// (HF name, weight) for every tensor the checkpoint stores; the tied LM head is the
// embedding and is listed once.
std::vector<std::pair<std::string, at::Tensor*>> namedWeights(model::LlamaModel& m) {
  auto& w = m.weights();
  std::vector<std::pair<std::string, at::Tensor*>> out = {{"model.embed_tokens.weight", &w.embed}};
  for (size_t i = 0; i < w.layers.size(); ++i) {
    auto& L = w.layers[i];
    const std::string p = "model.layers." + std::to_string(i) + ".";
    const std::pair<const char*, at::Tensor*> parts[] = {
        {"input_layernorm.weight", &L.inputNorm}, {"self_attn.q_proj.weight", &L.wq}, {"self_attn.k_proj.weight", &L.wk},
        {"self_attn.v_proj.weight", &L.wv},       {"self_attn.o_proj.weight", &L.wo}, {"self_attn.q_proj.bias", &L.bq},
        {"self_attn.k_proj.bias", &L.bk},         {"self_attn.v_proj.bias", &L.bv},   {"self_attn.o_proj.bias", &L.bo},
        {"post_attention_layernorm.weight", &L.postNorm}, {"mlp.gate_proj.weight", &L.wGate},
        {"mlp.up_proj.weight", &L.wUp},           {"mlp.down_proj.weight", &L.wDown}, {"mlp.gate_proj.bias", &L.bGate},
        {"mlp.up_proj.bias", &L.bUp},             {"mlp.down_proj.bias", &L.bDown}};
    for (const auto& [name, t] : parts)
      if (t->defined()) out.emplace_back(p + name, t);
  }
  out.emplace_back("model.norm.weight", &w.finalNorm);
  if (!m.config().tieWordEmbeddings) out.emplace_back("lm_head.weight", &w.lmHead);
  return out;
}

// The corpus as one token stream: <|begin_of_text|> text <|end_of_text|> per text.
std::vector<int64_t> packTexts(const tokenizer::BpeTokenizer& tok, const std::vector<std::string>& texts) {
  const auto eos = tok.tokenId("<|end_of_text|>");
  if (!eos) throw std::runtime_error("tokenizer.json lacks <|end_of_text|>");
  std::vector<int64_t> stream;
  for (const auto& t : texts) {
    for (int32_t id : tok.encode(t)) stream.push_back(id);
    stream.push_back(*eos);
  }
  return stream;
}

// Linear warmup, then cosine decay to 10% of the peak.
double learningRate(const PretrainOptions& o, int step) {
  const int warmup = std::max(1, int(std::lround(o.warmupRatio * o.steps)));
  if (step < warmup) return o.learningRate * (step + 1) / warmup;
  const double progress = double(step - warmup) / std::max(1, o.steps - warmup);
  return o.learningRate * (0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI * progress)));
}

// AdamW with HF's defaults (betas 0.9/0.999, eps 1e-8), decoupled weight decay 0.
class AdamW {
 public:
  explicit AdamW(const std::vector<at::Tensor>& params) : params_(params) {
    for (const auto& p : params_) {
      m_.push_back(at::zeros_like(p));
      v_.push_back(at::zeros_like(p));
    }
  }
  void step(double lr) {
    at::NoGradGuard noGrad;
    ++t_;
    const double c1 = 1 - std::pow(kBeta1, t_), c2 = 1 - std::pow(kBeta2, t_);
    for (size_t i = 0; i < params_.size(); ++i) {
      const at::Tensor g = params_[i].grad();
      if (!g.defined()) continue;
      m_[i].mul_(kBeta1).add_(g, 1 - kBeta1);
      v_[i].mul_(kBeta2).addcmul_(g, g, 1 - kBeta2);
      const at::Tensor denom = (v_[i] / c2).sqrt_().add_(kEps);
      params_[i].addcdiv_(m_[i], denom, -lr / c1);
    }
  }

 private:
  static constexpr double kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;
  std::vector<at::Tensor> params_, m_, v_;
  int t_ = 0;
};

// Scales every gradient so that their global L2 norm is at most maxNorm.
void clipGradients(const std::vector<at::Tensor>& params, double maxNorm) {
  at::NoGradGuard noGrad;
  double sq = 0;
  for (const auto& p : params)
    if (p.grad().defined()) sq += p.grad().pow(2).sum().item<double>();
  const double norm = std::sqrt(sq);
  if (norm <= maxNorm || norm == 0) return;
  for (const auto& p : params)
    if (p.grad().defined()) p.grad().mul_(maxNorm / (norm + 1e-6));
}

void saveWeights(const std::filesystem::path& dir, const std::vector<std::pair<std::string, at::Tensor*>>& named) {
  std::vector<at::Tensor> keep;  // contiguous fp32 copies outlive the write
  std::vector<model::TensorToWrite> out;
  for (const auto& [name, t] : named) {
    keep.push_back(t->detach().to(at::kFloat).contiguous());
    const at::Tensor& c = keep.back();
    out.push_back({name, model::DType::F32, c.sizes().vec(), c.data_ptr(), size_t(c.numel()) * 4});
  }
  model::writeSafetensors(dir / "model.safetensors", out, {{"format", "pt"}});
}

}  // namespace

PretrainResult pretrainDemoModel(const std::filesystem::path& dir, const std::vector<std::string>& texts,
                                 const PretrainOptions& o) {
  if (o.steps < 1 || o.batch < 1 || o.seqLen < 2) throw std::runtime_error("pretraining needs steps, batch >= 1 and seqLen >= 2");
  at::set_num_threads(o.threads > 0 ? o.threads : int(std::max(1u, std::thread::hardware_concurrency())));
  at::manual_seed(o.seed);
  const auto tok = tokenizer::BpeTokenizer::load(dir / "tokenizer.json");
  const std::vector<int64_t> stream = packTexts(tok, texts);
  if (int64_t(stream.size()) < o.seqLen + 1) throw std::runtime_error("pretraining corpus is shorter than one sequence");

  auto model = model::LlamaModel::load(dir, at::kFloat, at::Device(at::kCPU));
  const auto named = namedWeights(model);
  std::vector<at::Tensor> params;
  for (const auto& [name, t] : named) {
    *t = t->clone().set_requires_grad(true);  // off the read-only file map, trainable
    params.push_back(*t);
  }
  if (model.config().tieWordEmbeddings) model.weights().lmHead = model.weights().embed;
  AdamW optimizer(params);

  const at::Tensor all = at::tensor(stream, at::kLong);  // [N]
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<int64_t> start(0, int64_t(stream.size()) - o.seqLen - 1);
  PretrainResult r;
  r.corpusTokens = int64_t(stream.size());
  const auto t0 = Clock::now();
  const int tailFrom = o.steps - std::max(1, o.steps / 10);
  double tailSum = 0;
  for (int step = 0; step < o.steps; ++step) {
    std::vector<at::Tensor> rows;
    for (int b = 0; b < o.batch; ++b) rows.push_back(all.narrow(0, start(rng), o.seqLen + 1));
    const at::Tensor window = at::stack(rows);  // [B, T+1]
    const at::Tensor logits = model.forward(window.narrow(1, 0, o.seqLen));  // [B, T, vocab]
    const at::Tensor loss = at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}),
                                                   window.narrow(1, 1, o.seqLen).reshape({-1}));
    for (auto& p : params) p.mutable_grad() = at::Tensor();
    loss.backward();
    clipGradients(params, o.maxGradNorm);
    const double lr = learningRate(o, step);
    optimizer.step(lr);
    const double l = loss.item<double>();
    if (!std::isfinite(l)) throw std::runtime_error("pretraining loss is not finite at step " + std::to_string(step + 1));
    if (step == 0) r.firstLoss = l;
    if (step >= tailFrom) tailSum += l;
    r.tokens += int64_t(o.batch) * o.seqLen;
    if (o.onProgress)
      o.onProgress({step + 1, o.steps, l, lr, std::chrono::duration<double>(Clock::now() - t0).count(), r.tokens});
  }
  r.steps = o.steps;
  r.lastLoss = tailSum / (o.steps - tailFrom);
  saveWeights(dir, named);
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

}  // namespace crosslab::demo
