// The LoRA recipe: lab defaults, step arithmetic, JSON and LLaMA-Factory YAML round trips,
// LLaMA-Factory's defaults for absent keys, unknown keys kept and reported, bad values.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

#include "core/train/recipe.h"

using crosslab::train::Recipe;
namespace tr = crosslab::train;

namespace {
// LLaMA-Factory's examples/train_lora/llama3_lora_sft.yaml, as a user would have it.
const char* kLlamaFactoryExample = R"(### model
model_name_or_path: meta-llama/Meta-Llama-3-8B-Instruct
trust_remote_code: true

### method
stage: sft
do_train: true
finetuning_type: lora
lora_rank: 8
lora_target: all

### dataset
dataset: identity,alpaca_en_demo
template: llama3
cutoff_len: 2048
max_samples: 1000
overwrite_cache: true
preprocessing_num_workers: 16

### output
output_dir: saves/llama3-8b/lora/sft
logging_steps: 10
save_steps: 500
plot_loss: true
overwrite_output_dir: true

### train
per_device_train_batch_size: 1
gradient_accumulation_steps: 8
learning_rate: 1.0e-4
num_train_epochs: 3.0
lr_scheduler_type: cosine
warmup_ratio: 0.1
bf16: true
ddp_timeout: 180000000
)";
}  // namespace

class TestRecipe : public QObject {
  Q_OBJECT
 private slots:
  void labDefaultsGive111Steps() {
    const Recipe r = Recipe::labDefaults();
    QCOMPARE(r.loraRank, 16);
    QCOMPARE(r.loraAlpha, 32);
    QCOMPARE(r.loraTargets.size(), size_t(7));
    QCOMPARE(r.learningRate, 1e-4);
    QCOMPARE(r.effectiveBatch(), 8);
    QCOMPARE(r.cutoffLen, 4096);
    QCOMPARE(r.dtype, std::string("bf16"));
    QCOMPARE(r.stepsPerEpoch(290), 37);
    QCOMPARE(r.totalSteps(290), 111);
    QCOMPARE(r.loraScaling(), 2.0);
    QVERIFY(r.validate().empty());
  }

  void stepArithmetic_data() {
    QTest::addColumn<int>("examples");
    QTest::addColumn<int>("micro");
    QTest::addColumn<int>("accum");
    QTest::addColumn<int>("devices");
    QTest::addColumn<double>("epochs");
    QTest::addColumn<int>("perEpoch");
    QTest::addColumn<int>("total");
    QTest::newRow("lab 290/8/3") << 290 << 1 << 8 << 1 << 3.0 << 37 << 111;
    QTest::newRow("exact multiple") << 288 << 1 << 8 << 1 << 3.0 << 36 << 108;
    QTest::newRow("one over") << 289 << 1 << 8 << 1 << 3.0 << 37 << 111;
    QTest::newRow("micro x accum") << 290 << 2 << 4 << 1 << 3.0 << 37 << 111;
    QTest::newRow("two devices") << 290 << 1 << 4 << 2 << 3.0 << 37 << 111;
    QTest::newRow("effective 16") << 290 << 2 << 4 << 2 << 3.0 << 19 << 57;
    QTest::newRow("fewer than a batch") << 5 << 1 << 8 << 1 << 2.0 << 1 << 2;
    QTest::newRow("fractional epochs") << 290 << 1 << 8 << 1 << 2.5 << 37 << 93;
  }
  void stepArithmetic() {
    QFETCH(int, examples);
    QFETCH(int, micro);
    QFETCH(int, accum);
    QFETCH(int, devices);
    QFETCH(double, epochs);
    QFETCH(int, perEpoch);
    QFETCH(int, total);
    Recipe r;
    r.perDeviceTrainBatchSize = micro;
    r.gradientAccumulationSteps = accum;
    r.devices = devices;
    r.numTrainEpochs = epochs;
    QCOMPARE(r.stepsPerEpoch(examples), perEpoch);
    QCOMPARE(r.totalSteps(examples), total);
    r.maxSteps = 5;
    QCOMPARE(r.totalSteps(examples), 5);
    r.maxSteps = -1;
    r.warmupRatio = 0.1;
    QCOMPARE(r.warmupSteps(examples), static_cast<std::int64_t>(std::ceil(0.1 * total)));
  }

