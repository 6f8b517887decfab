#pragma once
// Serving command lines, shown before they run: `vllm serve` (or the same in a
// container), `mlx_lm.server` on Apple silicon, and `crosslab-cli serve` (its real flags:
// --model, --lora NAME=DIR, --merge NAME). All bind the
// box's 127.0.0.1 so they are reached through the SSH tunnel, never an open port.

#include <optional>
#include <string>
#include <vector>

namespace crosslab::venues {

struct AdapterSpec {
  std::string name;  // the `model` value clients select it by
  std::string path;  // PEFT folder on the box
  int rank = 0;      // adapter_config.json "r"
};

struct ServeSpec {
  std::string engine = "vllm";  // vllm | vllm-docker | mlx | crosslab
  std::string model;            // path or hub id on the box
  std::vector<AdapterSpec> adapters;
  int port = 8000;
  int tensorParallel = 1;
  std::optional<int> maxModelLen;
  bool enforceEager = false;
  std::optional<double> gpuMemoryUtilization;
  std::string image = "vllm/vllm-openai:latest";  // vllm-docker only (rocm/vllm:latest on AMD)
  bool ray = false;  // tensor parallelism across boxes: vLLM's Ray executor over a started cluster
  bool mergeAdapter = false;  // crosslab: serve the one adapter merged into the weights (--merge)
  std::string program;        // the server program on the box; empty: the engine's usual name
};

// A Ray cluster for vLLM across boxes (the lab's two-Spark TP=2): `ray start` on the
// head, then on each worker pointing at it. Ray daemonizes itself.
std::vector<std::string> rayHeadArgv(const std::string& headIp, int port = 6379);
std::vector<std::string> rayWorkerArgv(const std::string& headIp, int port = 6379);

// argv of the serving process.
std::vector<std::string> serveArgv(const ServeSpec& spec);
// The same as one shell line (each word quoted when needed).
std::string shellJoin(const std::vector<std::string>& argv);
// vLLM's --max-lora-rank must cover every adapter and be one of its supported sizes.
int maxLoraRankFor(const std::vector<AdapterSpec>& adapters);
// "r" from a PEFT adapter_config.json text; throws std::invalid_argument when absent.
int adapterRankFromConfig(const std::string& adapterConfigJson);

}  // namespace crosslab::venues
