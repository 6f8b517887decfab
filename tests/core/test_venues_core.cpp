// Qt-free venue logic: secret guard, meter and timeline, venue store, LLaMA-Factory
// configs, serving command lines, preflight and the fit estimate.
#include <QtTest>

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>

#include "core/store/lab_store.h"
#include "core/venues/llamafactory_config.h"
#include "core/venues/meter.h"
#include "core/util/sha256.h"
#include "core/venues/preflight.h"
#include "core/venues/secret_guard.h"
#include "core/venues/serve_command.h"
#include "core/venues/timeline_file.h"
#include "core/venues/venue_store.h"

using namespace crosslab::venues;
namespace fs = std::filesystem;

namespace {

void writeText(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

// A valid safetensors file: u64 header length, JSON header padded to 8, data.
void writeSafetensors(const fs::path& p, int floats) {
  std::string header = R"({"w":{"dtype":"F32","shape":[)" + std::to_string(floats) + R"(],"data_offsets":[0,)" +
                       std::to_string(floats * 4) + "]}}";
  while (header.size() % 8) header += ' ';
  std::string out(8, '\0');
  std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  out += header + std::string(static_cast<size_t>(floats) * 4, '\1');
  writeText(p, out);
}

nlohmann::json llama31_8b() {
  return {{"hidden_size", 4096}, {"intermediate_size", 14336}, {"num_hidden_layers", 32}, {"num_attention_heads", 32},
          {"num_key_value_heads", 8}, {"vocab_size", 128256}, {"tie_word_embeddings", false}};
}

nlohmann::json llama31_70b() {
  return {{"hidden_size", 8192}, {"intermediate_size", 28672}, {"num_hidden_layers", 80}, {"num_attention_heads", 64},
          {"num_key_value_heads", 8}, {"vocab_size", 128256}, {"tie_word_embeddings", false}};
}

bool hasFinding(const PreflightReport& r, Finding::Level level, const std::string& check, const std::string& text) {
  for (const auto& f : r.findings)
    if (f.level == level && f.check == check && f.message.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

class TestVenuesCore : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  fs::path dir(const char* name) { return fs::path(tmp_.path().toStdString()) / name; }

 private slots:
  void secretGuardCatchesPlantedToken() {
    const std::string token = "hf_abcdefghijklmnopqrstuvwxyz0123456789";
    ::setenv("CROSSLAB_TEST_HF_TOKEN", token.c_str(), 1);
    ::setenv("CROSSLAB_TEST_PLAIN", "not-a-secret-name-but-long", 1);
    const auto guard = SecretGuard::fromEnvironment();
    QCOMPARE(QString::fromStdString(*guard.findIn("python run.py --token " + token)), QString("CROSSLAB_TEST_HF_TOKEN"));
    QVERIFY(!guard.findIn("python run.py not-a-secret-name-but-long"));  // only secret-looking names
    bool caught = false;
    try {
      guard.checkText("export X=" + token, "the launch script");
    } catch (const SecretLeak& e) {
      caught = std::string(e.what()).find(token) == std::string::npos;  // names, never shows, the value
    }
    QVERIFY(caught);
    QCOMPARE(QString::fromStdString(guard.redact("a " + token + " b")), QString("a *** b"));
    ::unsetenv("CROSSLAB_TEST_HF_TOKEN");
  }

  void secretGuardScansFilesAcrossChunkBordersAndShapes() {
    SecretGuard g;
    g.addSecret("MY_API_KEY", "sekret-value-42-xyz");
    g.addSecret("SHORT", "abc");  // too short to be matched reliably: ignored
    QCOMPARE(g.size(), size_t{1});
    const fs::path folder = dir("upload");
    fs::create_directories(folder / "sub");
    writeText(folder / "ok.txt", "nothing here abc");
    g.checkPath(folder);  // clean
    // The secret straddles the 1 MiB read boundary.
    std::string big((1 << 20) - 7, 'x');
    big += "sekret-value-42-xyz";
    writeText(folder / "sub" / "big.bin", big);
    QVERIFY_THROWS_EXCEPTION(SecretLeak, g.checkPath(folder));
    fs::remove(folder / "sub" / "big.bin");
    writeText(folder / "id", "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n");  // a shape, not a known value
    QVERIFY_THROWS_EXCEPTION(SecretLeak, g.checkPath(folder));
  }

  void meterBillsTheMinimumThenElapsed() {
    const double start = *parseUtc("2026-11-29T10:00:00Z");
    auto m = meterReading(5.98, 60, start, start + 600);  // 10 min on a 60-min-minimum box
    QCOMPARE(m.billedHours, 1.0);
    QCOMPARE(m.usd, 5.98);
    m = meterReading(2.99, 1, start, start + 2 * 3600);
    QCOMPARE(m.usd, 5.98);
    QVERIFY(!parseUtc("yesterday"));
    QCOMPARE(QString::fromStdString(formatUtc(start)), QString("2026-11-29T10:00:00Z"));
  }

  void timelineSeparatesCalendarFromActiveTime() {
    // The seed lab: account 00:45:14, key ~22:30, provision 22:39:40, SSH ~22:42, first token ~22:47.
    std::vector<Milestone> t = {{"account created", *parseUtc("2026-01-01T00:45:14Z")},
                                {"key minted", *parseUtc("2026-01-01T22:30:00Z")},
                                {"provision request", *parseUtc("2026-01-01T22:39:40Z")},
                                {"ssh ready", *parseUtc("2026-01-01T22:42:00Z")},
                                {"first token", *parseUtc("2026-01-01T22:47:00Z")}};
    const auto s = summarizeTimeline(t);
    QCOMPARE(s.elapsedSeconds, 22 * 3600 + 1 * 60 + 46.0);
    QCOMPARE(s.activeSeconds, 17 * 60.0);
  }

  void venueStoreLadderBoxLifeAndLedger() {
    auto lab = crosslab::store::LabStore::create(dir("lab"), "t");
    VenueStore store(lab);
    VenueRow azure;
    azure.name = "azure/eastus/MI300X";
    azure.kind = "cloud";
    azure.provider = "azure";
    azure.accelerator = "MI300X";
    azure.availability = "no_quota";
    azure.pricePerHour = 48.0;
    azure.spotPricePerHour = 8.87;
    azure.quota = "MI300X family 0; spot 3 vCPU; regional cap 10 vs 96 minimum";
    store.recordLadder(azure);
    azure.availability = "capacity";
    store.recordLadder(azure);  // upsert, not a second row
    auto venues = store.venues();
    QCOMPARE(venues.size(), size_t{1});
    QCOMPARE(QString::fromStdString(venues[0].availability), QString("capacity"));
    QCOMPARE(*venues[0].spotPricePerHour, 8.87);
    QVERIFY(!venues[0].probedAt.empty());

    BoxRow b;
    b.venueId = store.ensureVenue("hotaisle", "cloud", "hotaisle");
    b.name = "box-1";
    b.host = "10.0.0.1";
    b.pricePerHour = 5.98;
    b.minMinutes = 60;
    b.provisionedAt = "2026-11-29T10:00:00Z";
    const auto id = store.addBox(b);
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, store.addBox(b));  // same active name
    store.markReady(id, "10.0.0.2");
    QCOMPARE(QString::fromStdString(store.activeBox("box-1")->host), QString("10.0.0.2"));
    const auto end = store.endBox(id, "deleted", *parseUtc("2026-11-29T12:30:00Z"));
    QVERIFY(end.endedNow);
    QCOMPARE(end.usd, 5.98 * 2.5);
    QVERIFY(!store.activeBox("box-1"));
    // Booked once, by the ledger (core/ledger): one life.deleted event.
    QCOMPARE(lab.db().scalarInt("SELECT count(*) FROM events WHERE type = 'life.deleted'"), std::int64_t{1});
    // A second end (the window after the shell deleted it) books nothing and says so.
    const auto again = store.endBox(id, "deleted", *parseUtc("2026-11-29T13:00:00Z"));
    QVERIFY(!again.endedNow);
    QCOMPARE(QString::fromStdString(again.endedAt), QString("2026-11-29T12:30:00Z"));
    QCOMPARE(again.usd, 5.98 * 2.5);
    QCOMPARE(lab.db().scalarInt("SELECT count(*) FROM events WHERE type = 'life.deleted'"), std::int64_t{1});
    QCOMPARE(lab.db().scalarInt("SELECT count(*) FROM timeline WHERE milestone = 'deleted' AND box_id = " +
                                std::to_string(id)),
             std::int64_t{1});
    store.addBox(b);  // a second life of the same name is fine once the first ended
    QCOMPARE(store.boxes(true).size(), size_t{2});

    // An unpriced box (one's own workstation) has an uptime all the same, at no cost.
    BoxRow own;
    own.venueId = store.ensureVenue("own", "ssh", "");
    own.name = "workstation";
    own.host = "10.0.0.9";
    own.provisionedAt = "2026-11-29T10:00:00Z";
    store.addBox(own);
    const auto m = store.meter(*store.activeBox("workstation"), *parseUtc("2026-11-29T13:00:00Z"));
    QCOMPARE(m.elapsedHours, 3.0);
    QCOMPARE(m.usd, 0.0);

    store.addMilestone("hotaisle", "provision request", "2026-11-29T10:00:00Z");
    store.addMilestone("hotaisle", "ssh ready", "2026-11-29T10:02:20Z");
    QCOMPARE(summarizeTimeline(store.timeline("hotaisle")).activeSeconds, 140.0);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, store.addMilestone("hotaisle", "x", "later"));
    QVERIFY(store.noteMilestoneOnce("hotaisle", "first login", "2026-11-29T10:00:00Z"));
    QVERIFY(!store.noteMilestoneOnce("hotaisle", "first login", "2026-11-29T10:00:00Z"));  // once per life
    QCOMPARE(store.timeline("hotaisle").size(), size_t{4});  // + the first life's "deleted"
  }

  void aLifeIsBookedOnceWhenTwoProcessesEndIt() {
    const auto dirPath = dir("twoenders");
    {
      auto lab = crosslab::store::LabStore::create(dirPath, "t");
      VenueStore store(lab);
      BoxRow b;
      b.venueId = store.ensureVenue("hotaisle", "cloud", "hotaisle");
      b.name = b.providerVm = "vm-9";
      b.pricePerHour = 2.99;
      b.minMinutes = 1;
      b.provider = "hotaisle";
      b.apiUrl = "http://127.0.0.1:1/api";
      b.team = "lab";
      b.apiKeyEnv = "MY_KEY";
      store.addBox(b);
    }
    // Two connections (the window and a shell) end the same life.
    auto a = crosslab::store::LabStore::open(dirPath);
    auto c = crosslab::store::LabStore::open(dirPath);
    VenueStore sa(a), sc(c);
    const auto box = sa.activeBox("vm-9");
    QVERIFY(box);
    QCOMPARE(QString::fromStdString(box->apiUrl), QString("http://127.0.0.1:1/api"));  // what ends it travels with it
    QCOMPARE(QString::fromStdString(box->apiKeyEnv), QString("MY_KEY"));
    QCOMPARE(QString::fromStdString(box->provider), QString("hotaisle"));
    const double t = *parseUtc(box->provisionedAt) + 600;
    const auto first = sc.endBox(box->id, "deleted", t);
    const auto second = sa.endBox(box->id, "deleted", t + 60);
    QVERIFY(first.endedNow && !second.endedNow);
    QCOMPARE(a.db().scalarInt("SELECT count(*) FROM events WHERE type = 'life.deleted'"), std::int64_t{1});
    QCOMPARE(second.usd, first.usd);
  }

  void probesUpdateTheLadderAndKeepTheirHistory() {
    auto lab = crosslab::store::LabStore::create(dir("probes"), "t");
    VenueStore store(lab);
    ProbeRow p;
    p.venue = "hotaisle";
    p.at = "2026-01-01T22:38:00Z";
    p.pricePerHour = 2.99;
    p.offersJson = R"([{"gpu_model":"MI300X","gpu_count":1,"price_per_hour":2.99}])";
    p.note = "1 offer(s)";
    store.recordProbe(p, "MI300X");
    p.at = "2026-01-02T10:00:00Z";
    p.availability = "not_available";
    p.pricePerHour.reset();
    p.note = "nothing on the shelf";
    store.recordProbe(p, "");
    const auto probes = store.probes("hotaisle");
    QCOMPARE(probes.size(), size_t{2});
    QCOMPARE(*probes[0].pricePerHour, 2.99);
    const auto rung = store.venues().at(0);
    QCOMPARE(QString::fromStdString(rung.availability), QString("not_available"));
    QCOMPARE(QString::fromStdString(rung.probedAt), QString("2026-01-02T10:00:00Z"));
    QCOMPARE(QString::fromStdString(rung.accelerator), QString("MI300X"));  // kept when a probe names none
  }

  void timelineFilesImportAllOrNothing() {
    const auto jsonl = parseTimelineFile(
        "# the seed lab\n{\"milestone\": \"account created\", \"at\": \"2026-01-01T00:45:14Z\"}\n"
        "{\"milestone\": \"key minted\", \"at\": \"2026-01-01T22:30:00Z\", \"note\": \"from the console\"}\n");
    QCOMPARE(jsonl.size(), size_t{2});
    QCOMPARE(QString::fromStdString(jsonl[1].note), QString("from the console"));
    QCOMPARE(QString::fromStdString(jsonl[1].source), QString("imported"));
    const auto text = parseTimelineFile("2026-01-01T22:39:40Z  provision request\n2026-01-01T22:42:00Z,ssh ready\n");
    QCOMPARE(text.size(), size_t{2});
    QCOMPARE(QString::fromStdString(text[1].name), QString("ssh ready"));
    const auto cli = parseTimelineFile(
        R"({"venue":"hotaisle","milestones":[{"milestone":"first token","at":"2026-01-01T22:47:00Z"}]})");
    QCOMPARE(cli.size(), size_t{1});
    try {
      parseTimelineFile("2026-01-01T22:39:40Z  provision request\nyesterday  key minted\n");
      QFAIL("a bad line was accepted");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(QString(e.what()).startsWith("line 2:"), e.what());
    }
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, parseTimelineFile("\n# nothing\n"));
    // Recorded all at once or not at all.
    auto lab = crosslab::store::LabStore::create(dir("tl"), "t");
    VenueStore store(lab);
    auto bad = jsonl;
    bad.push_back({"x", 0, "imported"});
    bad.back().name.clear();
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, store.addMilestones("hotaisle", bad));
    QCOMPARE(store.timeline("hotaisle").size(), size_t{0});
    store.addMilestones("hotaisle", jsonl);
    QCOMPARE(store.timeline("hotaisle").size(), size_t{2});
    QCOMPARE(QString::fromStdString(store.timeline("hotaisle")[0].source), QString("imported"));
  }

  void timelineSummaryStopsAtTheFirstToken() {
    std::vector<Milestone> t = {{"provision request", *parseUtc("2026-01-01T22:39:40Z")},
                                {"running", *parseUtc("2026-01-01T22:40:10Z")},
                                {"first token", *parseUtc("2026-01-01T22:47:00Z")},
                                {"deleted", *parseUtc("2026-01-01T23:30:00Z")}};
    const auto s = summarizeTimeline(t);
    QCOMPARE(s.elapsedSeconds, 7 * 60 + 20.0);
    QCOMPARE(s.milestones, 3);
  }

  void labSettingsPersist() {
    const auto p = dir("settings");
    {
      auto lab = crosslab::store::LabStore::create(p, "t");
      lab.setSetting("venues.team", "lab");
      lab.setSetting("venues.team", "other");
    }
    auto lab = crosslab::store::LabStore::open(p);
    QCOMPARE(QString::fromStdString(lab.setting("venues.team")), QString("other"));
    QCOMPARE(QString::fromStdString(lab.setting("venues.nothing")), QString());
  }

  void datasetInfoAndDeepSpeedJson() {
    auto info = llamaFactoryDatasetInfo("lab_sft", "train.json", "alpaca");
    QCOMPARE(QString::fromStdString(info["lab_sft"]["formatting"]), QString("alpaca"));
    QCOMPARE(QString::fromStdString(info["lab_sft"]["file_name"]), QString("train.json"));
    QCOMPARE(QString::fromStdString(info["lab_sft"]["columns"]["prompt"]), QString("instruction"));
    info = llamaFactoryDatasetInfo("lab_sft", "train.json", "sharegpt");
    QCOMPARE(QString::fromStdString(info["lab_sft"]["columns"]["messages"]), QString("conversations"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, llamaFactoryDatasetInfo("x", "x.json", "csv"));
    fs::create_directories(dir("fmt"));
    writeText(dir("fmt") / "a.json", R"([{"instruction": "q", "input": "", "output": "a"}])");
    writeText(dir("fmt") / "s.jsonl", "{\"conversations\": [{\"from\": \"human\", \"value\": \"q\"}]}\n");
    QCOMPARE(dataFormatting((dir("fmt") / "a.json").string()), std::string("alpaca"));
    QCOMPARE(dataFormatting((dir("fmt") / "s.jsonl").string()), std::string("sharegpt"));
    const auto z2 = deepspeedConfig(2, true);
    QCOMPARE(z2["zero_optimization"]["stage"].get<int>(), 2);
    QCOMPARE(QString::fromStdString(z2["zero_optimization"]["offload_optimizer"]["device"]), QString("cpu"));
    QVERIFY(!z2["zero_optimization"].contains("offload_param"));
    const auto z3 = deepspeedZero3(false);
    QCOMPARE(z3["zero_optimization"]["stage"].get<int>(), 3);
    QVERIFY(!z3["zero_optimization"].contains("offload_param"));
    QCOMPARE(z3["zero_allow_untested_optimizer"].get<bool>(), true);
    QCOMPARE(QString::fromStdString(z3["bf16"]["enabled"]), QString("auto"));
    const auto off = deepspeedZero3(true);
    QCOMPARE(QString::fromStdString(off["zero_optimization"]["offload_param"]["device"]), QString("cpu"));
    QCOMPARE(off["zero_optimization"]["offload_optimizer"]["pin_memory"].get<bool>(), true);
    QCOMPARE(off["zero_optimization"]["stage3_gather_16bit_weights_on_model_save"].get<bool>(), true);
    QCOMPARE(off["fp16"]["initial_scale_power"].get<int>(), 16);
  }

  void servingCommandLines() {
    ServeSpec s;
    s.model = "/models/llama-3.1-70b";
    s.adapters = {{"tuned", "/runs/1/adapter", adapterRankFromConfig(R"({"r": 16, "lora_alpha": 32})")}};
    s.tensorParallel = 2;
    s.maxModelLen = 8192;
    s.enforceEager = true;
    const std::string vllm = shellJoin(serveArgv(s));
    QCOMPARE(QString::fromStdString(vllm),
             QString("vllm serve /models/llama-3.1-70b --host 127.0.0.1 --port 8000 --tensor-parallel-size 2 "
                     "--max-model-len 8192 --enforce-eager --enable-lora --max-lora-rank 16 --max-loras 1 "
                     "--lora-modules tuned=/runs/1/adapter"));
    s.adapters[0].rank = 20;
    QCOMPARE(maxLoraRankFor(s.adapters), 32);  // rounded up to a rank vLLM supports
    s.engine = "vllm-docker";
    QVERIFY(shellJoin(serveArgv(s)).find("docker run --rm --network host") == 0);
    s.engine = "mlx";
    s.adapters[0].path = "/Users/me/adapter dir";
    QVERIFY(shellJoin(serveArgv(s)).find("--adapter-path '/Users/me/adapter dir'") != std::string::npos);
    // Our own server on the box: the real `serve` flags (--model, --lora NAME=DIR, --merge NAME).
    s.engine = "crosslab";
    s.adapters[0].path = "/runs/1/adapter";
    s.program = "/opt/crosslab/bin/crosslab-cli";
    QCOMPARE(QString::fromStdString(shellJoin(serveArgv(s))),
             QString("/opt/crosslab/bin/crosslab-cli serve --model /models/llama-3.1-70b --host 127.0.0.1 --port 8000 "
                     "--max-model-len 8192 --lora tuned=/runs/1/adapter"));
    s.mergeAdapter = true;
    QVERIFY(shellJoin(serveArgv(s)).find("--lora tuned=/runs/1/adapter --merge tuned") != std::string::npos);
    s.engine = "vllm";
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, serveArgv(s));  // vLLM serves a merged folder as a model
    s.mergeAdapter = false;
    s.engine = "tgi";
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, serveArgv(s));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, adapterRankFromConfig("{}"));
  }

  void preflightModelFolder() {
    const fs::path m = dir("model");
    fs::create_directories(m);
    writeText(m / "config.json", llama31_8b().dump());
    writeText(m / "tokenizer_config.json", "{}");
    writeSafetensors(m / "model-00001-of-00002.safetensors", 4);
    writeSafetensors(m / "model-00002-of-00002.safetensors", 6);
    writeText(m / "model.safetensors.index.json",
              R"({"metadata": {"total_size": 40}, "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})");
    PreflightReport r;
    checkModelFolder(m, r);
    QVERIFY(r.blocked());  // no tokenizer.json: the lab's lost relaunch
    QVERIFY(hasFinding(r, Finding::Level::Error, "model folder", "tokenizer.json"));
    writeText(m / "tokenizer.json", "{}");
    r = {};
    checkModelFolder(m, r);
    QVERIFY(!r.blocked());
    // A download killed early: the shard is shorter than its header says.
    fs::resize_file(m / "model-00002-of-00002.safetensors", fs::file_size(m / "model-00002-of-00002.safetensors") - 3);
    r = {};
    checkModelFolder(m, r);
    QVERIFY(hasFinding(r, Finding::Level::Error, "model folder", "cut short"));
    fs::remove(m / "model-00002-of-00002.safetensors");
    r = {};
    checkModelFolder(m, r);
    QVERIFY(hasFinding(r, Finding::Level::Error, "model folder", "missing shard model-00002"));
  }

  void preflightProvenance() {
    const fs::path m = dir("prov");
    fs::create_directories(m);
    writeText(m / "config.json", "{\"a\": 1}\n");
    writeText(m / "model.safetensors.index.json", "{}\n");
    const std::string good = crosslab::util::sha256File(m / "config.json");
    writeText(m / "ref.sha256", good + "  config.json\n" + std::string(64, '0') + "  model.safetensors.index.json\n" +
                                    std::string(64, '1') + "  model-00001-of-00001.safetensors\n");
    PreflightReport r;
    checkProvenance(m, m / "ref.sha256", false, r);
    QVERIFY(hasFinding(r, Finding::Level::Error, "provenance", "model.safetensors.index.json SHA-256"));
    QVERIFY(!hasFinding(r, Finding::Level::Error, "provenance", "config.json SHA-256"));
    QVERIFY(!hasFinding(r, Finding::Level::Error, "provenance", "model-00001"));  // shards only when asked
    r = {};
    checkProvenance(m, m / "ref.sha256", true, r);
    QVERIFY(hasFinding(r, Finding::Level::Error, "provenance", "model-00001-of-00001.safetensors is listed"));
  }

  void sha256KnownVector() {
    writeText(dir("abc.txt"), "abc");
    QCOMPARE(QString::fromStdString(crosslab::util::sha256File(dir("abc.txt"))),
             QString("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
  }

  void hfSnapshotResolution() {
    const fs::path hub = dir("hub");
    fs::create_directories(hub / "models--meta-llama--Llama-3.1-8B" / "refs");
    fs::create_directories(hub / "models--meta-llama--Llama-3.1-8B" / "snapshots" / "abc123");
    writeText(hub / "models--meta-llama--Llama-3.1-8B" / "refs" / "main", "abc123");
    const auto p = hfSnapshotPath(hub, "meta-llama/Llama-3.1-8B");
    QVERIFY(p);
    QCOMPARE(QString::fromStdString(p->filename().string()), QString("abc123"));
    QVERIFY(!hfSnapshotPath(hub, "other/model"));
  }

  void fitEstimate() {
    QVERIFY(std::abs(parameterCount(llama31_8b()) - 8'030'261'248LL) < 1'000'000);  // Llama 3.1 8B: 8.03B
    // r16 on all linear layers of Llama 3.1 8B: 42M trainable parameters (PEFT prints 41,943,040).
    QCOMPARE(loraParameterCount(llama31_8b(), 16), std::int64_t{41'943'040});
    crosslab::train::Recipe r;
    r.deepspeedStage = 3;
    PreflightReport rep;
    checkFit(llama31_70b(), r, 2, 192, 448, rep);  // 2x MI300X: ZeRO-3 with checkpointing fits
    QVERIFY(!rep.blocked());
    QVERIFY(hasFinding(rep, Finding::Level::Ok, "fit", "zero3 (the recipe's)"));
    rep = {};
    checkFit(llama31_70b(), r, 2, 80, 448, rep);  // 80 GB cards: 141 GB of bf16 weights cannot sit on one
    QVERIFY(hasFinding(rep, Finding::Level::Warning, "fit", "zero0: "));
    QVERIFY(hasFinding(rep, Finding::Level::Error, "fit", "zero3 (the recipe's)"));
    QVERIFY(hasFinding(rep, Finding::Level::Ok, "fit", "zero3_offload"));
    r.gradientCheckpointing = false;  // every layer's activations kept, 2 × 4096 tokens per micro-batch
    r.perDeviceTrainBatchSize = 2;
    rep = {};
    checkFit(llama31_70b(), r, 2, 192, 448, rep);
    QVERIFY(rep.blocked());  // the recipe's own strategy will not fit
  }

  // The reference lab (seeds/000): Llama 3.1 70B, LoRA r16 on all linear layers, cutoff
  // 4096, micro-batch 1, on 2× MI300X 192 GB. Plain ZeRO-3 OOMed with 120 MB free; ZeRO-3
  // with parameter and optimizer offload to the 448 GB of host RAM fit.
  void fitReproducesTheLabsZero3Oom() {
    crosslab::train::Recipe r;  // the lab's recipe is the default one
    r.deepspeedStage = 3;
    // Counted from what the model keeps, the OOM is reproduced when every layer's
    // activations at the cutoff are kept (no gradient checkpointing): ~134 GB of them.
    r.gradientCheckpointing = false;
    PreflightReport rep;
    checkFit(llama31_70b(), r, 2, 192, 448, rep);
    QVERIFY(rep.blocked());
    QVERIFY(hasFinding(rep, Finding::Level::Error, "fit", "zero3 (the recipe's)"));
    QVERIFY(hasFinding(rep, Finding::Level::Error, "fit", "will not fit (gradient checkpointing would save"));
    QVERIFY(hasFinding(rep, Finding::Level::Ok, "fit", "zero3_offload"));
    const auto est = estimateFit(llama31_70b(), r, 2);
    QCOMPARE(QString::fromStdString(est[1].strategy), QString("zero3"));
    QVERIFY2(est[1].perGpuGb > 192 && est[1].perGpuGb < 240, qPrintable(QString::number(est[1].perGpuGb)));
    QVERIFY2(est[2].perGpuGb < 0.9 * 192, qPrintable(QString::number(est[2].perGpuGb)));  // offload: fits, not tight
    QVERIFY(est[2].cpuRamGb > 141 && est[2].cpuRamGb < 448);  // bf16 weights + LoRA states in host RAM
    // The same with offload chosen: nothing blocks.
    r.deepspeedOffload = true;
    rep = {};
    checkFit(llama31_70b(), r, 2, 192, 448, rep);
    QVERIFY(!rep.blocked());
    QVERIFY(hasFinding(rep, Finding::Level::Ok, "fit", "zero3_offload (the recipe's)"));
    // With LLaMA-Factory's default (checkpointing on) plain ZeRO-3 needs under half the card:
    // the estimate does not invent the missing ~100 GB.
    r.gradientCheckpointing = true;
    QVERIFY(estimateFit(llama31_70b(), r, 2)[1].perGpuGb < 100);
    // Within a few hundred MB of the limit → tight (warning), not fine.
    r.gradientCheckpointing = false;
    r.deepspeedOffload = false;
    const double need = estimateFit(llama31_70b(), r, 2)[1].perGpuGb;
    rep = {};
    checkFit(llama31_70b(), r, 2, need + 0.12, 448, rep);  // the lab's 120 MB to spare
    QVERIFY(!rep.blocked());
    QVERIFY(hasFinding(rep, Finding::Level::Warning, "fit", "zero3 (the recipe's)"));
    QVERIFY(hasFinding(rep, Finding::Level::Warning, "fit", "tight: under 0.1 GB left"));
  }

  void diskCheck() {
    const auto avail = parseDfAvailable("Filesystem 1024-blocks Used Available Capacity Mounted on\n/dev/nvme0n1 100 50 1000 5% /\n");
    QCOMPARE(*avail, std::uint64_t{1024000});
    QVERIFY(!parseDfAvailable("garbage"));
    PreflightReport r;
    checkDisk(1'000'000, 2'000'000, r);
    QVERIFY(r.blocked());
  }
};

QTEST_GUILESS_MAIN(TestVenuesCore)
#include "test_venues_core.moc"
