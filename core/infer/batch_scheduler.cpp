#include "core/infer/batch_scheduler.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include "core/infer/runtime_lora.h"
#include "core/infer/text_streamer.h"
#include "core/model/llama.h"

namespace crosslab::infer {
namespace {

at::ScalarType parseDtype(const std::string& name) {
  if (name == "f32" || name == "float32") return at::kFloat;
  if (name == "bf16" || name == "bfloat16") return at::kBFloat16;
  throw std::runtime_error("unknown dtype '" + name + "' (use f32 or bf16)");
}

struct Sequence {
  uint64_t id = 0;
  ServeRequest req;
  int adapter = -1;  // index into Impl::adapters; -1 = base
  std::vector<int32_t> stops;
  std::optional<Sampler> sampler;
  std::optional<TextStreamer> streamer;
  ServeResult result;
  size_t prefilled = 0;  // prompt tokens already in the KV cache
  int32_t last = -1;     // the token the next decode step feeds
  bool done = false;
};

}  // namespace

struct BatchScheduler::Impl {
  model::LlamaModel model;
  std::optional<tokenizer::BpeTokenizer> tok;
  SchedulerOptions opt;
  int maxLen = 0;
  std::vector<LoraAdapter> adapters;
  std::map<std::string, int> adapterIndex;
  model::KvCache cache;  // rows 0..maxBatch-1 = decode slots, row maxBatch = prefill staging

  mutable std::mutex mu;
  std::condition_variable cv;
  std::deque<std::unique_ptr<Sequence>> incoming;  // guarded by mu
  std::set<uint64_t> cancels;                      // guarded by mu
  bool stopping = false;                           // guarded by mu
  SchedulerStats stats;                            // guarded by mu
  uint64_t nextId = 1;                             // guarded by mu
  std::atomic<bool> dead{false};
  std::string deathReason;                         // guarded by mu; set when dead
  std::string injectedFault;                       // guarded by mu; testing hook

  // Owned by the scheduler thread.
  std::deque<std::unique_ptr<Sequence>> waiting;
  std::unique_ptr<Sequence> prefilling;
  std::vector<std::unique_ptr<Sequence>> running;  // running[i] holds KV row i
  std::thread thread;

