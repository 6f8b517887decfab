#include "core/train/trainer.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>

#include "core/model/llama.h"
#include "core/model/safetensors_writer.h"
#include "core/train/lora_adapter.h"
#include "core/train/lr_schedule.h"

namespace crosslab::train {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

LoraSpec loraSpec(const Recipe& r) {
  return LoraSpec{r.loraRank, double(r.loraAlpha), r.loraDropout, r.useRslora, r.loraTargets};
}

// Inputs shifted as HF's causal LM loss: position t predicts labels[t + 1].
std::int64_t trainedTargets(const EncodedExample& e) {
  std::int64_t n = 0;
  for (size_t t = 1; t < e.labels.size(); ++t) n += e.labels[t] != kIgnoreIndex;
  return n;
}

// A seed-fixed permutation of [0, n) for one epoch (Fisher-Yates on mt19937_64, so it is
// the same on every platform).
std::vector<size_t> epochOrder(size_t n, std::uint64_t seed, std::int64_t epoch) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 rng(seed * 1000003ULL + std::uint64_t(epoch));
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[size_t(rng() % i)]);
  return order;
}

std::string readText(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw std::runtime_error(p.string() + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

struct Trainer::Impl {
  model::LlamaModel& model;
  Recipe recipe;
  std::vector<EncodedExample> train, eval;
  TrainerOptions options;
  std::shared_ptr<LoraAdapter> lora;
  std::vector<at::Tensor> expAvg, expAvgSq;  // AdamW state, fp32, like the parameters
  std::int64_t step = 0, totalTokens = 0;
  double elapsedBefore = 0;  // seconds spent before a resume
  Clock::time_point started;
  std::int64_t cachedEpoch = -1;
  std::vector<size_t> order;
  mutable TrainPhaseSeconds phases;
  static double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

  Impl(model::LlamaModel& m, Recipe r, std::vector<EncodedExample> t, std::vector<EncodedExample> e, TrainerOptions o)
      : model(m), recipe(std::move(r)), train(std::move(t)), eval(std::move(e)), options(std::move(o)) {
    if (train.empty()) throw std::runtime_error("no training examples");
    lora = std::make_shared<LoraAdapter>(model, loraSpec(recipe), recipe.seed);
    for (const auto& p : lora->parameters()) {
      expAvg.push_back(at::zeros_like(p).detach());
      expAvgSq.push_back(at::zeros_like(p).detach());
    }
    model.setProjectionDelta(lora);
  }

  std::int64_t total() const { return recipe.totalSteps(std::int64_t(train.size())); }
  std::int64_t perEpoch() const { return recipe.stepsPerEpoch(std::int64_t(train.size())); }
  double elapsed() const { return elapsedBefore + std::chrono::duration<double>(Clock::now() - started).count(); }

  // Indices of the examples of optimizer step s (see the header for the layout).
  std::vector<size_t> stepExamples(std::int64_t s) {
    const std::int64_t epoch = s / perEpoch(), k = s % perEpoch();
    if (epoch != cachedEpoch) order = epochOrder(train.size(), recipe.seed, epoch), cachedEpoch = epoch;
    const size_t eb = size_t(recipe.effectiveBatch());
    const size_t begin = std::min(order.size(), size_t(k) * eb), end = std::min(order.size(), begin + eb);
    return {order.begin() + std::ptrdiff_t(begin), order.begin() + std::ptrdiff_t(end)};
  }

  // Summed token loss of a micro-batch (right-padded; causal attention keeps the padding out
  // of earlier positions), or nullopt when it has no trained position. The LM head runs only
  // at the N trained positions: [N, H] -> [N, V]. With gradScale > 0 the gradient of
  // gradScale × the sum is back-propagated into the adapter here.
  //
  // The head's backward is written out rather than recorded: d(sum of -log_softmax at the
  // targets)/d logits = softmax - onehot, computed in place in the fp32 log-softmax buffer and
  // cast once to the compute dtype, then one [N, V] × [V, H] matmul. Same arithmetic as
  // autograd (nll_loss + log_softmax + the fp32 cast), with fewer passes over the 128k-wide
  // [N, V] buffers (no zero-filled NLL gradient, no log-softmax backward reduction) and
  // without keeping them alive until backward(). train_bench: +10% tokens/s on `small` bf16.
  std::optional<double> microBatchLossSum(const std::vector<const EncodedExample*>& batch, std::int64_t* inputTokens,
                                          double gradScale) const {
    std::int64_t T = 0;
    for (const auto* e : batch) T = std::max<std::int64_t>(T, std::int64_t(e->inputIds.size()));
    const std::int64_t B = std::int64_t(batch.size());
    std::vector<std::int64_t> ids(size_t(B * T), 0), labels(size_t(B * T), kIgnoreIndex);
    for (std::int64_t b = 0; b < B; ++b) {
      const auto& e = *batch[size_t(b)];
      for (size_t t = 0; t < e.inputIds.size(); ++t) {
        ids[size_t(b * T) + t] = e.inputIds[t];
        labels[size_t(b * T) + t] = e.labels[t];
      }
      if (inputTokens) *inputTokens += std::int64_t(e.inputIds.size());
    }
    const at::Tensor idsT = at::tensor(ids, at::kLong).view({B, T});
    const at::Tensor labelsT = at::tensor(labels, at::kLong).view({B, T});
    const at::Tensor targets = labelsT.narrow(1, 1, T - 1).reshape({-1}).to(model.device());  // [B*(T-1)]
    const at::Tensor rows = at::nonzero(targets != kIgnoreIndex).view({-1});                   // [N]
    if (rows.numel() == 0) return std::nullopt;
    auto t0 = Clock::now();
    const at::Tensor h = model.hidden(idsT);                                                   // [B, T, H]
    phases.body += since(t0);
    t0 = Clock::now();
    const at::Tensor hs = h.narrow(1, 0, T - 1).reshape({-1, h.size(2)}).index_select(0, rows);  // [N, H]
    const at::Tensor picked = targets.index_select(0, rows).unsqueeze(1);                      // [N, 1]
    at::Tensor gradHs;
    double lossSum = 0;
    {
      at::NoGradGuard noGrad;
      at::Tensor logp = at::log_softmax(model.logits(hs.detach()), -1);  // [N, V] fp32
      lossSum = -logp.gather(1, picked).sum().item<double>();
      if (gradScale > 0) {
        logp.exp_().scatter_add_(1, picked, at::full({picked.size(0), 1}, -1.0, logp.options())).mul_(gradScale);
        const at::Tensor& w = model.weights().lmHead;  // [V, H]
        gradHs = at::mm(logp.to(w.scalar_type()), w);  // [N, H]
      }
    }
    phases.head += since(t0);
    if (gradHs.defined()) {
      t0 = Clock::now();
      hs.backward(gradHs.to(hs.scalar_type()));
      phases.backward += since(t0);
    }
    return lossSum;
  }

  // One optimizer step over the effective batch; returns the mean loss per trained token.
  double trainStep(std::int64_t s) {
    const auto picked = stepExamples(s);
    std::int64_t targetCount = 0;
    for (size_t i : picked) targetCount += trainedTargets(train[i]);
    at::manual_seed(recipe.seed * 7919ULL + std::uint64_t(s));  // dropout RNG = f(seed, step)
    lora->setTraining(true);
    double lossSum = 0;
    const size_t mb = size_t(recipe.perDeviceTrainBatchSize);
    for (size_t i = 0; i < picked.size(); i += mb) {
      std::vector<const EncodedExample*> batch;
      for (size_t j = i; j < std::min(picked.size(), i + mb); ++j) batch.push_back(&train[picked[j]]);
      const auto sum = microBatchLossSum(batch, &totalTokens, 1.0 / double(std::max<std::int64_t>(1, targetCount)));
      if (sum) lossSum += *sum;
    }
    lora->setTraining(false);
    const double lr = recipe.learningRate * lrMultiplier(recipe.lrSchedulerType, s, recipe.warmupSteps(std::int64_t(train.size())), total());
    const auto t0 = Clock::now();
    optimizerStep(lr, s + 1);
    phases.optimizer += since(t0);
    return lossSum / double(std::max<std::int64_t>(1, targetCount));
  }

  // Global-norm clipping (torch.nn.utils.clip_grad_norm_) then AdamW as torch.optim.AdamW
  // (betas 0.9/0.999, eps 1e-8, weight decay 0; bias-corrected), t = optimizer step.
  void optimizerStep(double lr, std::int64_t t) {
    at::NoGradGuard noGrad;
    auto& params = lora->parameters();
    double sq = 0;
    for (auto& p : params)
      if (p.grad().defined()) sq += p.grad().pow(2).sum().item<double>();
    const double norm = std::sqrt(sq);
    const double clip = recipe.maxGradNorm > 0 ? std::min(1.0, recipe.maxGradNorm / (norm + 1e-6)) : 1.0;
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.0;
    const double bc1 = 1 - std::pow(b1, double(t)), bc2 = 1 - std::pow(b2, double(t));
    for (size_t i = 0; i < params.size(); ++i) {
      auto& p = params[i];
      if (!p.grad().defined()) continue;
      at::Tensor g = p.grad();
      if (clip < 1.0) g = g * clip;
      p.mul_(1 - lr * wd);
      expAvg[i].mul_(b1).add_(g, 1 - b1);
      expAvgSq[i].mul_(b2).addcmul_(g, g, 1 - b2);
      const at::Tensor denom = (expAvgSq[i].sqrt() / std::sqrt(bc2)).add_(eps);
      p.addcdiv_(expAvg[i], denom, -lr / bc1);
      p.mutable_grad().reset();
    }
  }

  double evalLoss(const std::vector<EncodedExample>& examples) const {
    at::NoGradGuard noGrad;
    double sum = 0;
    std::int64_t n = 0;
    const size_t mb = size_t(recipe.perDeviceTrainBatchSize);
    for (size_t i = 0; i < examples.size(); i += mb) {
      std::vector<const EncodedExample*> batch;
      for (size_t j = i; j < std::min(examples.size(), i + mb); ++j) {
        batch.push_back(&examples[j]);
        n += trainedTargets(examples[j]);
      }
      if (const auto s = microBatchLossSum(batch, nullptr, 0)) sum += *s;
    }
    return n ? sum / double(n) : 0.0;
  }

  TrainEvent event(const std::string& kind) const {
    TrainEvent e;
    e.event = kind;
    e.step = step;
    e.totalSteps = total();
    e.epoch = double(step) / double(perEpoch());
    e.elapsedSeconds = elapsed();
    e.remainingSeconds = step > 0 ? e.elapsedSeconds / double(step) * double(total() - step) : 0;
    e.totalTokens = totalTokens;
    e.tokensPerSecond = e.elapsedSeconds > 0 ? double(totalTokens) / e.elapsedSeconds : 0;
    return e;
  }

  void emit(const TrainEvent& e, const EventLog* log) const {
    if (log) log->append(e);
    if (options.onEvent) options.onEvent(e);
  }

  // checkpoint-N.tmp/ (adapter, optimizer, trainer_state.json) renamed to checkpoint-N/.
  fs::path saveCheckpoint() const {
    const fs::path dir = options.runDir / ("checkpoint-" + std::to_string(step));
    const fs::path tmp = options.runDir / ("checkpoint-" + std::to_string(step) + ".tmp");
    fs::remove_all(tmp);
    lora->save(tmp, options.baseModel);
    std::vector<std::pair<std::string, at::Tensor>> state;
    for (size_t i = 0; i < expAvg.size(); ++i) {
      state.emplace_back(lora->names()[i] + ".exp_avg", expAvg[i]);
      state.emplace_back(lora->names()[i] + ".exp_avg_sq", expAvgSq[i]);
    }
    writeTensors(tmp / "optimizer.safetensors", state);
    const std::int64_t n = std::int64_t(train.size());
    nlohmann::json st = {
        {"global_step", step},
        {"total_steps", total()},
        {"optimizer", {{"type", "adamw"}, {"step", step}, {"betas", {0.9, 0.999}}, {"eps", 1e-8}, {"weight_decay", 0.0}}},
        {"scheduler", {{"type", recipe.lrSchedulerType}, {"last_step", step}, {"warmup_steps", recipe.warmupSteps(n)}}},
        // Dropout is reseeded from (seed, step) at each step and the data order from
        // (seed, epoch): the RNG state is fully given by these.
        {"rng", {{"seed", recipe.seed}, {"next_step", step}}},
        {"data", {{"epoch", step / perEpoch()}, {"step_in_epoch", step % perEpoch()}, {"examples", n}}},
        {"total_tokens", totalTokens},
        {"elapsed_seconds", elapsed()}};
    model::writeFileAtomically(tmp / "trainer_state.json", st.dump(2) + "\n");
    fs::remove_all(dir);
    fs::rename(tmp, dir);
    return dir;
  }

  void loadCheckpoint(const fs::path& dir) {
    const auto st = nlohmann::json::parse(readText(dir / "trainer_state.json"));
    if (st.value("total_steps", std::int64_t(-1)) != total() || st["data"].value("examples", std::int64_t(-1)) != std::int64_t(train.size()))
      throw std::runtime_error(dir.string() + ": checkpoint was made for another recipe or dataset");
    lora->loadWeights(dir / "adapter_model.safetensors");
    const auto opt = readTensors(dir / "optimizer.safetensors");
    for (size_t i = 0; i < expAvg.size(); ++i) {
      const auto m = opt.find(lora->names()[i] + ".exp_avg"), v = opt.find(lora->names()[i] + ".exp_avg_sq");
      if (m == opt.end() || v == opt.end()) throw std::runtime_error(dir.string() + ": optimizer state incomplete");
      expAvg[i].copy_(m->second);
      expAvgSq[i].copy_(v->second);
    }
    step = st.at("global_step").get<std::int64_t>();
    totalTokens = st.at("total_tokens").get<std::int64_t>();
    elapsedBefore = st.at("elapsed_seconds").get<double>();
  }

  TrainResult run() {
    TrainResult result;
    result.totalSteps = total();
    const bool files = !options.runDir.empty();
    std::optional<EventLog> log;
    if (files) {
      fs::create_directories(options.runDir);
      const auto [n, dir] = options.resume ? newestCheckpoint(options.runDir) : std::make_pair(std::int64_t(0), fs::path());
      if (n > 0) loadCheckpoint(dir);
      result.resumedFrom = n;
      log = n > 0 ? EventLog::resumeAt(options.runDir / "events.jsonl", n) : EventLog::create(options.runDir / "events.jsonl");
    }
    started = Clock::now();
    TrainEvent start = event("start");
    if (result.resumedFrom) start.message = "resumed from checkpoint-" + std::to_string(result.resumedFrom);
    emit(start, log ? &*log : nullptr);
    std::int64_t saved = step;  // the checkpoint we resumed from counts as saved
    while (step < total()) {
      if (options.stop && options.stop->load()) {
        result.stopped = true;
        break;
      }
      const double lr = recipe.learningRate * lrMultiplier(recipe.lrSchedulerType, step, recipe.warmupSteps(std::int64_t(train.size())), total());
      const double loss = trainStep(step);
      ++step;
      result.lastLoss = loss;
      if (!std::isfinite(loss)) {
        TrainEvent e = event("error");
        e.message = "loss is " + std::to_string(loss);
        emit(e, log ? &*log : nullptr);
        throw std::runtime_error("training diverged: loss is not finite at step " + std::to_string(step));
      }
      if (step % std::max(1, recipe.loggingSteps) == 0 || step == total()) {
        TrainEvent e = event("step");
        e.loss = loss;
        e.lr = lr;
        emit(e, log ? &*log : nullptr);
      }
      if (!eval.empty() && recipe.evalSteps > 0 && step % recipe.evalSteps == 0) {
        TrainEvent e = event("eval");
        e.evalLoss = evalLoss(eval);
        emit(e, log ? &*log : nullptr);
      }
      if (files && ((recipe.saveSteps > 0 && step % recipe.saveSteps == 0) || step == total())) {
        TrainEvent e = event("checkpoint");
        e.message = saveCheckpoint().filename().string();
        saved = step;
        emit(e, log ? &*log : nullptr);
      }
    }
    if (files && saved != step) {  // stopped between checkpoints
      TrainEvent e = event("checkpoint");
      e.message = saveCheckpoint().filename().string();
      emit(e, log ? &*log : nullptr);
    }
    if (files && !result.stopped) lora->save(options.runDir, options.baseModel);
    TrainEvent end = event("end");
    if (result.stopped) end.message = "stopped";
    emit(end, log ? &*log : nullptr);
    result.steps = step;
    result.phases = phases;
    return result;
  }
};

Trainer::Trainer(model::LlamaModel& model, Recipe recipe, std::vector<EncodedExample> train,
                 std::vector<EncodedExample> eval, TrainerOptions options)
    : impl_(std::make_unique<Impl>(model, std::move(recipe), std::move(train), std::move(eval), std::move(options))) {}

Trainer::~Trainer() {
  if (impl_) impl_->model.setProjectionDelta(nullptr);
}

std::int64_t Trainer::totalSteps() const { return impl_->total(); }
TrainResult Trainer::run() { return impl_->run(); }
void Trainer::saveAdapter(const fs::path& dir) const { impl_->lora->save(dir, impl_->options.baseModel); }
double Trainer::evalLoss(const std::vector<EncodedExample>& examples) const { return impl_->evalLoss(examples); }

std::pair<std::int64_t, fs::path> newestCheckpoint(const fs::path& runDir) {
  std::pair<std::int64_t, fs::path> best{0, {}};
  if (!fs::is_directory(runDir)) return best;
  for (const auto& entry : fs::directory_iterator(runDir)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || name.rfind("checkpoint-", 0) != 0) continue;
    const std::string num = name.substr(11);
    if (num.empty() || num.find_first_not_of("0123456789") != std::string::npos) continue;  // skips *.tmp
    if (!fs::exists(entry.path() / "trainer_state.json")) continue;
    const std::int64_t n = std::stoll(num);
    if (n > best.first) best = {n, entry.path()};
  }
  return best;
}

}  // namespace crosslab::train