  void jsonRoundTrip() {
    Recipe r = Recipe::labDefaults();
    r.modelPath = "models/llama-3.1-8b";
    r.dataset = "lab290";
    r.loraTargets = {"q_proj", "v_proj"};
    r.useRslora = true;
    r.lrSchedulerType = "cosine";
    r.warmupRatio = 0.03;
    r.seed = 7;
    r.dtype = "f32";
    r.unknownKeys["flash_attn"] = "fa2";
    const Recipe back = tr::recipeFromJson(tr::recipeToJson(r));
    QCOMPARE(tr::recipeToJson(back), tr::recipeToJson(r));
    QCOMPARE(back.loraTargets, (std::vector<std::string>{"q_proj", "v_proj"}));
    QCOMPARE(back.dtype, std::string("f32"));
    QCOMPARE(back.unknownKeys.at("flash_attn"), std::string("fa2"));
  }

  void yamlRoundTrip() {
    Recipe r = Recipe::labDefaults();
    r.modelPath = "/models/Llama-3.1-8B";
    r.dataset = "lab290";
    r.outputDir = "saves/8b";
    r.learningRate = 2e-5;
    r.deepspeed = "ds_z3_offload_config.json";
    const std::string yaml = tr::recipeToLlamaFactoryYaml(r);
    QVERIFY(yaml.find("stage: sft") != std::string::npos);
    QVERIFY(yaml.find("finetuning_type: lora") != std::string::npos);
    QVERIFY(yaml.find("lora_target: all") != std::string::npos);
    QVERIFY2(yaml.find("learning_rate: 2.0e-5") != std::string::npos, yaml.c_str());
    const Recipe back = tr::recipeFromLlamaFactoryYaml(yaml);
    QCOMPARE(tr::recipeToJson(back), tr::recipeToJson(r));
  }

  // What we write must read back as the same types in PyYAML, which LLaMA-Factory uses
  // (PyYAML reads "1e-4" as a string: floats need a dot and a signed exponent).
  void yamlReadsBackInPyYaml() {
    Recipe r = Recipe::labDefaults();
    r.modelPath = "/m";
    r.dataset = "d";
    r.learningRate = 1e-5;
    r.warmupRatio = 0.03;
    QTemporaryDir tmp;
    const QString file = tmp.filePath("r.yaml");
    std::ofstream(file.toStdString()) << tr::recipeToLlamaFactoryYaml(r);
    QProcess py;
    py.start("/usr/bin/python3", {"-c",
                                  "import sys, yaml; d = yaml.safe_load(open(sys.argv[1]));"
                                  "assert isinstance(d['learning_rate'], float) and d['learning_rate'] == 1e-5, d;"
                                  "assert isinstance(d['warmup_ratio'], float), d;"
                                  "assert isinstance(d['num_train_epochs'], float), d;"
                                  "assert d['lora_rank'] == 16 and d['bf16'] is True and d['lora_target'] == 'all', d;"
                                  "print('ok')",
                                  file});
    QVERIFY(py.waitForFinished(30000));
    QVERIFY2(py.exitCode() == 0, py.readAllStandardError().constData());
    QCOMPARE(py.readAllStandardOutput().trimmed(), QByteArray("ok"));
  }