  explicit Impl(model::LlamaModel m) : model(std::move(m)) {}
  void loop();
  bool step();
  void applyCancels(const std::set<uint64_t>& ids);
  void prefillStep();
  void decodeStep();
  bool accept(Sequence& s, float* logits, size_t vocab);  // true = the sequence is done
  void finish(std::unique_ptr<Sequence> s, const std::string& reason);
  void setDelta(const std::vector<int>& rowAdapters);
  model::KvCache rows(int64_t start, int64_t count);
  void copyRow(int64_t from, int64_t to);
  void failAll(const std::string& error);
  void publishCounts();  // stats.running / waiting from the containers; caller holds mu
};

model::KvCache BatchScheduler::Impl::rows(int64_t start, int64_t count) {
  model::KvCache v;  // views: writes land in the shared cache
  v.capacity = cache.capacity;
  for (size_t l = 0; l < cache.keys.size(); ++l) {
    v.keys.push_back(cache.keys[l].narrow(0, start, count));
    v.values.push_back(cache.values[l].narrow(0, start, count));
  }
  v.lengths.assign(cache.lengths.begin() + start, cache.lengths.begin() + start + count);
  return v;
}

void BatchScheduler::Impl::copyRow(int64_t from, int64_t to) {
  const int64_t len = cache.lengths[size_t(from)];
  for (size_t l = 0; l < cache.keys.size(); ++l) {  // [nkv, len, hd] per row
    cache.keys[l][to].narrow(1, 0, len).copy_(cache.keys[l][from].narrow(1, 0, len));
    cache.values[l][to].narrow(1, 0, len).copy_(cache.values[l][from].narrow(1, 0, len));
  }
  cache.lengths[size_t(to)] = len;
}

void BatchScheduler::Impl::setDelta(const std::vector<int>& rowAdapters) {
  const bool any = std::any_of(rowAdapters.begin(), rowAdapters.end(), [](int a) { return a >= 0; });
  model.setProjectionDelta(any ? std::make_shared<BatchLoraDelta>(adapters, rowAdapters, model.device()) : nullptr);
}

void BatchScheduler::Impl::finish(std::unique_ptr<Sequence> s, const std::string& reason) {
  s->result.finishReason = reason;
  if (reason != "cancelled" && reason != "error" && s->streamer) s->result.unsent = s->streamer->flush();
  if (s->streamer) s->result.text = s->streamer->text();
  {
    std::lock_guard<std::mutex> lk(mu);  // counts first: whoever onDone wakes sees them
    ++stats.completed;
    if (reason == "cancelled") ++stats.cancelled;
    publishCounts();
  }
  try {
    if (s->req.onDone) s->req.onDone(s->result);
  } catch (...) {  // a callback's failure must not take the scheduler down
  }
}

void BatchScheduler::Impl::publishCounts() {  // under mu
  stats.running = int(running.size()) + (prefilling ? 1 : 0);
  stats.waiting = int(waiting.size() + incoming.size());
  stats.kvSlots = opt.maxBatch;
  stats.freeKvSlots = opt.maxBatch - int(running.size());
}

bool BatchScheduler::Impl::accept(Sequence& s, float* logits, size_t vocab) {
  const int generated = int(s.result.ids.size());
  if (generated < s.req.minTokens)  // min_tokens: stop ids cannot win yet
    for (int32_t id : s.stops)
      if (id >= 0 && size_t(id) < vocab) logits[id] = -std::numeric_limits<float>::infinity();
  const int32_t id = s.sampler->sample(logits, vocab);
  if (std::find(s.stops.begin(), s.stops.end(), id) != s.stops.end()) {
    if (std::find(s.req.stopIds.begin(), s.req.stopIds.end(), id) != s.req.stopIds.end()) s.result.stopReason = std::to_string(id);
    s.result.finishReason = "stop";
    return true;
  }
  s.result.ids.push_back(id);
  const std::string piece = s.streamer->push(id);
  bool keep = true;
  try {
    keep = !s.req.onToken || s.req.onToken(id, piece);
  } catch (...) {
    keep = false;
  }
  s.last = id;
  if (s.streamer->stopped()) {
    s.result.finishReason = "stop";
    s.result.stopReason = s.streamer->matchedStop();
  } else if (!keep) {
    s.result.finishReason = "cancelled";
  } else if (int(s.result.ids.size()) >= s.req.maxTokens ||
             int64_t(s.req.prompt.size() + s.result.ids.size()) >= int64_t(maxLen)) {
    s.result.finishReason = "length";
  } else {
    return false;
  }
  return true;
}

void BatchScheduler::Impl::prefillStep() {
  Sequence& s = *prefilling;
  const int64_t stage = opt.maxBatch;
  if (s.prefilled == 0) cache.lengths[size_t(stage)] = 0;
  const size_t n = std::min(s.req.prompt.size() - s.prefilled, size_t(opt.prefillChunk));
  const std::vector<int64_t> chunk(s.req.prompt.begin() + long(s.prefilled), s.req.prompt.begin() + long(s.prefilled + n));
  model::KvCache view = rows(stage, 1);
  setDelta({s.adapter});
  const at::Tensor h = model.hidden(at::tensor(chunk, at::kLong).unsqueeze(0), &view);  // [1, n, H]
  cache.lengths[size_t(stage)] = view.lengths[0];
  s.prefilled += n;
  if (s.prefilled < s.req.prompt.size()) return;
  at::Tensor logits = model.logits(h.narrow(1, int64_t(n) - 1, 1)).to(at::kCPU).contiguous();  // [1, 1, vocab]
  std::unique_ptr<Sequence> seq = std::move(prefilling);
  if (s.req.maxTokens == 0) return finish(std::move(seq), "length");
  if (accept(*seq, logits.data_ptr<float>(), size_t(logits.numel()))) {
    const std::string reason = seq->result.finishReason;
    return finish(std::move(seq), reason);
  }
  const int64_t slot = int64_t(running.size());
  copyRow(stage, slot);
  running.push_back(std::move(seq));
}

void BatchScheduler::Impl::decodeStep() {
  const int64_t n = int64_t(running.size());
  std::vector<int64_t> ids(static_cast<size_t>(n));
  std::vector<int> rowAdapters(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    ids[size_t(i)] = running[size_t(i)]->last;
    rowAdapters[size_t(i)] = running[size_t(i)]->adapter;
  }
  model::KvCache view = rows(0, n);
  setDelta(rowAdapters);
  const at::Tensor h = model.hidden(at::tensor(ids, at::kLong).view({n, 1}), &view);  // [n, 1, H]
  std::copy(view.lengths.begin(), view.lengths.end(), cache.lengths.begin());
  at::Tensor logits = model.logits(h).to(at::kCPU).contiguous();  // [n, 1, vocab] fp32
  const size_t vocab = size_t(logits.size(2));
  float* base = logits.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i) running[size_t(i)]->done = accept(*running[size_t(i)], base + size_t(i) * vocab, vocab);
  // Leave: the last slot's row moves into the hole, so rows 0..n-1 stay dense.
  for (int64_t i = n - 1; i >= 0; --i) {
    if (!running[size_t(i)]->done) continue;
    std::unique_ptr<Sequence> s = std::move(running[size_t(i)]);
    const int64_t lastSlot = int64_t(running.size()) - 1;
    if (i != lastSlot) {
      copyRow(lastSlot, i);
      running[size_t(i)] = std::move(running.back());
    }
    running.pop_back();
    const std::string reason = s->result.finishReason;
    finish(std::move(s), reason);
  }
  std::lock_guard<std::mutex> lk(mu);
  ++stats.steps;
  stats.maxBatchSeen = std::max(stats.maxBatchSeen, int(n));
}

