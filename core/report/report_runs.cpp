// Training and serving sections, with the loss and throughput charts.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "core/bench/bench_store.h"
#include "core/bench/server_metrics.h"
#include "core/ledger/lab_ledger.h"
#include "core/report/report_sections.h"
#include "core/store/lab_store.h"
#include "core/util/sha256.h"
#include "core/venues/meter.h"

namespace fs = std::filesystem;

namespace crosslab::report {
namespace {

// SHA-256 over a model folder's weight files (name and content, in name order): the same
// weights give the same hash wherever they were copied.
std::string weightsHash(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return {};
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && e.path().extension() == ".safetensors") files.push_back(e.path());
  if (files.empty()) return {};
  std::sort(files.begin(), files.end());
  util::Sha256 h;
  for (const auto& f : files) h.update(f.filename().string() + ":" + util::sha256File(f) + "\n");
  return h.hex();
}

// SHA-256 over the recipe's dataset files (dataset_info.json names them).
std::string dataHash(const std::string& recipeJson, const std::string& runDir) {
  try {
    const auto r = nlohmann::json::parse(recipeJson);
    const std::string datasets = r.value("dataset", std::string());
    fs::path dir = r.value("dataset_dir", std::string("data"));
    if (dir.is_relative() && !runDir.empty()) {
      // Relative to where the trainer ran: try the run folder's lab, then as given.
      const fs::path lab = fs::path(runDir).parent_path().parent_path();
      if (fs::exists(lab / dir)) dir = lab / dir;
    }
    std::ifstream in(dir / "dataset_info.json");
    if (!in) return {};
    const auto info = nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
    util::Sha256 h;
    size_t n = 0;
    for (size_t start = 0; start <= datasets.size();) {
      const size_t comma = datasets.find(',', start);
      const std::string name = datasets.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      start = comma == std::string::npos ? datasets.size() + 1 : comma + 1;
      if (name.empty() || !info.contains(name)) return {};
      const fs::path file = dir / info[name].value("file_name", std::string());
      h.update(name + ":" + util::sha256File(file) + "\n");
      ++n;
    }
    return n ? h.hex() : std::string();
  } catch (const std::exception&) {
    return {};  // unknown: the run joins no replication group
  }
}

std::string minutesText(double m) { return fixedText(m, 1) + " min"; }

}  // namespace

std::string fixedText(double v, int decimals) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string recipeKey(const std::string& recipeJson) {
  nlohmann::json r;
  try {
    r = nlohmann::json::parse(recipeJson);
  } catch (const std::exception&) {
    return {};
  }
  if (!r.is_object() || r.empty()) return {};
  // The effective batch is the recipe; how it splits over devices is the venue's.
  const auto num = [&](const char* k, long long d) { return r.contains(k) && r[k].is_number() ? r[k].get<long long>() : d; };
  const long long effective = num("per_device_train_batch_size", 1) * num("gradient_accumulation_steps", 1) *
                              num("devices", 1);
  for (const char* k : {"model_name_or_path", "dataset", "dataset_dir", "output_dir", "deepspeed", "logging_steps",
                        "save_steps", "eval_steps", "overwrite_output_dir", "per_device_train_batch_size",
                        "gradient_accumulation_steps", "devices", "threads", "max_steps", "resume"})
    r.erase(k);
  r["effective_batch"] = effective;
  return util::sha256Hex(r.dump());
}

