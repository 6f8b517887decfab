#include "core/infer/batch_scheduler.h"

#include "core/infer/device.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include "core/infer/decode_path_chooser.h"
#include "core/infer/runtime_lora.h"
#include "core/infer/text_streamer.h"
#include "core/model/llama.h"

namespace crosslab::infer {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

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
  // Rows 0..maxBatch-1: decode slots; rows maxBatch..maxBatch+prefillBatch-1: prefill staging.
  // Capacity maxLen + prefillChunk: a padded prefill chunk may run past a row's real end.
  model::KvCache cache;
  std::map<std::pair<int64_t, int64_t>, model::KvCache> views;  // rows(): by (first row, count)

  mutable std::mutex mu;
  std::condition_variable cv;
  std::deque<std::unique_ptr<Sequence>> incoming;  // guarded by mu
  std::set<uint64_t> cancels;                      // guarded by mu
  bool stopping = false;                           // guarded by mu
  std::shared_ptr<const std::function<void()>> afterStep;  // guarded by mu
  SchedulerStats stats;                            // guarded by mu
  uint64_t nextId = 1;                             // guarded by mu
  std::atomic<bool> dead{false};
  std::string deathReason;                         // guarded by mu; set when dead
  std::string injectedFault;                       // guarded by mu; testing hook
  bool held = false;                               // guarded by mu; testing hook

  // Owned by the scheduler thread.
  std::deque<std::unique_ptr<Sequence>> waiting;
  std::vector<std::unique_ptr<Sequence>> staged;   // staged[i] holds KV row maxBatch + i
  std::vector<std::unique_ptr<Sequence>> running;  // running[i] holds KV row i
  DecodePathChooser chooser;
  int64_t layerWeightBytes = 0;  // the layers' weight matrices, read once per fused step
  uint64_t pathsRevision = 0;  // of chooser, when local.decodePaths was written
  model::DecodeTimes fusedTimes;
  SchedulerStats local;  // the thread's counters and times, published under mu
  std::thread thread;

  explicit Impl(model::LlamaModel m) : model(std::move(m)) {}
  void loop();
  bool step();
  void applyCancels(const std::set<uint64_t>& ids);
  void admit();
  void prefillStep();
  bool stepwisePrefill(int64_t batch, int64_t positions, const model::KvCache& view) const;
  void decodeStep();
  DecodePath choosePath(const at::Tensor& ids, const model::KvCache& view);
  void acceptRows(std::vector<std::unique_ptr<Sequence>>& seqs, const std::vector<size_t>& which, const at::Tensor& logits);
  int32_t sample(Sequence& s, float* logits, size_t vocab);  // safe on any thread, one call per sequence at a time
  bool accept(Sequence& s, int32_t id);                     // true = the sequence is done
  void finish(std::unique_ptr<Sequence> s, const std::string& reason);
  void setDelta(const std::vector<int>& rowAdapters);
  model::KvCache& rows(int64_t start, int64_t count);
  void copyRow(int64_t from, int64_t to);
  void removeRow(std::vector<std::unique_ptr<Sequence>>& seqs, int64_t firstRow, size_t i);
  void failAll(const std::string& error);
  void publishCounts();  // stats from the containers and `local`; caller holds mu
};

// Rows [start, start + count) of the cache as a cache of their own: views, so writes land in
// the shared tensors. Kept per range (the tensors never move): a step only copies the lengths.
model::KvCache& BatchScheduler::Impl::rows(int64_t start, int64_t count) {
  model::KvCache& v = views[{start, count}];
  if (v.keys.empty()) {
    v.capacity = cache.capacity;
    for (size_t l = 0; l < cache.keys.size(); ++l) {
      v.keys.push_back(cache.keys[l].narrow(0, start, count));
      v.values.push_back(cache.values[l].narrow(0, start, count));
      if (!cache.keyBlocks.empty()) v.keyBlocks.push_back(cache.keyBlocks[l].narrow(0, start, count));
    }
    if (cache.blocked.defined()) v.blocked = cache.blocked.narrow(0, start, count);
  }
  v.lengths.assign(cache.lengths.begin() + start, cache.lengths.begin() + start + count);
  return v;
}

void BatchScheduler::Impl::copyRow(int64_t from, int64_t to) { cache.copyRow(size_t(from), size_t(to)); }

