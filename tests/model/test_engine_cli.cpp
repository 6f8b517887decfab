// The engine CLI as users and other tools run it: bad checkpoints give a non-zero exit and
// one line naming the problem (no crash); sharded checkpoints load; forward writes raw
// float32 [T, vocab]; sampling is reproducible by seed; model info reports the config.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include "tests/support/cli_runner.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "core/model/safetensors.h"
#include "core/model/safetensors_writer.h"
#include "tests/model/tiny_llama.h"

namespace fs = std::filesystem;

namespace {

using Result = crosslab::testing::CliResult;

Result cli(const QStringList& args) { return crosslab::testing::runCli(args); }

std::string readAll(const fs::path& p) {
  QFile f(QString::fromStdString(p.string()));
  return f.open(QIODevice::ReadOnly) ? f.readAll().toStdString() : std::string();
}

void writeAll(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// Replaces the header of a safetensors file by `header` (data kept).
void rewriteHeader(const fs::path& file, const std::string& header) {
  const std::string bytes = readAll(file);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | uint8_t(bytes[size_t(i)]);
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[size_t(i)] = char((uint64_t(header.size()) >> (8 * i)) & 0xFF);
  writeAll(file, out + header + bytes.substr(8 + n));
}

std::string headerOf(const fs::path& file) {
  const std::string bytes = readAll(file);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | uint8_t(bytes[size_t(i)]);
  return bytes.substr(8, n);
}

}  // namespace

class TestEngineCli : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString good_;

  // A fresh copy of the good checkpoint to break.
  fs::path copyGood(const QString& name) {
    const fs::path dst = tmp_.filePath(name).toStdString();
    fs::copy(good_.toStdString(), dst, fs::copy_options::recursive);
    return dst;
  }

 private slots:
  void initTestCase() {
    good_ = tmp_.filePath("good");
    crosslab::testing::TinyLlamaSpec spec;
    spec.kvHeads = 2;
    spec.vocab = 300;
    crosslab::testing::writeTinyLlama(good_.toStdString(), spec);
  }

  void modelInfoJson() {
    auto r = cli({"model", "info", good_, "--json"});
    QVERIFY2(r.code == 0, r.err.constData());
    const auto o = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(o.value("hidden_size").toInt(), 64);
    QCOMPARE(o.value("kv_heads").toInt(), 2);
    QCOMPARE(o.value("vocab_size").toInt(), 300);
    // 2 * 300 * 64 embeddings/head + 64 final norm + 2 layers of (q 4096 + k,v 2*2048 + o 4096 + mlp 3*6144 + norms 128)
    QCOMPARE(o.value("parameters").toInteger(), qint64(2 * 300 * 64 + 64 + 2 * (4096 + 4096 + 4096 + 3 * 6144 + 128)));
    QCOMPARE(o.value("files").toArray().first().toString(), QString("model.safetensors"));
  }

