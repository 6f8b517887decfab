// crosslab-cli remote serve: launch vLLM / mlx_lm.server / crosslab serve on a box bound
// to its 127.0.0.1, tunnel a local port to it, wait for /health, print the local URL.
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <ostream>
#include <sstream>
#include <thread>

#include "cli/venue_support.h"
#include "cli/remote_steps.h"
#include "backends/remote/health_probe.h"
#include "backends/remote/remote_run.h"
#include "backends/ssh/port_forward.h"
#include "core/ledger/life_recorder.h"
#include "core/venues/serve_command.h"

namespace crosslab::backends {
namespace {

std::atomic<bool> gStopServe{false};

// "--adapters tuned=/runs/1/adapter,b=/x": ranks read from each adapter_config.json on the box.
std::vector<venues::AdapterSpec> adaptersOnBox(const std::string& list, ssh::SshSession* session) {
  std::vector<venues::AdapterSpec> out;
  std::istringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) throw cli::UsageError("--adapters takes NAME=PATH[,NAME=PATH]");
    venues::AdapterSpec a{item.substr(0, eq), item.substr(eq + 1), 16};
    if (session) {
      const auto r = session->run("cat " + ssh::shellQuote(a.path + "/adapter_config.json"));
      if (r.status != 0) throw std::runtime_error("no adapter_config.json in " + a.path + " on the box");
      a.rank = venues::adapterRankFromConfig(r.out);
    }
    out.push_back(a);
  }
  return out;
}

venues::ServeSpec specFrom(const cli::Args& args) {
  venues::ServeSpec s;
  s.engine = args.choice("--engine", {"crosslab", "vllm", "vllm-docker", "mlx"}, "");
  s.model = args.value("--model").value_or("");
  if (s.engine.empty() || s.model.empty()) throw cli::UsageError("--engine and --model are required");
  s.port = args.integer("--port", 8000);
  s.tensorParallel = args.integer("--tp", 1);
  if (args.has("--max-model-len")) s.maxModelLen = args.integer("--max-model-len", 0);
  s.enforceEager = args.has("--enforce-eager");
  s.program = args.value("--program").value_or("");
  return s;
}

std::string tail(const std::string& text, size_t lines) {
  size_t pos = text.size();
  for (size_t n = 0; n <= lines && pos != std::string::npos && pos > 0; ++n) pos = text.rfind('\n', pos - 1);
  return pos == std::string::npos ? text : text.substr(pos + 1);
}

}  // namespace

std::vector<std::string> splitList(const std::string& list) {
  std::vector<std::string> out;
  std::istringstream in(list);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// Starts Ray on the head box and every worker box (commands shown first) for vLLM's
// Ray executor across boxes; `run` false only prints them.
void startRay(const cli::Args& args, venues::VenueStore& store, const venues::BoxRow& head, bool run, std::ostream& out) {
  const std::string headIp = args.value("--head-ip").value_or(head.host);
  const auto headCmd = venues::shellJoin(venues::rayHeadArgv(headIp));
  out << head.name << ": " << headCmd << "\n";
  if (run) {
    ssh::SshSession s(sshTargetFor(head, args));
    const auto r = s.run(headCmd);
    if (r.status != 0) throw std::runtime_error("ray head failed on " + head.name + ": " + r.err);
  }
  for (const auto& name : splitList(args.value("--workers").value_or(""))) {
    const auto worker = requireBox(store, name);
    const auto cmd = venues::shellJoin(venues::rayWorkerArgv(headIp));
    out << worker.name << ": " << cmd << "\n";
    if (!run) continue;
    ssh::SshSession s(sshTargetFor(worker, args));
    const auto r = s.run(cmd);
    if (r.status != 0) throw std::runtime_error("ray worker failed on " + worker.name + ": " + r.err);
  }
}

int remoteServe(const cli::Args& args, cli::Context& ctx) {
  args.expectPositionals(0, 0);
  const auto boxName = args.value("--box");
  if (!boxName) throw cli::UsageError("--box is required");
  auto spec = specFrom(args);
  spec.ray = args.has("--workers");
  const int seconds = args.integer("--for", 0);
  const int healthTimeout = args.integer("--health-timeout", 900);
  const int localPort = args.integer("--local-port", 0);
  auto lab = openVenueLab(args);
  venues::VenueStore store(lab);
  if (args.has("--dry-run")) {
    if (auto list = args.value("--adapters")) spec.adapters = adaptersOnBox(*list, nullptr);
    if (spec.ray) startRay(args, store, requireBox(store, *boxName), false, ctx.out);
    ctx.out << venues::shellJoin(venues::serveArgv(spec)) << "\n";
    return 0;
  }
  const auto box = requireBox(store, *boxName);
  if (spec.ray) startRay(args, store, box, true, ctx.err);
  ssh::SshSession session(sshTargetFor(box, args));
  session.connect();
  if (auto list = args.value("--adapters")) spec.adapters = adaptersOnBox(*list, &session);
  if (const auto merge = args.value("--merge")) {
    // --merge NAME: the one adapter NAME, merged into the weights (crosslab serve --merge).
    if (spec.adapters.size() != 1 || spec.adapters[0].name != *merge)
      throw cli::UsageError("--merge NAME needs exactly one --adapters NAME=PATH with the same NAME");
    spec.mergeAdapter = true;
  }
  const std::string command = args.value("--launcher").value_or(venues::shellJoin(venues::serveArgv(spec)));
  ctx.err << "command: " << command << "\n";
  secretGuard().checkText(command, "the serving command");

  remote::RemoteRun server(session, args.value("--workdir").value_or("crosslab-serve"), "serve-events.jsonl");
  server.launch(command);
  store.touchBox(box.id, "run", "serve: " + command.substr(0, 200));
  ssh::PortForward tunnel(sshTargetFor(box, args), localPort, "127.0.0.1",
                          spec.port);
  const int local = tunnel.start();
  const QString base = QString("http://127.0.0.1:%1").arg(local);
  std::string output;
  const auto alive = [&] {
    const auto p = server.poll();
    output += p.output;
    return p.alive && !p.exitStatus;
  };
  const int status = remote::waitForHealthy(base + "/health", healthTimeout,
                                            500, alive);
  if (status != 200) {
    server.kill();
    throw std::runtime_error("the server never answered /health with 200 (last " + std::to_string(status) +
                             "); its output ends: " + tail(output, 3));
  }
  // Stop cleanly from here on: whoever reads the URL line below may stop us at once.
  std::signal(SIGINT, [](int) { gStopServe = true; });
  std::signal(SIGTERM, [](int) { gStopServe = true; });
  // A server is not work by itself: the ledger counts the sweeps and evals run against it.
  ledger::LifeRecorder life(lab);
  const auto serveId = life.serveStarted(box.id, spec.engine + " " + spec.model, ledger::epochNow());
  ctx.out << nlohmann::json{{"url", (base + "/v1").toStdString()}, {"local_port", local}, {"box", box.name},
                            {"engine", spec.engine}, {"command", command}}.dump()
          << std::endl;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!gStopServe && tunnel.running() && (seconds == 0 || std::chrono::steady_clock::now() < until))
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  tunnel.stop();
  if (args.has("--stop-on-exit")) server.kill();
  life.serveStopped(serveId, ledger::epochNow());
  return 0;
}

}  // namespace crosslab::backends