std::vector<TrainRun> readTrainRuns(store::LabStore& lab) {
  auto& db = lab.db();
  auto st = db.prepare(
      "SELECT r.id, r.name, r.status, IFNULL(r.model, ''), IFNULL(r.run_dir, ''), IFNULL(r.recipe_json, ''), "
      "IFNULL(r.started_at, ''), IFNULL(r.ended_at, ''), r.total_steps, "
      "COALESCE((SELECT w.box_id FROM box_work w WHERE w.run_id = r.id ORDER BY w.id DESC LIMIT 1), r.box_id), "
      "IFNULL(r.weights_sha256, ''), IFNULL(r.data_sha256, ''), IFNULL(v.name, '') "
      "FROM runs r LEFT JOIN venues v ON v.id = r.venue_id WHERE r.kind = 'train' ORDER BY r.id");
  std::vector<TrainRun> runs;
  while (st.step()) {
    TrainRun t;
    t.id = st.int64(0);
    t.name = st.text(1);
    t.status = st.text(2);
    t.model = st.text(3);
    t.runDir = st.text(4);
    t.recipeJson = st.text(5);
    t.startedAt = st.text(6);
    t.endedAt = st.text(7);
    t.totalSteps = st.optInt64(8);
    t.boxId = st.optInt64(9);
    t.weightsSha = st.text(10);
    t.dataSha = st.text(11);
    t.venue = st.text(12);
    runs.push_back(std::move(t));
  }
  for (auto& t : runs) {
    auto m = db.prepare("SELECT step, loss FROM metrics WHERE run_id = ? AND loss IS NOT NULL ORDER BY step");
    m.bind(1, t.id);
    while (m.step()) t.loss.emplace_back(static_cast<double>(m.int64(0)), m.real(1));
    if (!t.loss.empty()) {
      t.firstStep = static_cast<std::int64_t>(t.loss.front().first);
      t.lastStep = static_cast<std::int64_t>(t.loss.back().first);
    }
    if (t.boxId) {
      if (const auto life = ledger::readLife(lab, *t.boxId)) {
        t.venue = life->venue;
        t.hardware = (life->gpus > 1 ? std::to_string(life->gpus) + "x " : std::string()) +
                     (life->gpu.empty() ? life->box : life->gpu) + " (" + life->box + ")";
        if (life->pricePerHour > 0) t.pricePerHour = life->pricePerHour;
      }
    }
    if (t.venue.empty()) t.venue = "this machine";
    if (t.hardware.empty()) t.hardware = t.venue == "this machine" ? "local engine" : t.venue;
    std::string modelPath = t.model;
    if (modelPath.empty()) try {
        modelPath = nlohmann::json::parse(t.recipeJson).value("model_name_or_path", std::string());
      } catch (const std::exception&) {
      }
    if (t.weightsSha.empty() && !modelPath.empty()) {
      try {
        t.weightsSha = weightsHash(modelPath);
      } catch (const std::exception&) {
      }
    }
    if (t.dataSha.empty()) t.dataSha = dataHash(t.recipeJson, t.runDir);
  }
  return runs;
}

void addTraining(SectionContext& ctx) {
  auto& doc = ctx.doc;
  doc.heading("Training");
  const auto runs = readTrainRuns(ctx.lab);
  if (runs.empty()) {
    doc.paragraph("No training runs in this lab.");
    return;
  }
  Table t;
  t.header = {"Run", "Venue / hardware", "Wall", "Cost", "Loss first → last", "Steps", "Status"};
  ChartSpec chart;
  chart.title = "Training loss";
  chart.xLabel = "step";
  chart.yLabel = "loss";
  int color = 0;
  for (const auto& r : runs) {
    std::string wall = "—", cost = "—";
    const auto start = venues::parseUtc(r.startedAt), end = venues::parseUtc(r.endedAt);
    if (start && end) {
      const double minutes = (*end - *start) / 60.0;
      wall = minutesText(minutes);
      cost = r.pricePerHour ? "$" + fixedText(minutes * *r.pricePerHour / 60.0, 2) : "$0 marginal";
    }
    const std::string loss = r.loss.empty() ? "—"
                                            : fixedText(r.loss.front().second, 3) + " → " +
                                                  fixedText(r.loss.back().second, 3);
    const std::string steps = r.loss.empty() ? "—"
                                             : std::to_string(r.lastStep) +
                                                   (r.totalSteps ? " / " + std::to_string(*r.totalSteps) : "");
    t.rows.push_back({r.name, r.hardware, wall, cost, loss, steps, r.status});
    std::string rows = "runs.id=" + std::to_string(r.id);
    if (!r.loss.empty())
      rows += "; metrics run_id=" + std::to_string(r.id) + " steps " + std::to_string(r.firstStep) + "–" +
              std::to_string(r.lastStep) + " (" + std::to_string(r.loss.size()) + " rows)";
    if (r.boxId) rows += "; boxes.id=" + std::to_string(*r.boxId) + " (price)";
    t.refs.push_back(doc.cite("T", "training: " + r.name, rows));
    if (!r.loss.empty()) {
      chart.series.push_back({r.name + " loss", r.loss, color, true, false});
      chart.series.push_back({r.name, smoothEma(r.loss), color, false, false});
      ++color;
    }
  }
  doc.table(std::move(t));
  doc.paragraph("Wall is the run's start to its end; cost is that time at its box's price (a run on this machine "
                "costs nothing at the margin).");
  if (!chart.series.empty()) doc.chart(std::move(chart), "charts/training-loss.svg");
}

