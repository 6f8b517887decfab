#pragma once
// Shared by the serving tests: a tiny checkpoint with a byte-level tokenizer and two LoRA
// adapters on disk, an in-process server on an ephemeral loopback port, and SSE helpers.

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backends/serve/openai_server.h"
#include "core/infer/batch_scheduler.h"
#include "tests/model/tiny_llama.h"

namespace crosslab::testing {

// Writes config.json + model.safetensors (vocab 512, EOS 2 and 3), a tokenizer.json whose
// ids 5..260 are the 256 bytes, 0..4 the Llama 3 specials and 261..511 two-letter words,
// and adapters dir/lora_a, dir/lora_b. Returns the spec.
TinyLlamaSpec writeServeFixture(const std::string& dir);

// BatchScheduler + OpenAiServer on 127.0.0.1:<ephemeral>, served from a thread.
class LocalServer {
 public:
  LocalServer(const std::string& modelDir, infer::SchedulerOptions so, serve::ServerOptions opt);
  ~LocalServer();
  int port() const { return port_; }
  infer::BatchScheduler& engine() { return *engine_; }
  serve::OpenAiServer& server() { return *server_; }
  httplib::Client client() const;

 private:
  std::unique_ptr<infer::BatchScheduler> engine_;
  std::unique_ptr<serve::OpenAiServer> server_;
  std::thread thread_;
  int port_ = 0;
};

// An SSE body split into its frames' payloads (the text after "data: "); empty and
// `ok` false when any frame is not exactly "data: <payload>\n\n".
std::vector<std::string> sseFrames(const std::string& body, bool* ok);

// The thread ids of process `pid`'s threads named "sse-writer" (0: this process).
std::vector<int> writerThreads(int pid = 0);

}  // namespace crosslab::testing