void BatchScheduler::Impl::applyCancels(const std::set<uint64_t>& ids) {
  if (ids.empty()) return;
  for (auto it = waiting.begin(); it != waiting.end();) {
    if (ids.count((*it)->id)) {
      finish(std::move(*it), "cancelled");
      it = waiting.erase(it);
    } else {
      ++it;
    }
  }
  if (prefilling && ids.count(prefilling->id)) finish(std::move(prefilling), "cancelled");
  for (auto& s : running)
    if (ids.count(s->id)) s->done = true;
  for (int64_t i = int64_t(running.size()) - 1; i >= 0; --i) {
    if (!running[size_t(i)]->done) continue;
    std::unique_ptr<Sequence> s = std::move(running[size_t(i)]);
    const int64_t lastSlot = int64_t(running.size()) - 1;
    if (i != lastSlot) {
      copyRow(lastSlot, i);
      running[size_t(i)] = std::move(running.back());
    }
    running.pop_back();
    finish(std::move(s), "cancelled");
  }
}

bool BatchScheduler::Impl::step() {
  std::set<uint64_t> cancelNow;
  {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] { return stopping || !injectedFault.empty() || !incoming.empty() || !cancels.empty() || prefilling || !running.empty() || !waiting.empty(); });
    if (stopping) return false;
    if (!injectedFault.empty()) throw std::runtime_error(injectedFault);
    while (!incoming.empty()) {
      waiting.push_back(std::move(incoming.front()));
      incoming.pop_front();
    }
    cancelNow.swap(cancels);
  }
  applyCancels(cancelNow);
  if (!prefilling && int(running.size()) < opt.maxBatch && !waiting.empty()) {
    prefilling = std::move(waiting.front());
    waiting.pop_front();
  }
  if (prefilling) prefillStep();
  if (!running.empty()) decodeStep();
  std::lock_guard<std::mutex> lk(mu);
  publishCounts();
  return true;
}

void BatchScheduler::Impl::failAll(const std::string& error) {
  std::vector<std::unique_ptr<Sequence>> all;
  for (auto& s : running) all.push_back(std::move(s));
  running.clear();
  if (prefilling) all.push_back(std::move(prefilling));
  for (auto& s : waiting) all.push_back(std::move(s));
  waiting.clear();
  {
    std::lock_guard<std::mutex> lk(mu);
    for (auto& s : incoming) all.push_back(std::move(s));
    incoming.clear();
  }
  for (auto& s : all) {
    s->result.error = error;
    finish(std::move(s), error.empty() ? "cancelled" : "error");
  }
}

void BatchScheduler::Impl::loop() {
  c10::InferenceMode guard;
  at::set_num_threads(opt.threads > 0 ? opt.threads : int(std::max(1u, std::thread::hardware_concurrency())));
  try {
    while (step()) {
    }
    failAll("");
  } catch (const std::exception& e) {
    {
      std::lock_guard<std::mutex> lk(mu);
      deathReason = std::string("engine error: ") + e.what();
    }
    dead = true;
    failAll(std::string("engine error: ") + e.what());
  }
}

