#include "core/infer/local_engine.h"

#include "core/infer/device.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "core/model/llama.h"
#include "core/tokenizer/utf8.h"

namespace crosslab::infer {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

at::ScalarType parseDtype(const std::string& name) {
  if (name == "f32" || name == "float32") return at::kFloat;
  if (name == "bf16" || name == "bfloat16") return at::kBFloat16;
  throw std::runtime_error("unknown dtype '" + name + "' (use f32 or bf16)");
}

at::Tensor idTensor(const std::vector<int32_t>& ids, int64_t vocab) {
  std::vector<int64_t> wide(ids.begin(), ids.end());
  for (auto id : wide)
    if (id < 0 || id >= vocab)
      throw std::runtime_error("token id " + std::to_string(id) + " is outside the vocabulary (" + std::to_string(vocab) + ")");
  return at::tensor(wide, at::kLong).unsqueeze(0);  // [1, T]
}

// Length of the longest prefix of `bytes` that is complete UTF-8 (a streamed token may
// end inside a multi-byte character).
size_t completeUtf8Prefix(const std::string& bytes) {
  size_t n = bytes.size();
  for (size_t back = 1; back <= std::min<size_t>(3, n); ++back) {
    const unsigned char c = static_cast<unsigned char>(bytes[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: look further back
    const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return need > back ? n - back : n;
  }
  return n;
}

}  // namespace

struct LocalEngine::Impl {
  model::LlamaModel model;
  std::optional<tokenizer::BpeTokenizer> tok;
  double modelLoadS = 0, tokenizerLoadS = 0;
};

double GenerateResult::prefillTokPerS() const { return prefillSeconds > 0 ? promptTokens / prefillSeconds : 0; }
double GenerateResult::decodeTokPerS() const {
  return decodeSeconds > 0 && ids.size() > 1 ? double(ids.size() - 1) / decodeSeconds : 0;
}

LocalEngine::LocalEngine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LocalEngine::~LocalEngine() = default;

std::unique_ptr<LocalEngine> LocalEngine::open(const std::filesystem::path& dir, const EngineOptions& options) {
  const int threads = options.threads > 0 ? options.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(threads);
  const at::Device device = parseDevice(options.device);
  c10::InferenceMode guard;
  const auto t0 = Clock::now();
  auto impl = std::make_unique<Impl>(Impl{model::LlamaModel::load(dir, parseDtype(options.dtype), device, options.copyWeights), std::nullopt});
  if (!options.adapter.empty()) impl->model.mergeLoraAdapter(options.adapter);
  const auto t1 = Clock::now();
  if (std::filesystem::exists(dir / "tokenizer.json")) impl->tok = tokenizer::BpeTokenizer::load(dir / "tokenizer.json");
  impl->modelLoadS = std::chrono::duration<double>(t1 - t0).count();
  impl->tokenizerLoadS = seconds(t1);
  return std::unique_ptr<LocalEngine>(new LocalEngine(std::move(impl)));
}

const model::ModelConfig& LocalEngine::config() const { return impl_->model.config(); }
double LocalEngine::modelLoadSeconds() const { return impl_->modelLoadS; }
double LocalEngine::tokenizerLoadSeconds() const { return impl_->tokenizerLoadS; }
const tokenizer::BpeTokenizer* LocalEngine::tokenizer() const { return impl_->tok ? &*impl_->tok : nullptr; }

std::vector<float> LocalEngine::forwardLogits(const std::vector<int32_t>& ids, bool incremental, bool opByOp) {
  if (ids.empty()) throw std::runtime_error("no input ids");
  c10::InferenceMode guard;
  const at::Tensor input = idTensor(ids, config().vocabSize);  // [1, T]
  at::Tensor logits;
  if (incremental) {
    model::KvCache cache = impl_->model.makeCache(1, input.size(1));
    std::vector<at::Tensor> rows;
    impl_->model.setFastDecode(!opByOp);
    for (int64_t t = 0; t < input.size(1); ++t) rows.push_back(impl_->model.forward(input.narrow(1, t, 1), &cache));
    impl_->model.setFastDecode(true);
    logits = at::cat(rows, 1).to(at::kCPU).contiguous();  // [1, T, vocab]
  } else {
    logits = impl_->model.forward(input).to(at::kCPU).contiguous();
  }
  return std::vector<float>(logits.data_ptr<float>(), logits.data_ptr<float>() + logits.numel());
}

GenerateResult LocalEngine::generate(const std::vector<int32_t>& prompt, const GenerateOptions& options) {
  if (prompt.empty()) throw std::runtime_error("empty prompt");
  if (options.maxTokens < 0) throw std::runtime_error("max tokens must be >= 0");
  c10::InferenceMode guard;
  auto& model = impl_->model;
  const auto* tok = tokenizer();
  std::vector<int32_t> stops = options.stopIds;
  if (!options.ignoreEos) stops.insert(stops.end(), config().eosIds.begin(), config().eosIds.end());

  GenerateResult r;
  r.promptTokens = int(prompt.size());
  r.finishReason = "length";
  if (options.maxTokens == 0) return r;
  model::KvCache cache = model.makeCache(1, int64_t(prompt.size()) + options.maxTokens);
  Sampler sampler(options.sampling);
  std::string pending;  // decoded bytes not yet handed out (unfinished UTF-8 or a possible stop string)

  auto t0 = Clock::now();
  at::Tensor input = idTensor(prompt, config().vocabSize);
  auto tDecode = t0;
  for (int step = 0; step < options.maxTokens; ++step) {
    const at::Tensor h = model.hidden(input, &cache);                 // [1, T, H]
    const at::Tensor last = model.logits(h.narrow(1, h.size(1) - 1, 1)).contiguous();  // [1, 1, vocab]
    const int32_t id = sampler.sample(last.data_ptr<float>(), size_t(last.numel()));
    if (step == 0) {
      r.prefillSeconds = seconds(t0);
      tDecode = Clock::now();
    }
    if (std::find(stops.begin(), stops.end(), id) != stops.end()) {
      r.finishReason = "stop";
      break;
    }
    r.ids.push_back(id);
    std::string piece;
    if (tok && id < tok->vocabSize()) {
      pending += tok->isSpecial(id) ? std::string() : tok->tokenBytes(id);
      const size_t n = completeUtf8Prefix(pending);
      piece = pending.substr(0, n);
      pending.erase(0, n);
    }
    bool stopString = false;
    const size_t old = r.text.size();
    std::string full = r.text + piece;
    for (const auto& s : options.stopStrings) {
      if (s.empty()) continue;
      const size_t at = full.find(s, old >= s.size() ? old - s.size() + 1 : 0);
      if (at != std::string::npos) {  // the stop string and what follows it are not output
        full.resize(at);
        stopString = true;
        break;
      }
    }
    piece = full.size() > old ? full.substr(old) : std::string();
    r.text = std::move(full);
    const bool keepGoing = !options.onToken || options.onToken(id, piece);
    if (stopString) {
      r.finishReason = "stop";
      break;
    }
    if (!keepGoing || (options.cancel && options.cancel->load())) {
      r.finishReason = "cancelled";
      break;
    }
    input = at::full({1, 1}, int64_t(id), at::kLong);
  }
  r.decodeSeconds = seconds(tDecode);
  return r;
}

}  // namespace crosslab::infer