  void readsLlamaFactoryExampleWithItsDefaults() {
    const Recipe r = tr::recipeFromLlamaFactoryYaml(kLlamaFactoryExample);
    QCOMPARE(r.loraRank, 8);
    QCOMPARE(r.loraAlpha, 16);  // 2 × rank when unset
    QCOMPARE(r.loraTargets.size(), size_t(7));
    QCOMPARE(r.learningRate, 1e-4);
    QCOMPARE(r.cutoffLen, 2048);
    QCOMPARE(r.lrSchedulerType, std::string("cosine"));
    QCOMPARE(r.warmupRatio, 0.1);
    QCOMPARE(r.dtype, std::string("bf16"));
    QCOMPARE(r.loggingSteps, 10);
    QCOMPARE(r.dataset, std::string("identity,alpaca_en_demo"));
    QCOMPARE(r.maxGradNorm, 1.0);  // HF default
    // Keys crosslab does not model are kept and reported, never dropped.
    for (const char* k : {"trust_remote_code", "max_samples", "overwrite_cache", "preprocessing_num_workers", "ddp_timeout"})
      QVERIFY2(r.unknownKeys.count(k), k);
    QCOMPARE(r.unknownKeys.count("plot_loss"), size_t(0));  // fixed LLaMA-Factory keys are known
    const std::string out = tr::recipeToLlamaFactoryYaml(r);
    QVERIFY(out.find("max_samples: 1000") != std::string::npos);
    QVERIFY(out.find("ddp_timeout: 180000000") != std::string::npos);
  }

  void absentKeysTakeLlamaFactoryDefaults() {
    const Recipe r = tr::recipeFromLlamaFactoryYaml("model_name_or_path: m\ndataset: d\ntemplate: llama3\n");
    QCOMPARE(r.loraRank, 8);
    QCOMPARE(r.loraAlpha, 16);
    QCOMPARE(r.cutoffLen, 2048);
    QCOMPARE(r.learningRate, 5e-5);
    QCOMPARE(r.perDeviceTrainBatchSize, 8);
    QCOMPARE(r.gradientAccumulationSteps, 1);
    QCOMPARE(r.dtype, std::string("f32"));
  }

  void badInputNamesTheProblem_data() {
    QTest::addColumn<QString>("yaml");
    QTest::addColumn<QString>("expected");
    QTest::newRow("stage") << "stage: dpo\n" << "stage 'dpo'";
    QTest::newRow("full finetune") << "finetuning_type: full\n" << "finetuning_type 'full'";
    QTest::newRow("rank text") << "lora_rank: sixteen\n" << "lora_rank";
    QTest::newRow("bool") << "bf16: maybe\n" << "bf16";
    QTest::newRow("target") << "lora_target: q_proj,lm_head\n" << "lm_head";
    QTest::newRow("not a map") << "- a\n- b\n" << "mapping";
    QTest::newRow("syntax") << "a: [1, 2\n" << "recipe YAML";
  }
  void badInputNamesTheProblem() {
    QFETCH(QString, yaml);
    QFETCH(QString, expected);
    try {
      tr::recipeFromLlamaFactoryYaml(yaml.toStdString());
      QFAIL("accepted bad YAML");
    } catch (const std::runtime_error& e) {
      QVERIFY2(QString(e.what()).contains(expected), e.what());
    }
  }

  void overridesAndValidation() {
    Recipe r = Recipe::labDefaults();
    tr::applyOverrides(r, {{"lora_rank", "8"}, {"learning_rate", "2e-4"}, {"dtype", "f32"}, {"lora_target", "q_proj,v_proj"}});
    QCOMPARE(r.loraRank, 8);
    QCOMPARE(r.loraAlpha, 32);  // flags change only what they name
    QCOMPARE(r.learningRate, 2e-4);
    QCOMPARE(r.dtype, std::string("f32"));
    QCOMPARE(r.loraTargets.size(), size_t(2));
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, tr::applyOverrides(r, {{"lora_rnak", "8"}}));
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, tr::applyOverrides(r, {{"dtype", "fp8"}}));
    r.gradientAccumulationSteps = 0;
    r.lrSchedulerType = "exponential";
    const auto problems = r.validate();
    QCOMPARE(problems.size(), size_t(2));
  }
};

QTEST_GUILESS_MAIN(TestRecipe)
#include "test_recipe.moc"