  void badInput_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("expected");
    QTest::newRow("truncated file") << "truncated" << "truncated";
    QTest::newRow("header length past EOF") << "pastEof" << "runs past the end of the file";
    QTest::newRow("overlapping offsets") << "overlap" << "overlaps";
    QTest::newRow("dtype/shape mismatch") << "dtypeShape" << "need";
    QTest::newRow("non-UTF-8 header") << "utf8" << "header is not valid UTF-8";
    QTest::newRow("missing shard") << "missingShard" << "missing shard 'model-00002-of-00002.safetensors'";
    QTest::newRow("config missing key") << "configKey" << "config.json: missing key 'num_attention_heads'";
    QTest::newRow("tensor shape vs config") << "shapeVsConfig" << "tensor 'model.embed_tokens.weight' has shape [300, 64], config expects [300, 32]";
    QTest::newRow("missing tensor") << "missingTensor" << "checkpoint lacks tensor 'lm_head.weight'";
    QTest::newRow("malformed tokenizer.json") << "tokenizer" << "tokenizer.json: not valid JSON";
    QTest::newRow("tokenizer not BPE") << "unigram" << "not byte-level BPE";
  }

  void badInput() {
    QFETCH(QString, name);
    QFETCH(QString, expected);
    const fs::path dir = copyGood(name);
    const fs::path st = dir / "model.safetensors";
    const std::string header = headerOf(st);
    if (name == "truncated") {
      const std::string bytes = readAll(st);
      writeAll(st, bytes.substr(0, bytes.size() - 100));
    } else if (name == "pastEof") {
      std::string bytes = readAll(st);
      const uint64_t n = 50'000'000;  // under the 100 MB limit, beyond the 72-byte file
      for (int i = 0; i < 8; ++i) bytes[size_t(i)] = char((n >> (8 * i)) & 0xFF);
      writeAll(st, bytes.substr(0, 72));
    } else if (name == "overlap" || name == "dtypeShape") {
      auto j = nlohmann::ordered_json::parse(header);
      if (name == "overlap") {
        auto& norm = j["model.norm.weight"]["data_offsets"];
        norm[0] = norm[0].get<uint64_t>() - 4;  // starts inside the previous tensor
        norm[1] = norm[1].get<uint64_t>() - 4;
      } else {
        j["model.norm.weight"]["dtype"] = "BF16";  // 64 BF16 = 128 bytes, offsets span 256
      }
      rewriteHeader(st, j.dump());
    } else if (name == "utf8") {
      std::string h = header;
      h.replace(h.find("model.norm.weight"), 1, "\xC0");  // an overlong lead byte
      rewriteHeader(st, h);
    } else if (name == "missingShard") {
      fs::rename(st, dir / "model-00001-of-00002.safetensors");
      nlohmann::json index = {{"metadata", {{"total_size", 1}}},
                              {"weight_map",
                               {{"model.embed_tokens.weight", "model-00001-of-00002.safetensors"},
                                {"lm_head.weight", "model-00002-of-00002.safetensors"}}}};
      writeAll(dir / "model.safetensors.index.json", index.dump());
    } else if (name == "configKey" || name == "shapeVsConfig" || name == "missingTensor") {
      auto c = nlohmann::json::parse(readAll(dir / "config.json"));
      if (name == "configKey") c.erase("num_attention_heads");
      if (name == "shapeVsConfig") c["hidden_size"] = 32, c["head_dim"] = 16;
      if (name == "missingTensor") c["tie_word_embeddings"] = false;
      writeAll(dir / "config.json", c.dump());
      if (name == "missingTensor") {  // drop lm_head by rewriting the file without it
        crosslab::model::SafetensorsFile f(st);
        std::vector<crosslab::model::TensorToWrite> keep;
        for (const auto& t : f.header().tensors)
          if (t.name != "lm_head.weight") keep.push_back({t.name, t.dtype, t.shape, f.view(t).data, t.bytes()});
        crosslab::model::writeSafetensors(dir / "tmp.safetensors", keep);
        fs::rename(dir / "tmp.safetensors", st);
      }
    } else if (name == "tokenizer") {
      writeAll(dir / "tokenizer.json", "{\"model\": {\"type\": \"BPE\", ");
    } else if (name == "unigram") {
      writeAll(dir / "tokenizer.json", R"({"model": {"type": "Unigram", "vocab": [["a", 0.0]]}})");
    }
    for (const QStringList& args : {QStringList{"model", "info", QString::fromStdString(dir.string())},
                                    QStringList{"forward", "--model", QString::fromStdString(dir.string()), "--ids",
                                                "[1, 2, 3]", "--dump-logits", tmp_.filePath(name + ".f32")}}) {
      if ((name == "tokenizer" || name == "unigram") && args[0] == "forward") continue;  // forward needs no tokenizer
      const auto r = cli(args);
      QVERIFY2(r.code == 1, qPrintable(args.join(' ') + " exit " + QString::number(r.code) + ": " + r.err));
      QCOMPARE(r.err.trimmed().count('\n'), 0);  // one line
      QVERIFY2(r.err.contains(expected.toUtf8()), r.err.constData());
      QVERIFY(!QFile::exists(tmp_.filePath(name + ".f32")));  // no half-written output
    }
  }

  void shardedMatchesSingleFile() {
    const fs::path dir = copyGood("sharded");
    crosslab::model::SafetensorsFile f(dir / "model.safetensors");
    std::vector<crosslab::model::TensorToWrite> a, b;
    nlohmann::json map = nlohmann::json::object();
    for (const auto& t : f.header().tensors) {
      const bool first = t.name.find("layers.1.") == std::string::npos && t.name != "lm_head.weight";
      (first ? a : b).push_back({t.name, t.dtype, t.shape, f.view(t).data, t.bytes()});
      map[t.name] = first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
    }
    crosslab::model::writeSafetensors(dir / "model-00001-of-00002.safetensors", a);
    crosslab::model::writeSafetensors(dir / "model-00002-of-00002.safetensors", b);
    writeAll(dir / "model.safetensors.index.json", nlohmann::json({{"metadata", {{"total_size", 0}}}, {"weight_map", map}}).dump());
    fs::remove(dir / "model.safetensors");

    const QString ids = "[5, 17, 99, 250, 3, 7]";
    auto r = cli({"forward", "--model", good_, "--ids", ids, "--dump-logits", tmp_.filePath("single.f32")});
    QVERIFY2(r.code == 0, r.err.constData());
    r = cli({"forward", "--model", QString::fromStdString(dir.string()), "--ids", ids, "--dump-logits", tmp_.filePath("sharded.f32")});
    QVERIFY2(r.code == 0, r.err.constData());
    QFile s(tmp_.filePath("single.f32")), h(tmp_.filePath("sharded.f32"));
    QVERIFY(s.open(QIODevice::ReadOnly) && h.open(QIODevice::ReadOnly));
    const QByteArray single = s.readAll();
    QCOMPARE(single.size(), 6 * 300 * 4);  // [T, vocab] float32
    QCOMPARE(h.readAll(), single);
    r = cli({"model", "info", QString::fromStdString(dir.string()), "--json"});
    QCOMPARE(QJsonDocument::fromJson(r.out).object().value("files").toArray().size(), 2);
  }

  void samplingIsSeeded() {
    auto gen = [&](const QString& seed) {
      auto r = cli({"generate", "--model", good_, "--prompt-ids", "[1, 2, 3]", "--max-tokens", "24", "--temperature",
                    "1.5", "--top-p", "0.98", "--seed", seed, "--ignore-eos", "--json"});
      return QJsonDocument::fromJson(r.out).object().value("ids").toArray();
    };
    const auto a = gen("11");
    QCOMPARE(a.size(), 24);
    QCOMPARE(gen("11"), a);
    QVERIFY(gen("12") != a);
  }

  void usageErrors() {
    auto r = cli({"forward", "--model", good_, "--ids", "not json", "--dump-logits", tmp_.filePath("x.f32")});
    QCOMPARE(r.code, 2);
    r = cli({"forward", "--model", good_, "--ids", "[1, 300]", "--dump-logits", tmp_.filePath("x.f32")});
    QCOMPARE(r.code, 1);
    QVERIFY(r.err.contains("outside the vocabulary"));
    r = cli({"generate", "--model", good_, "--prompt", "hi"});
    QCOMPARE(r.code, 1);
    QVERIFY(r.err.contains("no tokenizer.json"));
  }

  // A device this build or machine does not have: one short line naming the devices there
  // are (it was a libtorch stack trace of ~3,000 characters).
  void missingDeviceNamesTheDevicesThereAre() {
    for (const char* device : {"cuda:99", "mps", "warp-drive"}) {
      const auto r = cli({"forward", "--model", good_, "--ids", "[1, 2]", "--dump-logits", tmp_.filePath("d.f32"), "--device",
                          device});
      QCOMPARE(r.code, 1);
      QCOMPARE(r.err.trimmed().count('\n'), 0);
      QVERIFY2(r.err.contains("devices here: cpu"), r.err.constData());
      QVERIFY2(r.err.size() < 300, r.err.constData());
      QVERIFY(!QFile::exists(tmp_.filePath("d.f32")));
    }
  }
};

QTEST_GUILESS_MAIN(TestEngineCli)
#include "test_engine_cli.moc"
