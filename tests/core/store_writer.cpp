// Test helper: a separate process that writes to a lab the way crosslab-cli train will
// (one transaction per batch of metrics rows), reporting each commit on stdout.
//
// usage: store_writer LAB TXNS BATCH [--stall-in-txn K]
//   prints "run ID" once, then "committed K" after the K-th commit (flushed at once).
//   --stall-in-txn K: after K commits, open a transaction, insert a batch, print
//   "in-transaction" and sleep inside it (the parent kills it there).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "core/store/lab_store.h"

using namespace crosslab::store;

namespace {
std::vector<MetricRow> batch(std::int64_t firstStep, int n) {
  std::vector<MetricRow> rows;
  for (int i = 0; i < n; ++i) {
    MetricRow r;
    r.step = firstStep + i;
    r.loss = 1.0 / static_cast<double>(r.step + 1);
    r.lr = 1e-4;
    r.tokens = r.step * 4096;
    rows.push_back(r);
  }
  return rows;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: store_writer LAB TXNS BATCH [--stall-in-txn K]\n");
    return 2;
  }
  const int txns = std::atoi(argv[2]);
  const int n = std::atoi(argv[3]);
  int stallAt = -1;
  if (argc >= 6 && std::strcmp(argv[4], "--stall-in-txn") == 0) stallAt = std::atoi(argv[5]);
  try {
    auto lab = LabStore::open(argv[1]);
    NewRun run;
    run.name = "writer-" + std::to_string(static_cast<long long>(getpid()));  // one run per writer process
    const auto runId = lab.runs().requestCreate(run);
    std::printf("run %lld\n", static_cast<long long>(runId));
    std::fflush(stdout);
    for (int t = 0; t < txns; ++t) {
      if (t == stallAt) {
        Transaction tx(lab.db());
        auto st = lab.db().prepare("INSERT INTO metrics(run_id, step, loss) VALUES (?, ?, 0.5)");
        for (int i = 0; i < n; ++i) {
          st.bind(1, runId).bind(2, static_cast<std::int64_t>(t) * n + i).run();
          st.reset();
        }
        std::printf("in-transaction\n");
        std::fflush(stdout);
        std::this_thread::sleep_for(std::chrono::seconds(60));
        return 3;  // never reached: the parent kills us
      }
      lab.runs().appendMetrics(runId, batch(static_cast<std::int64_t>(t) * n, n));
      std::printf("committed %d\n", t + 1);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "store_writer: %s\n", e.what());
    return 1;
  }
  return 0;
}
