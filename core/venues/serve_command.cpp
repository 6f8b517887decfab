#include "core/venues/serve_command.h"

#include <algorithm>
#include <stdexcept>

#include "core/model/adapter_config.h"

namespace crosslab::venues {
namespace {

// vLLM accepts these --max-lora-rank values (its default is 16).
constexpr int kVllmLoraRanks[] = {1, 8, 16, 32, 64, 128, 256, 320, 512};

void vllmFlags(const ServeSpec& s, std::vector<std::string>& a) {
  a.insert(a.end(), {"--host", "127.0.0.1", "--port", std::to_string(s.port)});
  if (s.tensorParallel > 1) a.insert(a.end(), {"--tensor-parallel-size", std::to_string(s.tensorParallel)});
  if (s.ray) a.insert(a.end(), {"--distributed-executor-backend", "ray"});
  if (s.maxModelLen) a.insert(a.end(), {"--max-model-len", std::to_string(*s.maxModelLen)});
  if (s.enforceEager) a.push_back("--enforce-eager");
  if (s.gpuMemoryUtilization) a.insert(a.end(), {"--gpu-memory-utilization", std::to_string(*s.gpuMemoryUtilization)});
  if (s.adapters.empty()) return;
  a.insert(a.end(), {"--enable-lora", "--max-lora-rank", std::to_string(maxLoraRankFor(s.adapters)), "--max-loras",
                     std::to_string(s.adapters.size()), "--lora-modules"});
  for (const auto& ad : s.adapters) a.push_back(ad.name + "=" + ad.path);
}

}  // namespace

int maxLoraRankFor(const std::vector<AdapterSpec>& adapters) {
  int need = 0;
  for (const auto& a : adapters) need = std::max(need, a.rank);
  for (int r : kVllmLoraRanks)
    if (r >= need) return std::max(r, 16);
  throw std::invalid_argument("adapter rank " + std::to_string(need) + " is above vLLM's largest --max-lora-rank (512)");
}

int adapterRankFromConfig(const std::string& text) {
  try {
    return int(model::parseAdapterConfig(text).rank);
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(e.what());
  }
}

std::vector<std::string> serveArgv(const ServeSpec& s) {
  if (s.model.empty()) throw std::invalid_argument("serve: no model");
  if (s.mergeAdapter && s.engine != "crosslab")
    throw std::invalid_argument(s.engine + " serves a merged model as its own folder: merge the adapter first "
                                "(crosslab-cli merge) and serve that folder");
  const auto program = [&](const char* usual) { return s.program.empty() ? std::string(usual) : s.program; };
  std::vector<std::string> a;
  if (s.engine == "vllm") {
    a = {program("vllm"), "serve", s.model};
    vllmFlags(s, a);
  } else if (s.engine == "vllm-docker") {
    // Host networking keeps the server on the box's loopback; the model path is mounted as is.
    a = {"docker", "run", "--rm", "--network", "host", "--ipc", "host", "-v", s.model + ":" + s.model};
    for (const auto& ad : s.adapters) a.insert(a.end(), {"-v", ad.path + ":" + ad.path});
    a.insert(a.end(), {s.image, program("vllm"), "serve", s.model});
    vllmFlags(s, a);
  } else if (s.engine == "mlx") {
    if (s.adapters.size() > 1) throw std::invalid_argument("mlx_lm.server serves one adapter at a time");
    a = {program("mlx_lm.server"), "--model", s.model, "--host", "127.0.0.1", "--port", std::to_string(s.port)};
    if (!s.adapters.empty()) a.insert(a.end(), {"--adapter-path", s.adapters[0].path});
  } else if (s.engine == "crosslab") {
    a = {program("crosslab-cli"), "serve", "--model", s.model, "--host", "127.0.0.1", "--port", std::to_string(s.port)};
    if (s.maxModelLen) a.insert(a.end(), {"--max-model-len", std::to_string(*s.maxModelLen)});
    if (s.mergeAdapter && s.adapters.size() != 1)
      throw std::invalid_argument("--merge serves exactly one adapter merged into the weights");
    for (const auto& ad : s.adapters) a.insert(a.end(), {"--lora", ad.name + "=" + ad.path});
    if (s.mergeAdapter) a.insert(a.end(), {"--merge", s.adapters[0].name});
  } else {
    throw std::invalid_argument("unknown serving engine '" + s.engine + "' (vllm, vllm-docker, mlx, crosslab)");
  }
  return a;
}

std::vector<std::string> rayHeadArgv(const std::string& headIp, int port) {
  return {"ray", "start", "--head", "--node-ip-address=" + headIp, "--port=" + std::to_string(port)};
}

std::vector<std::string> rayWorkerArgv(const std::string& headIp, int port) {
  return {"ray", "start", "--address=" + headIp + ":" + std::to_string(port)};
}

std::string shellJoin(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& w : argv) {
    if (!out.empty()) out += ' ';
    const bool plain = !w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,@+") == std::string::npos;
    if (plain) {
      out += w;
      continue;
    }
    out += '\'';
    for (char c : w) out += (c == '\'') ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace crosslab::venues