// Removes seqs[i] (KV row firstRow + i) keeping the rows dense: the last one moves into the hole.
void BatchScheduler::Impl::removeRow(std::vector<std::unique_ptr<Sequence>>& seqs, int64_t firstRow, size_t i) {
  const size_t last = seqs.size() - 1;
  if (i != last) {
    copyRow(firstRow + int64_t(last), firstRow + int64_t(i));
    seqs[i] = std::move(seqs[last]);
  }
  seqs.pop_back();
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
  const uint64_t completed = stats.completed, cancelled = stats.cancelled;
  stats = local;
  stats.completed = completed;
  stats.cancelled = cancelled;
  stats.running = int(running.size() + staged.size());
  stats.waiting = int(waiting.size() + incoming.size());
  stats.kvSlots = opt.maxBatch;
  stats.freeKvSlots = opt.maxBatch - int(running.size());
  stats.fusedMatmulS = fusedTimes.matmul;
  stats.fusedLoraS = fusedTimes.lora;
  stats.fusedAttentionS = fusedTimes.attention;
  stats.fusedOtherS = fusedTimes.other;
  if (chooser.revision() != pathsRevision) {
    pathsRevision = chooser.revision();
    local.decodePaths = chooser.summary();
  }
  stats.decodePaths = local.decodePaths;
}

// The next token of `s` from its row of logits (stop ids masked until min_tokens).
int32_t BatchScheduler::Impl::sample(Sequence& s, float* logits, size_t vocab) {
  const int generated = int(s.result.ids.size());
  if (generated < s.req.minTokens)  // min_tokens: stop ids cannot win yet
    for (int32_t id : s.stops)
      if (id >= 0 && size_t(id) < vocab) logits[id] = -std::numeric_limits<float>::infinity();
  return s.sampler->sample(logits, vocab);
}

