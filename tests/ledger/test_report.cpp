// The report from a fixture lab whose expected tables are written by hand here: training,
// serving, quality, the ledger with its staging split, the appendix of row ids, redaction
// of planted hosts, users, keys and secrets in every format, the portability verdict on
// two replication groups (one at parity, one that differs), exact McNemar, and the seed
// lab's own ledger (tests/fixtures/seed_lab) reproducing the published ratios.
#include <QtTest>

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>

#include "core/bench/bench_store.h"
#include "core/eval/eval_store.h"
#include "core/ledger/friction_log.h"
#include "core/ledger/lab_ledger.h"
#include "core/ledger/life_recorder.h"
#include "core/report/portability.h"
#include "core/report/report_builder.h"
#include "core/store/lab_store.h"
#include "core/store/run_store.h"
#include "core/venues/meter.h"
#include "core/venues/venue_store.h"
#include "tests/support/cli_runner.h"

using namespace crosslab;
namespace fs = std::filesystem;

namespace {

const std::string kPlanted = "plantedSECRETvalue-42";
const std::string kToken = "hf_PLANTEDtokenPLANTEDtokenPLANTED9876";
const char* kRecipe1 = R"({"lora_rank":16,"lora_alpha":32,"learning_rate":0.0001,"num_train_epochs":3.0,)"
                       R"("per_device_train_batch_size":1,"gradient_accumulation_steps":8,"cutoff_len":4096,)"
                       R"("model_name_or_path":"/models/spark/llama","dataset":"qa","output_dir":"/runs/a"})";
// The same recipe on two GPUs: micro-batch 1 × accumulation 4 × 2 devices = effective batch 8.
const char* kRecipe2 = R"({"lora_rank":16,"lora_alpha":32,"learning_rate":0.0001,"num_train_epochs":3.0,)"
                       R"("per_device_train_batch_size":1,"gradient_accumulation_steps":4,"devices":2,"cutoff_len":4096,)"
                       R"("model_name_or_path":"/home/carol/models/llama","dataset":"qa","output_dir":"/runs/b"})";

double at(const char* iso) { return *venues::parseUtc(iso); }

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }
#define EXPECT_IN(text, what) QVERIFY2(has(text, what), qPrintable(QString::fromStdString(std::string("missing: ") + what)))

std::int64_t addRun(store::LabStore& lab, const std::string& name, const char* recipe, const char* start,
                    const char* end, const std::string& weights, double firstLoss, double lastLoss) {
  store::NewRun nr;
  nr.name = name;
  nr.totalSteps = 10;
  nr.recipeJson = recipe;
  const auto id = lab.runs().requestCreate(nr);
  lab.runs().requestStatus(id, crosslab::train::RunStatus::Running);
  lab.runs().requestStatus(id, crosslab::train::RunStatus::Finished);
  std::vector<store::MetricRow> rows;
  for (int s = 1; s <= 10; ++s) {
    store::MetricRow m;
    m.step = s;
    m.loss = firstLoss + (lastLoss - firstLoss) * (s - 1) / 9.0;
    rows.push_back(m);
  }
  lab.runs().appendMetrics(id, rows);
  auto st = lab.db().prepare("UPDATE runs SET started_at = ?, ended_at = ?, weights_sha256 = ?, data_sha256 = ? WHERE id = ?");
  st.bind(1, start).bind(2, end).bind(3, weights).bind(4, std::string(64, 'd')).bind(5, id).run();
  return id;
}

// 30 answers of `model`: format all valid; gate accepts the questions in `accepted`;
// three quotes each, `fabricated` of them fabricated.
void addAnswers(eval::EvalStore& es, const std::string& model, const std::set<int>& accepted, int fabricated) {
  std::vector<eval::OutputRecord> outs;
  for (int q = 1; q <= 30; ++q) outs.push_back({"q" + std::to_string(q), model, "{\"answer\": \"" + model + "\"}"});
  const auto ids = es.importOutputs(std::string(64, 'e'), outs, "fixture");
  for (size_t i = 0; i < ids.size(); ++i) {
    const int q = static_cast<int>(i) + 1;
    es.setVerdict(ids[i], "format", "accept", std::nullopt, "{}");
    es.setVerdict(ids[i], "gate:strict", accepted.count(q) ? "accept" : "reject", std::nullopt, "{}");
    nlohmann::json quotes = nlohmann::json::array();
    for (int k = 0; k < 3; ++k)
      quotes.push_back({{"quote", "x"}, {"result", (q <= fabricated && k == 0) ? "fabricated" : "exact"}});
    es.setVerdict(ids[i], "quotes", q <= fabricated ? "reject" : "accept", std::nullopt, quotes.dump());
  }
}