namespace {

// The second instrument: what the server counted at each level (its /metrics read before and
// after the level, the level JSON's "server" key), beside the client's count. Levels without
// a reading (a server with no /metrics, a sweep from before bench read it) are left out.
void addServerCounts(Document& doc, const std::vector<bench::StoredBenchmark>& benches,
                     const std::vector<std::string>& refs) {
  Table t;
  t.header = {"Venue / method", "Concurrency", "Output tokens (client)", "Generated (server)", "Agree",
              "Decode rows per step", "ms per step"};
  size_t without = 0;
  for (size_t i = 0; i < benches.size(); ++i) {
    for (const auto& l : benches[i].levels) {
      const auto count = bench::storedServerCount(l.resultJson);
      if (!count) {
        ++without;
        continue;
      }
      std::string agree = "—";
      if (const auto diff = count->serverMinusClient())
        agree = *diff == 0 ? "yes" : (*diff > 0 ? "server +" : "server −") + fixedText(std::fabs(*diff), 0);
      const auto number = [](const std::optional<double>& v, int decimals) {
        return v ? fixedText(*v, decimals) : std::string("—");
      };
      t.rows.push_back({benches[i].header.label, std::to_string(l.concurrency), number(count->clientOutputTokens, 0),
                        fixedText(count->generatedTokens, 0), agree, number(count->decodeRowsPerStep, 1),
                        number(count->decodeStepMs, 2)});
      t.refs.push_back(refs[i]);
    }
  }
  if (t.rows.empty()) return;
  doc.heading("What the server counted", 3);
  doc.table(std::move(t));
  doc.paragraph("From the server's /metrics, read before and after each level (vLLM's "
                "vllm:generation_tokens_total; decode steps from crosslab's own counters, which vLLM does not "
                "export). The counts part when another client shares the server during a level, or when the "
                "client loses tokens." +
                (without ? " " + std::to_string(without) + " level(s) have no server reading." : std::string()));
}

}  // namespace

void addServing(SectionContext& ctx) {
  auto& doc = ctx.doc;
  doc.heading("Serving");
  const auto benches = bench::BenchStore(ctx.lab).list();
  if (benches.empty()) {
    doc.paragraph("No benchmark sweeps in this lab.");
    return;
  }
  std::set<int> levels;
  for (const auto& b : benches)
    for (const auto& l : b.levels) levels.insert(l.concurrency);
  Table grid;
  grid.header = {"Venue / method"};
  for (int c : levels) grid.header.push_back("conc " + std::to_string(c));
  Table summary;
  summary.header = {"Venue / method", "Model", "1-stream tok/s", "Best aggregate tok/s", "$/M output tokens", "Notes"};
  ChartSpec chart;
  chart.title = "Output throughput by concurrency";
  chart.xLabel = "concurrent streams";
  chart.yLabel = "aggregate tok/s";
  chart.logX = true;
  int color = 0;
  std::vector<std::string> refs;  // per sweep, its appendix key
  for (const auto& b : benches) {
    std::vector<std::string> row = {b.header.label};
    for (int c : levels) {
      auto it = std::find_if(b.levels.begin(), b.levels.end(), [c](const auto& l) { return l.concurrency == c; });
      if (it == b.levels.end())
        row.push_back("");
      else if (it->completed == 0)  // aborted live: nothing completed, no rate
        row.push_back(it->collapse.empty() ? "" : "collapse");
      else
        row.push_back(fixedText(it->outputThroughput, 1) + (c > 1 ? " agg" : ""));
    }
    const std::string ref = doc.cite("S", "serving: " + b.header.label,
                                     "benchmarks.id=" + std::to_string(b.id) + "; benchmark_levels benchmark_id=" +
                                         std::to_string(b.id) + " (" + std::to_string(b.levels.size()) + " levels)");
    grid.rows.push_back(row);
    grid.refs.push_back(ref);
    std::string oneStream = "—", best = "—", usd = "—", notes;
    const bench::StoredLevel* top = nullptr;
    for (const auto& l : b.levels) {
      if (l.concurrency == 1) oneStream = l.perStreamMeasured ? fixedText(l.perStreamTokS, 1) : "not measured";
      if (!top || l.outputThroughput > top->outputThroughput) top = &l;
      if (!l.collapse.empty()) notes += (notes.empty() ? "" : "; ") + l.collapse;
    }
    if (top) {
      best = fixedText(top->outputThroughput, 1) + " (c=" + std::to_string(top->concurrency) + ")";
      if (top->usdPerMOutputTokens) usd = "$" + fixedText(*top->usdPerMOutputTokens, 2);
    }
    summary.rows.push_back({b.header.label, b.header.model, oneStream, best, usd, notes});
    summary.refs.push_back(ref);
    refs.push_back(ref);
    ChartSeries s{b.header.label, {}, color++, false, true};
    for (const auto& l : b.levels)
      if (l.completed > 0) s.points.emplace_back(l.concurrency, l.outputThroughput);
    chart.series.push_back(std::move(s));
  }
  doc.table(std::move(grid));
  doc.table(std::move(summary));
  doc.paragraph("Aggregate output tok/s at each concurrency (vLLM bench serve's output_throughput); 1-stream is the "
                "per-stream decode rate at concurrency 1; $/M output tokens at the best aggregate and the sweep's "
                "price per hour.");
  doc.chart(std::move(chart), "charts/serving-throughput.svg");
  addServerCounts(doc, benches, refs);
}

}  // namespace crosslab::report