bool BatchScheduler::Impl::accept(Sequence& s, int32_t id) {
  const auto t1 = Clock::now();
  if (std::find(s.stops.begin(), s.stops.end(), id) != s.stops.end()) {
    if (std::find(s.req.stopIds.begin(), s.req.stopIds.end(), id) != s.req.stopIds.end()) s.result.stopReason = std::to_string(id);
    s.result.finishReason = "stop";
    return true;
  }
  s.result.ids.push_back(id);
  ++local.generatedTokens;
  const std::string piece = s.streamer->push(id);
  bool keep = true;
  try {
    keep = !s.req.onToken || s.req.onToken(id, piece);
  } catch (...) {
    keep = false;
  }
  local.emitS += secondsSince(t1);
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

// Waiting requests take staging rows while decode slots remain for them.
void BatchScheduler::Impl::admit() {
  while (!waiting.empty() && int(staged.size()) < opt.prefillBatch &&
         int(running.size() + staged.size()) < opt.maxBatch) {
    cache.replaceRow(size_t(opt.maxBatch) + staged.size(), 0);
    staged.push_back(std::move(waiting.front()));
    waiting.pop_front();
  }
}

// Whether a prefill chunk of `positions` per row runs as fused steps, one position at a time:
// where the fused step applies, for at most opt.stepwisePrefill positions, and only while the
// layers' weights stay in cache from one position's step to the next (8 MB at most: the demo
// model's layers are 1.6 MB in bf16, 3.1 MB in fp32; `small`'s about 300 MB, whose prompts go
// through one forward). On the demo model a 16-token prompt took ~0.6 ms this way against
// 1.8 ms op by op (bf16; fp32 0.9 against 1.5), 32 tokens 1.5-1.7 against 2.1-2.5.
bool BatchScheduler::Impl::stepwisePrefill(int64_t batch, int64_t positions, const model::KvCache& view) const {
  constexpr int64_t kMaxLayerBytes = int64_t(8) << 20;
  if (opt.decodePath == "op-by-op" || positions > opt.stepwisePrefill || layerWeightBytes > kMaxLayerBytes)
    return false;
  return model.fusedDecodeApplies(at::zeros({batch, 1}, at::kLong), &view);
}

// One chunk of every staged prompt, in one forward [B, T] or (stepwisePrefill) as T fused
// steps of one position per row: the step's budget of prefillChunk
// tokens is shared (T = budget / B, at least 1, at most the longest remainder); shorter
// remainders are padded at the end. Padding sits after a row's real tokens, so the causal
// mask hides it from them, and the row's length is set back to its real end (the next chunk
// overwrites the padding's keys and values).
void BatchScheduler::Impl::prefillStep() {
  const auto t0 = Clock::now();
  const double sampledAndEmitted = local.sampleS + local.emitS;  // the first tokens' share is theirs, not prefill's
  const size_t B = staged.size();
  const int64_t stage = opt.maxBatch;
  size_t longest = 0;
  for (const auto& s : staged) longest = std::max(longest, s->req.prompt.size() - s->prefilled);
  const size_t T = std::max<size_t>(1, std::min(longest, size_t(opt.prefillChunk) / B));
  std::vector<int64_t> ids(B * T, 0);
  std::vector<size_t> take(B);
  std::vector<int> rowAdapters(B);
  for (size_t b = 0; b < B; ++b) {
    const Sequence& s = *staged[b];
    take[b] = std::min(T, s.req.prompt.size() - s.prefilled);
    for (size_t t = 0; t < take[b]; ++t) ids[b * T + t] = s.req.prompt[s.prefilled + t];
    rowAdapters[b] = s.adapter;
  }
  model::KvCache& view = rows(stage, int64_t(B));
  setDelta(rowAdapters);
  std::vector<size_t> done;
  for (size_t b = 0; b < B; ++b)
    if (staged[b]->prefilled + take[b] >= staged[b]->req.prompt.size()) done.push_back(b);
  std::vector<at::Tensor> last(B);  // the finished prompts' last hidden states, [1, H] each
  // Prefill is not timed as decode steps, on either path (a 1-position chunk takes the fused
  // step too); prefillS below holds it.
  struct TimesOff {
    model::LlamaModel& m;
    model::DecodeTimes* restore;
    ~TimesOff() { m.setDecodeTimes(restore); }
  } timesOff{model, &fusedTimes};
  model.setDecodeTimes(nullptr);
  const bool stepwise = stepwisePrefill(int64_t(B), int64_t(T), view);
  if (stepwise) {
    // A short chunk as T fused steps of one position per row (a row past its real tokens is
    // fed padding, as in the padded forward below): on a small model the op-by-op forward's
    // per-op cost is most of a short prompt's time (the demo model in bf16: 1.3-2.8 ms for 5
    // tokens, against 0.2-0.4 ms as five fused steps), while the fused step reads the layers'
    // weights once per position, hence the limits (stepwisePrefill).
    std::vector<int64_t> column(B);
    for (size_t t = 0; t < T; ++t) {
      for (size_t b = 0; b < B; ++b) column[b] = t < take[b] ? ids[b * T + t] : 0;
      const at::Tensor h = model.hidden(at::tensor(column, at::kLong).view({int64_t(B), 1}), &view);  // [B, 1, H]
      for (size_t b : done)
        if (t + 1 == take[b]) last[b] = h[int64_t(b)];
    }
  } else {
    const at::Tensor h = model.hidden(at::tensor(ids, at::kLong).view({int64_t(B), int64_t(T)}), &view);  // [B, T, H]
    for (size_t b : done) last[b] = h[int64_t(b)].narrow(0, int64_t(take[b]) - 1, 1);
  }
  for (size_t b = 0; b < B; ++b) {
    cache.setLength(size_t(stage) + b, view.lengths[b] - int64_t(T) + int64_t(take[b]));  // padding cut off
    staged[b]->prefilled += take[b];
    local.promptTokens += take[b];
  }
  if (!done.empty()) {  // the finished prompts' last positions through the LM head together
    std::vector<at::Tensor> rowsDone;
    for (size_t b : done) rowsDone.push_back(last[b]);
    acceptRows(staged, done, model.logits(at::stack(rowsDone)).to(at::kCPU).contiguous());  // [d, 1, vocab]
  }
  // Finished prompts leave the staging rows: into a decode slot, or done already.
  for (size_t i = B; i-- > 0;) {
    if (staged[i]->prefilled < staged[i]->req.prompt.size()) continue;
    std::unique_ptr<Sequence> seq = std::move(staged[i]);
    if (!seq->done) copyRow(stage + int64_t(i), int64_t(running.size()));
    removeRow(staged, stage, i);
    if (seq->done) {
      const std::string reason = seq->result.finishReason;
      finish(std::move(seq), reason);
    } else {
      running.push_back(std::move(seq));
    }
  }
  ++local.prefillSteps;  // with fusedPrefillSteps: a request's onDone above may publish the counts mid-step
  if (stepwise) ++local.fusedPrefillSteps;
  local.maxPrefillBatchSeen = std::max(local.maxPrefillBatchSeen, int(B));
  local.prefillS += secondsSince(t0) - (local.sampleS + local.emitS - sampledAndEmitted);
}

// Samples the next token of seqs[i] for each i in `which` from logits row j ([d, 1, vocab]
// fp32); a request that asked for no tokens ends at once.
void BatchScheduler::Impl::acceptRows(std::vector<std::unique_ptr<Sequence>>& seqs, const std::vector<size_t>& which,
                                      const at::Tensor& logits) {
  const size_t vocab = size_t(logits.size(-1));
  float* base = logits.data_ptr<float>();
  // Each sequence samples with its own sampler: the rows are sampled in parallel (a 128K
  // vocabulary's rows are half a megabyte each), then accepted in order on this thread.
  const auto nothingToSample = [](const Sequence& s) { return s.req.maxTokens == 0 && s.result.ids.empty(); };
  std::vector<int32_t> ids(which.size(), -1);
  const auto t0 = Clock::now();
  model.parallelRows(int64_t(which.size()), int64_t(vocab), [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) {
      Sequence& s = *seqs[which[size_t(j)]];
      if (!nothingToSample(s)) ids[size_t(j)] = sample(s, base + size_t(j) * vocab, vocab);
    }
  });
  local.sampleS += secondsSince(t0);
  for (size_t j = 0; j < which.size(); ++j) {
    Sequence& s = *seqs[which[j]];
    if (nothingToSample(s)) {
      s.result.finishReason = "length";
      s.done = true;
      continue;
    }
    s.done = accept(s, ids[j]);
  }
}

