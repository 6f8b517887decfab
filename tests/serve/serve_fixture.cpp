#include "tests/serve/serve_fixture.h"

#include <filesystem>
#include <fstream>

namespace crosslab::testing {
namespace {

// GPT-2's byte-level alphabet: byte b -> the code point that stands for it in tokenizer.json.
std::vector<std::string> byteSymbols() {
  std::vector<int> cps(256, -1);
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    cps[size_t(b)] = printable ? b : next++;
  }
  std::vector<std::string> out;
  for (int cp : cps) {
    std::string s;
    if (cp < 0x80) {
      s += char(cp);
    } else {
      s += char(0xC0 | (cp >> 6));
      s += char(0x80 | (cp & 0x3F));
    }
    out.push_back(s);
  }
  return out;
}

void writeTokenizer(const std::string& path) {
  using nlohmann::json;
  json vocab = json::object();
  const auto symbols = byteSymbols();
  for (int b = 0; b < 256; ++b) vocab[symbols[size_t(b)]] = 5 + b;
  int id = 261;
  for (char a = 'a'; a <= 'z' && id < 512; ++a)
    for (char c = 'a'; c <= 'z' && id < 512; ++c) vocab[std::string{a, c}] = id++;
  const char* specials[] = {"<|start_header_id|>", "<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|end_header_id|>"};
  json added = json::array();
  for (int i = 0; i < 5; ++i) added.push_back({{"id", i}, {"content", specials[i]}, {"special", true}});
  const json tok = {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}},
                    {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
                    {"added_tokens", added},
                    {"post_processor",
                     {{"type", "TemplateProcessing"},
                      {"single", json::array({{{"SpecialToken", {{"id", "<|begin_of_text|>"}}}}, {{"Sequence", {{"id", "A"}}}}})}}}};
  std::ofstream(path) << tok.dump();
}

}  // namespace

TinyLlamaSpec writeServeFixture(const std::string& dir) {
  TinyLlamaSpec spec;
  spec.kvHeads = 2;  // GQA
  writeTinyLlama(dir, spec);
  writeTokenizer(dir + "/tokenizer.json");
  writeTinyLora(dir + "/lora_a", spec, 8, 16, false, 11);
  writeTinyLora(dir + "/lora_b", spec, 4, 8, true, 12);
  return spec;
}

LocalServer::LocalServer(const std::string& modelDir, infer::SchedulerOptions so, serve::ServerOptions opt) {
  engine_ = infer::BatchScheduler::open(modelDir, so);
  opt.host = "127.0.0.1";
  opt.port = 0;
  server_ = std::make_unique<serve::OpenAiServer>(*engine_, opt);
  port_ = server_->bind();
  thread_ = std::thread([this] { server_->run(); });
}

LocalServer::~LocalServer() {
  server_->stop();
  thread_.join();
  engine_->stop();
}

httplib::Client LocalServer::client() const {
  httplib::Client c("127.0.0.1", port_);
  c.set_read_timeout(120, 0);
  return c;
}

std::vector<std::string> sseFrames(const std::string& body, bool* ok) {
  std::vector<std::string> frames;
  *ok = true;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t end = body.find("\n\n", pos);
    if (end == std::string::npos || body.compare(pos, 6, "data: ") != 0) {
      *ok = false;
      return {};
    }
    const std::string payload = body.substr(pos + 6, end - pos - 6);
    if (payload.find('\n') != std::string::npos) {
      *ok = false;
      return {};
    }
    frames.push_back(payload);
    pos = end + 2;
  }
  return frames;
}

std::vector<int> writerThreads(int pid) {
  std::vector<int> out;
  const std::string tasks = pid ? "/proc/" + std::to_string(pid) + "/task" : "/proc/self/task";
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator(tasks, ec)) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name == "sse-writer") out.push_back(std::stoi(task.path().filename().string()));
  }
  return out;
}

}  // namespace crosslab::testing
