// Stand-in for an OpenAI-compatible server on a box (vLLM cannot run in tests):
// /health answers 503 while "loading" (the first N probes), then 200 with an empty body,
// as vLLM does; /v1/models lists one model. Binds 127.0.0.1 only.
// Usage: serve_standin --port P [--unhealthy N]
#include <httplib.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  int port = 8000, unhealthy = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--port")) port = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--unhealthy")) unhealthy = std::atoi(argv[i + 1]);
  }
  httplib::Server s;
  std::atomic<int> probes{0};
  s.Get("/health", [&](const httplib::Request&, httplib::Response& res) { res.status = ++probes > unhealthy ? 200 : 503; });
  s.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"object": "list", "data": [{"id": "base", "object": "model", "owned_by": "standin", "root": "base", "parent": null, "max_model_len": 4096}]})",
                    "application/json");
  });
  return s.listen("127.0.0.1", port) ? 0 : 1;
}