DecodePath BatchScheduler::Impl::choosePath(const at::Tensor& ids, const model::KvCache& view) {
  model.setFastDecode(true);
  if (opt.decodePath == "op-by-op" || !model.fusedDecodeApplies(ids, &view)) return DecodePath::OpByOp;
  if (opt.decodePath == "fused") return DecodePath::Fused;
  if (opt.decodePath == "fused-split") return ids.size(0) >= 2 ? DecodePath::FusedSplit : DecodePath::Fused;
  return chooser.pick(int(ids.size(0)));
}

void BatchScheduler::Impl::decodeStep() {
  const int64_t n = int64_t(running.size());
  std::vector<int64_t> ids(static_cast<size_t>(n));
  std::vector<int> rowAdapters(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    ids[size_t(i)] = running[size_t(i)]->last;
    rowAdapters[size_t(i)] = running[size_t(i)]->adapter;
  }
  model::KvCache& view = rows(0, n);
  setDelta(rowAdapters);
  const at::Tensor input = at::tensor(ids, at::kLong).view({n, 1});
  const bool measured = opt.decodePath == "auto" && model.fusedDecodeApplies(input, &view);
  const DecodePath path = choosePath(input, view);
  model.setFastDecode(path != DecodePath::OpByOp);
  model.setDecodeSplit(path == DecodePath::FusedSplit ? at::get_num_threads() : 1);
  const auto t0 = Clock::now();
  // forward() times its LM head: inside the fused step (row group 0's) or after the forward
  const double lmHead0 = fusedTimes.lmHead;
  const at::Tensor logits = model.forward(input, &view).to(at::kCPU).contiguous();  // [n, 1, vocab] fp32
  const double total = secondsSince(t0), head = std::min(total, fusedTimes.lmHead - lmHead0);
  const double forward = total - head;
  model.setFastDecode(true);
  model.setDecodeSplit(1);
  if (measured) chooser.record(int(n), path, forward + head);
  local.decodeS += forward;
  local.lmHeadS += head;
  ++(path == DecodePath::OpByOp ? local.opByOpSteps : local.fusedSteps);
  if (path != DecodePath::OpByOp) local.fusedRows += uint64_t(n);
  if (path == DecodePath::FusedSplit) ++local.splitSteps;
  std::copy(view.lengths.begin(), view.lengths.end(), cache.lengths.begin());
  std::vector<size_t> all(static_cast<size_t>(n));
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  acceptRows(running, all, logits);
  for (int64_t i = n - 1; i >= 0; --i) {  // leave
    if (!running[size_t(i)]->done) continue;
    std::unique_ptr<Sequence> s = std::move(running[size_t(i)]);
    removeRow(running, 0, size_t(i));
    const std::string reason = s->result.finishReason;
    finish(std::move(s), reason);
  }
  ++local.steps;
  local.decodeRows += uint64_t(n);
  local.maxBatchSeen = std::max(local.maxBatchSeen, int(n));
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
  for (auto* seqs : {&staged, &running}) {
    const int64_t firstRow = seqs == &staged ? opt.maxBatch : 0;
    for (size_t i = seqs->size(); i-- > 0;) {
      if (!ids.count((*seqs)[i]->id)) continue;
      std::unique_ptr<Sequence> s = std::move((*seqs)[i]);
      removeRow(*seqs, firstRow, i);
      finish(std::move(s), "cancelled");
    }
  }
}

