#include "backends/serve/engine_metrics.h"

#include <charconv>

namespace crosslab::serve {
namespace {

// A label value with Prometheus's escapes (backslash, double quote, newline).
std::string escaped(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

class Exposition {
 public:
  explicit Exposition(const std::string& model) : labels_("model_name=\"" + escaped(model) + "\",engine=\"0\"") {}
  void family(const char* name, const char* type, const char* help) {
    text_ += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  void sample(const char* name, double value, const std::string& extra = {}) {
    char v[64];  // to_chars: shortest round trip, '.' whatever the locale
    const auto end = std::to_chars(v, v + sizeof v, value).ptr;
    text_ += std::string(name) + "{" + labels_ + extra + "} " + std::string(v, end) + "\n";
  }
  void one(const char* name, const char* type, const char* help, double value) {
    family(name, type, help);
    sample(name, value);
  }
  std::string take() { return std::move(text_); }

 private:
  std::string labels_, text_;
};

}  // namespace

std::string prometheusMetrics(const infer::SchedulerStats& s, const std::string& modelName) {
  Exposition e(modelName);
  e.one("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", s.running);
  e.one("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", s.waiting);
  e.one("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.",
        s.kvSlots > 0 ? double(s.kvSlots - s.freeKvSlots) / double(s.kvSlots) : 0.0);
  e.one("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", double(s.promptTokens));
  e.one("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.",
        double(s.generatedTokens));
  e.one("crosslab:decode_steps_total", "counter", "Decode steps run.", double(s.steps));
  e.one("crosslab:decode_rows_total", "counter", "Rows the decode steps decoded (each step's batch, summed).",
        double(s.decodeRows));
  e.one("crosslab:decode_step_seconds_total", "counter",
        "Seconds of the decode steps' forwards and LM head (not sampling, not the HTTP side).", s.decodeS + s.lmHeadS);
  e.family("crosslab:engine_seconds_total", "counter", "Seconds of the scheduler thread, by what it did.");
  e.sample("crosslab:engine_seconds_total", s.decodeS + s.lmHeadS, ",phase=\"decode\"");
  e.sample("crosslab:engine_seconds_total", s.prefillS, ",phase=\"prefill\"");
  e.sample("crosslab:engine_seconds_total", s.sampleS, ",phase=\"sampling\"");
  e.sample("crosslab:engine_seconds_total", s.emitS, ",phase=\"emitting\"");
  return e.take();
}

}  // namespace crosslab::serve