BatchScheduler::BatchScheduler(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BatchScheduler::~BatchScheduler() { stop(); }

std::unique_ptr<BatchScheduler> BatchScheduler::open(const std::filesystem::path& dir, const SchedulerOptions& options) {
  if (options.maxBatch < 1) throw std::runtime_error("max batch must be >= 1");
  if (options.prefillChunk < 1) throw std::runtime_error("prefill chunk must be >= 1");
  at::set_num_threads(options.threads > 0 ? options.threads : int(std::max(1u, std::thread::hardware_concurrency())));
  at::Device device(at::kCPU);
  try {
    device = at::Device(options.device);
  } catch (const std::exception&) {
    throw std::runtime_error("unknown device '" + options.device + "'");
  }
  c10::InferenceMode guard;
  auto impl = std::make_unique<Impl>(model::LlamaModel::load(dir, parseDtype(options.dtype), device, options.copyWeights));
  impl->opt = options;
  const auto& cfg = impl->model.config();
  impl->maxLen = options.maxModelLen > 0 ? options.maxModelLen : int(std::min<int64_t>(cfg.maxPositions, 4096));
  if (impl->maxLen > cfg.maxPositions)
    throw std::runtime_error("max model length " + std::to_string(impl->maxLen) + " exceeds the model's " +
                             std::to_string(cfg.maxPositions) + " positions");
  if (!options.mergeAdapter.empty()) impl->model.mergeLoraAdapter(options.mergeAdapter);
  for (const auto& [name, path] : options.loras) {
    if (impl->adapterIndex.count(name)) throw std::runtime_error("adapter name '" + name + "' given twice");
    impl->adapterIndex[name] = int(impl->adapters.size());
    impl->adapters.push_back(loadLoraAdapter(name, path, impl->model));
  }
  if (std::filesystem::exists(dir / "tokenizer.json")) impl->tok = tokenizer::BpeTokenizer::load(dir / "tokenizer.json");
  impl->cache = impl->model.makeCache(options.maxBatch + 1, impl->maxLen);
  impl->stats.kvSlots = impl->stats.freeKvSlots = options.maxBatch;
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->loop(); });
  return std::unique_ptr<BatchScheduler>(new BatchScheduler(std::move(impl)));
}

uint64_t BatchScheduler::submit(ServeRequest request) {
  auto& d = *impl_;
  if (request.prompt.empty()) throw std::invalid_argument("the prompt is empty");
  const int64_t vocab = d.model.config().vocabSize;
  for (int32_t id : request.prompt)
    if (id < 0 || id >= vocab) throw std::invalid_argument("token id " + std::to_string(id) + " is outside the vocabulary");
  if (request.maxTokens < 0) throw std::invalid_argument("max_tokens must be >= 0");
  if (int64_t(request.prompt.size()) + request.maxTokens > d.maxLen)
    throw std::invalid_argument("this model's maximum context length is " + std::to_string(d.maxLen) + " tokens; the request has " +
                                std::to_string(request.prompt.size()) + " prompt tokens and asks for " +
                                std::to_string(request.maxTokens) + " completion tokens");
  auto s = std::make_unique<Sequence>();
  if (!request.adapter.empty()) {
    const auto it = d.adapterIndex.find(request.adapter);
    if (it == d.adapterIndex.end()) throw std::invalid_argument("unknown adapter '" + request.adapter + "'");
    s->adapter = it->second;
  }
  s->stops = request.stopIds;
  if (!request.ignoreEos)
    for (int64_t e : d.model.config().eosIds) s->stops.push_back(int32_t(e));
  s->sampler.emplace(request.sampling);
  s->streamer.emplace(d.tok ? &*d.tok : nullptr, request.stopStrings);
  s->result.promptTokens = int(request.prompt.size());
  s->req = std::move(request);
  std::lock_guard<std::mutex> lk(d.mu);
  if (d.stopping || d.dead) throw std::runtime_error("the engine is not running");
  s->id = d.nextId++;
  const uint64_t id = s->id;
  d.incoming.push_back(std::move(s));
  d.cv.notify_one();
  return id;
}

void BatchScheduler::cancel(uint64_t id) {
  std::lock_guard<std::mutex> lk(impl_->mu);
  impl_->cancels.insert(id);
  impl_->cv.notify_one();
}

void BatchScheduler::stop() {
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    impl_->stopping = true;
    impl_->cv.notify_one();
  }
  if (impl_->thread.joinable()) impl_->thread.join();
}

bool BatchScheduler::healthy(std::string* why) const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  if (impl_->dead) {
    if (why) *why = impl_->deathReason;
    return false;
  }
  if (impl_->stopping) {
    if (why) *why = "the engine is stopped";
    return false;
  }
  return true;
}

void BatchScheduler::failNextStepForTesting(const std::string& error) {
  std::lock_guard<std::mutex> lk(impl_->mu);
  impl_->injectedFault = error.empty() ? "injected fault" : error;
  impl_->cv.notify_one();
}
SchedulerStats BatchScheduler::stats() const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  return impl_->stats;
}
const model::ModelConfig& BatchScheduler::config() const { return impl_->model.config(); }
const tokenizer::BpeTokenizer* BatchScheduler::tokenizer() const { return impl_->tok ? &*impl_->tok : nullptr; }
int BatchScheduler::maxModelLen() const { return impl_->maxLen; }
std::vector<std::string> BatchScheduler::adapterNames() const {
  std::vector<std::string> names;
  for (const auto& a : impl_->adapters) names.push_back(a.name);
  return names;
}

}  // namespace crosslab::infer