bool BatchScheduler::Impl::step() {
  std::set<uint64_t> cancelNow;
  {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] {
      return stopping || (!held && (!injectedFault.empty() || !incoming.empty() || !cancels.empty() ||
                                    !staged.empty() || !running.empty() || !waiting.empty()));
    });
    if (stopping) return false;
    if (!injectedFault.empty()) throw std::runtime_error(injectedFault);
    while (!incoming.empty()) {
      waiting.push_back(std::move(incoming.front()));
      incoming.pop_front();
    }
    cancelNow.swap(cancels);
  }
  applyCancels(cancelNow);
  admit();
  if (!staged.empty()) prefillStep();
  if (!running.empty()) decodeStep();
  std::shared_ptr<const std::function<void()>> hook;
  {
    std::lock_guard<std::mutex> lk(mu);
    publishCounts();
    hook = afterStep;
  }
  if (hook) (*hook)();
  return true;
}

void BatchScheduler::Impl::failAll(const std::string& error) {
  std::vector<std::unique_ptr<Sequence>> all;
  for (auto& s : running) all.push_back(std::move(s));
  running.clear();
  for (auto& s : staged) all.push_back(std::move(s));
  staged.clear();
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
  // Named for profilers and benchmarks (per-thread CPU time); its OpenMP workers inherit it.
  pthread_setname_np(pthread_self(), "crosslab-engine");
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
  if (options.prefillBatch < 1) throw std::runtime_error("prefill batch must be >= 1");
  if (options.stepwisePrefill < 0) throw std::runtime_error("stepwise prefill must be >= 0");
  if (options.decodePath != "auto" && options.decodePath != "fused" && options.decodePath != "fused-split" &&
      options.decodePath != "op-by-op")
    throw std::runtime_error("unknown decode path '" + options.decodePath + "' (use auto, fused, fused-split or op-by-op)");
  const int threads = options.threads > 0 ? options.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(threads);
  const at::Device device = parseDevice(options.device);
  c10::InferenceMode guard;
  auto impl = std::make_unique<Impl>(model::LlamaModel::load(dir, parseDtype(options.dtype), device, options.copyWeights));
  impl->opt = options;
  impl->chooser = DecodePathChooser(threads >= 2);
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
  impl->opt.prefillBatch = std::min(options.prefillBatch, options.maxBatch);
  impl->cache = impl->model.makeCache(options.maxBatch + impl->opt.prefillBatch, impl->maxLen + options.prefillChunk);
  impl->model.setDecodeTimes(&impl->fusedTimes);
  for (const auto& l : impl->model.weights().layers)
    for (const at::Tensor* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.wGate, &l.wUp, &l.wDown})
      impl->layerWeightBytes += int64_t(w->nbytes());
  impl->stats.kvSlots = impl->stats.freeKvSlots = options.maxBatch;
  impl->stats.kvCacheRows = int(impl->cache.lengths.size());
  impl->stats.kvCachePositions = impl->cache.capacity;
  for (const auto* part : {&impl->cache.keys, &impl->cache.values, &impl->cache.keyBlocks})
    for (const at::Tensor& t : *part) impl->stats.kvCacheBytes += uint64_t(t.nbytes());
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

void BatchScheduler::setAfterStep(std::function<void()> hook) {
  auto h = hook ? std::make_shared<const std::function<void()>>(std::move(hook)) : nullptr;
  std::lock_guard<std::mutex> lk(impl_->mu);
  impl_->afterStep = std::move(h);
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
void BatchScheduler::holdForTesting(bool held) {
  std::lock_guard<std::mutex> lk(impl_->mu);
  impl_->held = held;
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