std::set<int> range(int from, int to) {
  std::set<int> s;
  for (int i = from; i <= to; ++i) s.insert(i);
  return s;
}

}  // namespace

class TestReport : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

  // The fixture lab: a rented box (planted host, user, key) and a Spark on an SSH
  // address, four training runs in two replication groups, their answers, two sweeps,
  // friction, spend and a credit.
  void buildFixture(store::LabStore& lab) {
    venues::VenueStore vs(lab);
    venues::BoxRow b;
    b.venueId = vs.ensureVenue("hotaisle", "cloud", "hotaisle");
    b.name = "mi300x-carol";
    b.host = "203.0.113.9";
    b.user = "carol";
    b.keyFile = "/home/carol/.ssh/id_ed25519";
    b.gpuModel = "MI300X";
    b.gpuCount = 1;
    b.pricePerHour = 6.0;
    b.minMinutes = 1;
    b.provisionedAt = "2026-02-01T10:00:00Z";
    const auto rented = vs.addBox(b);
    venues::BoxRow s;
    s.venueId = vs.ensureVenue("dgx-spark", "ssh");
    s.name = "spark-1";
    s.host = "192.0.2.44";
    s.user = "carol";
    s.gpuModel = "GB10";
    s.gpuCount = 1;
    s.provisionedAt = "2026-02-03T00:00:00Z";  // added after the rented box: BOX-2
    const auto spark = vs.addBox(s);
    vs.addMilestone("hotaisle", "provision request", "2026-02-01T10:00:00Z");
    vs.addMilestone("hotaisle", "ssh ready", "2026-02-01T10:02:20Z");

    const auto r1 = addRun(lab, "8b-spark", kRecipe1, "2026-01-21T10:00:00Z", "2026-01-21T10:35:00Z",
                           std::string(64, 'a'), 0.34, 0.22);
    const auto r2 = addRun(lab, "8b-amd", kRecipe2, "2026-02-01T10:10:00Z", "2026-02-01T10:16:00Z",
                           std::string(64, 'a'), 0.56, 0.225);
    const auto r3 = addRun(lab, "70b-spark", kRecipe1, "2026-01-22T10:00:00Z", "2026-01-22T12:00:00Z",
                           std::string(64, 'b'), 0.5, 0.12);
    const auto r4 = addRun(lab, "70b-amd", kRecipe2, "2026-02-02T10:00:00Z", "2026-02-02T11:29:12Z",
                           std::string(64, 'b'), 0.512, 0.118);
    lab.db().exec("UPDATE runs SET box_id = " + std::to_string(spark) + " WHERE id IN (" + std::to_string(r1) + "," +
                  std::to_string(r3) + ")");
    lab.db().exec("UPDATE runs SET box_id = " + std::to_string(rented) + " WHERE id = " + std::to_string(r4));
    ledger::LifeRecorder rec(lab);
    const auto w = rec.workStarted(rented, ledger::WorkKind::Train, "8b-amd", at("2026-02-01T10:10:00Z"), {r2, {}});
    rec.workEnded(w, ledger::WorkStatus::Finished, at("2026-02-01T10:16:00Z"));
    rec.transfer(rented, ledger::Direction::Push, "carol@203.0.113.9:/home/carol/models", 1'000'000'000,
                 at("2026-02-01T10:03:00Z"), at("2026-02-01T10:05:00Z"));
    const auto sweep = rec.workStarted(rented, ledger::WorkKind::Bench, "sweep", at("2026-02-01T10:20:00Z"));
    rec.workEnded(sweep, ledger::WorkStatus::Finished, at("2026-02-01T10:22:00Z"));
    vs.endBox(rented, "deleted", at("2026-02-01T10:30:00Z"));

    eval::EvalStore es(lab);
    // Group 1: 8/30 vs 10/30, discordant 2 and 4: parity. Group 2: 8/30 vs 25/30: differs.
    std::set<int> a8 = range(1, 8), b8 = range(1, 6);
    b8.insert({9, 10, 11, 12});
    addAnswers(es, "8b-spark", a8, 0);
    addAnswers(es, "8b-amd", b8, 1);
    addAnswers(es, "70b-spark", range(1, 8), 0);
    addAnswers(es, "70b-amd", range(1, 25), 0);

    bench::BenchStore bs(lab);
    const auto b1 = bs.begin({"BOX-1 vllm merged", "http://203.0.113.9:8000", "llama-70b", "completions", "bench", 6.0});
    for (auto [c, agg, per, usd] : std::vector<std::tuple<int, double, double, double>>{
             {1, 25.7, 25.7, 64.85}, {8, 150.0, 18.75, 11.11}, {64, 1182.0, 18.5, 1.41}}) {
      bench::LevelResult l;
      l.context.maxConcurrency = c;
      l.completed = c;
      l.outputThroughput = agg;
      l.perStreamTokS = per;
      l.usdPerMOutputTokens = usd;
      // The server's own count (its /metrics): at 64 another client's 40 tokens were counted too.
      l.totalOutputTokens = 100 * c;
      bench::ServerReading server;
      server.generatedTokens = 100.0 * c + (c == 64 ? 40 : 0);
      if (c > 1) {
        server.decodeSteps = 100;
        server.decodeRows = 100.0 * c * 0.9;
        server.decodeStepSeconds = 0.0125 * c;
      }
      l.server = server;
      bs.saveLevel(b1, l);
    }
    bs.end(b1);
    const auto b2 = bs.begin({"spark runtime LoRA eager", "http://192.0.2.44:8000", "llama-70b", "completions", "bench", {}});
    // c=8 stopped live on its collapse: nothing completed, so no aggregate (kept for its collapse).
    for (auto [c, done, agg, per, collapse] : std::vector<std::tuple<int, int, double, double, std::string>>{
             {1, 2, 3.2, 3.2, ""}, {4, 8, 12.1, 3.0, ""}, {8, 0, 0.0, 0.0, "per-stream 0.7 tok/s < 0.25 x 1-stream"}}) {
      bench::LevelResult l;
      l.context.maxConcurrency = c;
      l.completed = done;  // completing nothing and no collapse would be no measurement (BenchStore drops it)
      l.failed = 2 * c - done;
      l.outputThroughput = agg;
      l.perStreamTokS = per;
      l.collapse = collapse;
      bs.saveLevel(b2, l);
    }
    bs.end(b2);

    ledger::FrictionLog log(lab);
    ledger::FrictionEntry f;
    f.title = "stale apt index on a fresh VM blocked python3-venv";
    f.category = ledger::FrictionCategory::VenueHygiene;
    f.minutes = 3;
    f.fix = "apt-get update on carol@203.0.113.9 with " + kToken;
    f.boxId = rented;
    f.at = "2026-02-01T10:06:00Z";
    log.requestAdd(f);
    ledger::FrictionEntry g;
    g.title = "CUDA graphs + runtime LoRA hang";
    g.category = ledger::FrictionCategory::StackLag;
    g.cause = "key " + kPlanted + " in the env";
    g.ecosystemSpecific = true;
    g.boxId = spark;
    g.at = "2026-01-22T13:00:00Z";
    log.requestAdd(g);
    ledger::requestAddOtherSpend(lab, "api", 3.0, "judge APIs", "2026-02-03T00:00:00Z");
    ledger::requestAddCredit(lab, 100.0, "vendor credit", "2026-02-01T00:00:00Z");
  }

  venues::SecretGuard guard() {
    venues::SecretGuard g;
    g.addSecret("CROSSLAB_TEST_SECRET", kPlanted);
    return g;
  }

 private slots:
  void mcnemarIsExact() {
    QCOMPARE(report::mcnemarExactP(0, 0), 1.0);
    QCOMPARE(report::mcnemarExactP(0, 10), 2.0 / 1024);
    QCOMPARE(report::mcnemarExactP(3, 5), 186.0 / 256);
    QCOMPARE(report::mcnemarExactP(2, 4), 44.0 / 64);
    QCOMPARE(report::mcnemarExactP(5, 5), 1.0);
    const auto tail = report::lastTenthLoss({{1, 0.5}, {2, 0.4}, {3, 0.3}, {4, 0.3}, {5, 0.3}, {6, 0.3}, {7, 0.3},
                                             {8, 0.3}, {9, 0.24}, {10, 0.22}});
    QCOMPARE(tail->points, 1);  // the last 10% of 10 steps: step 10
    QCOMPARE(tail->mean, 0.22);
  }

  void reportFromAFixtureLab() {
    const fs::path dir = tmp_.path().toStdString() + "/fixture";
    auto lab = store::LabStore::create(dir, "fixture");
    buildFixture(lab);
    report::ReportOptions o;
    o.now = at("2026-02-05T00:00:00Z");
    const auto files = report::writeReport(lab, dir / "reports", {report::Format::Markdown, report::Format::Html},
                                           guard(), o);
    QCOMPARE(files.size(), size_t{2 + 4});  // report.md + 4 charts, report.html
    const std::string md = read(dir / "reports" / "report.md");
    const std::string html = read(dir / "reports" / "report.html");

    // Training, by hand: wall = end − start; cost at the box's price; loss first → last.
    EXPECT_IN(md, "| 8b-spark | GB10 (BOX-2) | 35.0 min | $0 marginal | 0.340 → 0.220 | 10 / 10 | finished | [T1](#ref-T1) |");
    EXPECT_IN(md, "| 8b-amd | MI300X (BOX-1) | 6.0 min | $0.60 | 0.560 → 0.225 | 10 / 10 | finished | [T2](#ref-T2) |");
    EXPECT_IN(md, "| 70b-amd | MI300X (BOX-1) | 89.2 min | $8.92 | 0.512 → 0.118 | 10 / 10 | finished | [T4](#ref-T4) |");
    // Serving: concurrency grid and the summary.
    EXPECT_IN(md, "| Venue / method | conc 1 | conc 4 | conc 8 | conc 64 | rows |");
    EXPECT_IN(md, "| BOX-1 vllm merged | 25.7 |  | 150.0 agg | 1182.0 agg | [S1](#ref-S1) |");
    EXPECT_IN(md, "| spark runtime LoRA eager | 3.2 | 12.1 agg | collapse |  | [S2](#ref-S2) |");  // not "0.0 agg"
    EXPECT_IN(md, "| BOX-1 vllm merged | llama-70b | 25.7 | 1182.0 (c=64) | $1.41 |  | [S1](#ref-S1) |");
    EXPECT_IN(md, "| spark runtime LoRA eager | llama-70b | 3.2 | 12.1 (c=4) | — | per-stream 0.7 tok/s < 0.25 x 1-stream | [S2](#ref-S2) |");
    // The server's count beside the client's, level by level; the sweep without readings is named.
    EXPECT_IN(md, "| Venue / method | Concurrency | Output tokens (client) | Generated (server) | Agree | Decode rows per step | ms per step | rows |");
    EXPECT_IN(md, "| BOX-1 vllm merged | 1 | 100 | 100 | yes | — | — | [S1](#ref-S1) |");
    EXPECT_IN(md, "| BOX-1 vllm merged | 8 | 800 | 800 | yes | 7.2 | 1.00 | [S1](#ref-S1) |");
    EXPECT_IN(md, "| BOX-1 vllm merged | 64 | 6400 | 6440 | server +40 | 57.6 | 8.00 | [S1](#ref-S1) |");
    EXPECT_IN(md, "3 level(s) have no server reading.");
    QVERIFY(!has(md, "| spark runtime LoRA eager | 1 |"));
    // Quality: format, the gate, quote fidelity with fabricated counts.
    EXPECT_IN(md, "| Model | Format valid | Accepted (gate:strict) | Quote fidelity (mechanical) | rows |");
    EXPECT_IN(md, "| 8b-amd | 100% (30/30) | 33% (10/30) | 99% of quotes in context (1 fabricated of 90) | [Q2](#ref-Q2) |");
    EXPECT_IN(md, "| 70b-amd | 100% (30/30) | 83% (25/30) | 100% of quotes in context (0 fabricated of 90) | [Q4](#ref-Q4) |");
    // Ledger: $6/h = $0.10 a minute; 30 minutes: staging 10 + 4, compute 6 + 2, idle 8.
    EXPECT_IN(md, "| BOX-1, life 1 | MI300X @ $6.00/h, 1 min minimum | 2026-02-01T10:00:00Z | 30.0 min | $3.00 | $0.80 | $1.40 | $0.00 | $0.80 | $1.40 | 2:1 | [C1](#ref-C1) |");
    EXPECT_IN(md, "GPU rental $3.00 (from $100.00 of credits), plus $3.00 of other spend");
    EXPECT_IN(md, "| BOX-1, life 1 | push | BOX-1:~/models | 1.00 GB | 2.0 min | 8.3 MB/s |");
    // Friction: the ecosystem flag as a query.
    EXPECT_IN(md, "1 of 2 entries are marked specific to a venue's ecosystem.");
    // Ladder and timeline.
    EXPECT_IN(md, "hotaisle: 2.3 min from first to last milestone; active time 2.3 min");
    // The appendix names the rows behind each row.
    EXPECT_IN(md, "| <a id=\"ref-T2\"></a>T2 | training: 8b-amd | runs.id=2; metrics run_id=2 steps 1–10 (10 rows); boxes.id=1 (price) |");
    EXPECT_IN(md, "| <a id=\"ref-C1\"></a>C1 | ledger: BOX-1, life 1 | boxes.id=1; box_work.id=1,2; box_transfers.id=1 |");
    EXPECT_IN(md, "ref-S2\"></a>S2 | serving: spark runtime LoRA eager | benchmarks.id=2; benchmark_levels benchmark_id=2 (3 levels) |");

    // Portability: group 1 at parity, group 2 differs; the non-comparability note stays with gates.
    EXPECT_IN(md, "Verdict: Parity on every instrument measured: format 30/30 (8b-spark) vs 30/30 (8b-amd), exact McNemar "
                  "p = 1.000; gate:strict 8/30 (8b-spark) vs 10/30 (8b-amd), exact McNemar p = 0.688. With 30 paired "
                  "questions this shows no difference the test can detect");
    EXPECT_IN(md, "Fabricated quotes: 0 of 90 (8b-spark) vs 1 of 90 (8b-amd).");
    EXPECT_IN(md, "Verdict: Differs on gate:strict 8/30 (70b-spark) vs 25/30 (70b-amd), exact McNemar p < 0.001. No "
                  "difference detected on format 30/30 (70b-spark) vs 30/30 (70b-amd), exact McNemar p = 1.000.");
    EXPECT_IN(md, "| gate:strict | 70b-spark 8/30 | 70b-amd 25/30 | 30 | 0 / 17 | 0.0000 |");
    EXPECT_IN(md, "![Group 1: loss curves overlaid](charts/group-1-loss.svg)");
    for (const char* chart : {"training-loss.svg", "serving-throughput.svg", "group-1-loss.svg", "group-2-loss.svg"})
      QVERIFY2(has(read(dir / "reports" / "charts" / chart), "<polyline class=\"series\""), chart);

    // The HTML carries the same tables and its charts inline; it fetches nothing.
    EXPECT_IN(html, "<td>8b-amd</td><td>MI300X (BOX-1)</td><td>6.0 min</td><td>$0.60</td>");
    size_t svgs = 0;
    for (size_t pos = 0; (pos = html.find("<svg ", pos)) != std::string::npos; ++pos) ++svgs;
    QCOMPARE(svgs, size_t{4});
    EXPECT_IN(html, "default-src 'none'");
    QVERIFY(!has(html, "<script") && !has(html, "src=\"http") && !has(html, "href=\"http"));

    // Redaction by default, in every format: no host, user, key path, box name or secret.
    for (const auto& file : files) {
      const std::string text = read(file);
      for (const std::string& leaked : {std::string("203.0.113.9"), std::string("192.0.2.44"), std::string("carol"),
                                        std::string("id_ed25519"), std::string("mi300x-carol"), std::string("spark-1"),
                                        kPlanted, kToken})
        QVERIFY2(!has(text, leaked), qPrintable(QString::fromStdString(file.string() + " leaks " + leaked)));
    }
    EXPECT_IN(md, "apt-get update on BOX-1 with ***");

    // --no-redact is explicit: names and hosts come back, secrets never do.
    o.redact = false;
    report::writeReport(lab, dir / "plain", {report::Format::Markdown}, guard(), o);
    const std::string plain = read(dir / "plain" / "report.md");
    EXPECT_IN(plain, "MI300X (mi300x-carol)");
    EXPECT_IN(plain, "carol@203.0.113.9");
    QVERIFY(!has(plain, kPlanted) && !has(plain, kToken));
  }

  void theSeedLabsOwnLedger() {
    const QString lab = QString::fromStdString(tmp_.path().toStdString() + "/seed");
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("CROSSLAB_HOME", tmp_.filePath("home"));
    crosslab::testing::CliOptions options;
    options.env = env;
    auto r = crosslab::testing::runProgram(
        "bash", {CROSSLAB_TESTS_DIR "/fixtures/seed_lab/build.sh", crosslab::testing::cliPath(), lab}, options);
    QVERIFY2(r.code == 0, r.err.constData());
    r = crosslab::testing::runCli({"report", "--lab", lab, "--out", lab + "/reports", "--format", "md"}, options);
    QVERIFY2(r.code == 0, r.err.constData());
    const std::string md = read(lab.toStdString() + "/reports/report.md");
    // The published table: compute ~$0.44 / staging + debug ~$1.85 (4:1), ~$0.10 / ~$3.40
    // (34:1), ~$9 / ~$4 (0.4:1), ~$0.80 / ~$1.50 (2:1).
    EXPECT_IN(md, "| BOX-1, life 1 | MI300X @ $2.99/h, 1 min minimum | 2026-01-04T22:39:40Z | 47.0 min | $2.34 | $0.44 | $1.85 | $0.00 | $0.05 | $1.85 | 4:1 |");
    EXPECT_IN(md, "| BOX-1, life 2 | MI300X @ $2.99/h, 1 min minimum | 2026-01-05T14:00:00Z | 71.0 min | $3.54 | $0.10 | $3.40 | $0.00 | $0.04 | $3.40 | 34:1 |");
    EXPECT_IN(md, "| BOX-2, life 1 | 2x MI300X @ $5.98/h, 60 min minimum | 2026-01-06T09:00:00Z | 130.0 min | $12.96 | $8.89 | $1.27 | $2.73 | $0.07 | $4.00 | 0.4:1 |");
    EXPECT_IN(md, "| BOX-1, life 3 | MI300X @ $2.99/h, 1 min minimum | 2026-01-07T10:00:00Z | 47.0 min | $2.34 | $0.80 | $1.50 | $0.00 | $0.04 | $1.50 | 2:1 |");
    EXPECT_IN(md, "GPU rental $21.18 (from $100.00 of credits), plus $3.00 of other spend");
    // The transfer path prices the staging: DC pulls at ~106–220 MB/s, home rsync ~35 MB/s.
    EXPECT_IN(md, "| BOX-2, life 1 | pull | llama-3.1-70b weights (public mirror, DC speed) | 141.00 GB | 10.7 min | 220.0 MB/s |");
    EXPECT_IN(md, "| BOX-1, life 3 | push | 70b adapter | 1.65 GB | 48.0 s | 34.4 MB/s |");
    // "Nothing ROCm-specific broke": the one ecosystem-specific entry is the Spark's.
    EXPECT_IN(md, "1 of 7 entries are marked specific to a venue's ecosystem.");
  }
};

QTEST_GUILESS_MAIN(TestReport)
#include "test_report.moc"
