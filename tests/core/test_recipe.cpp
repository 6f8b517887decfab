// The LoRA recipe: lab defaults, step arithmetic, JSON and LLaMA-Factory YAML round trips,
// LLaMA-Factory's defaults for absent keys, unknown keys kept and reported, bad values.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <yaml-cpp/yaml.h>

#include <set>

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
    r.deepspeedStage = 3;
    r.deepspeedOffload = true;
    const std::string yaml = tr::recipeToLlamaFactoryYaml(r);
    QVERIFY2(yaml.find("deepspeed: ds_z3_offload_config.json") != std::string::npos, yaml.c_str());
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

  // A JSON number that is no whole number of the field's type is refused by name, never cast
  // (4e29 into an int was undefined behaviour: fuzz finding of fuzz_recipe).
  void jsonWholeNumbersAreCheckedBeforeTheyAreCast() {
    for (const char* bad : {R"({"cutoff_len": 409777777777777777777777777776})", R"({"cutoff_len": 4.5})",
                            R"({"cutoff_len": 3000000000})", R"({"seed": -1e300})"}) {
      try {
        tr::recipeFromJson(bad);
        QFAIL(qPrintable(QString("accepted ") + bad));
      } catch (const std::runtime_error& e) {
        QVERIFY2(QString(e.what()).contains("whole number"), e.what());
      }
    }
    QCOMPARE(tr::recipeFromJson(R"({"cutoff_len": 2048.0})").cutoffLen, 2048);  // a whole float is a whole number
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

  // Every field set away from its default, venue fields included: JSON -> recipe -> YAML
  // -> recipe -> JSON gives the same JSON, and YAML -> recipe -> YAML the same YAML.
  void jsonYamlJsonIsAFixedPoint() {
    Recipe r = Recipe::labDefaults();
    r.modelPath = "/models/Llama-3.1-70B";
    r.dataset = "lab290";
    r.datasetDir = "stage/data";
    r.datasetFile = "train.json";
    r.formatting = "sharegpt";
    r.cutoffLen = 2048;
    r.loraRank = 8;
    r.loraAlpha = 24;
    r.loraDropout = 0.05;
    r.loraTargets = {"q_proj", "v_proj"};
    r.useRslora = true;
    r.learningRate = 2e-5;
    r.numTrainEpochs = 1.5;
    r.perDeviceTrainBatchSize = 2;
    r.gradientAccumulationSteps = 4;
    r.devices = 2;
    r.lrSchedulerType = "cosine";
    r.warmupRatio = 0.03;
    r.maxGradNorm = 0.5;
    r.seed = 1234;
    r.dtype = "f32";
    r.maxSteps = 50;
    r.gradientCheckpointing = false;
    r.loggingSteps = 5;
    r.saveSteps = 20;
    r.valSize = 0.1;
    r.evalSteps = 10;
    r.outputDir = "output";
    r.deepspeedStage = 3;
    r.deepspeedOffload = true;
    r.launcher = "/opt/venv/bin/llamafactory-cli";
    QVERIFY(r.validate().empty());
    const std::string json1 = tr::recipeToJson(r);
    const std::string yaml1 = tr::recipeToLlamaFactoryYaml(tr::recipeFromJson(json1));
    const std::string json2 = tr::recipeToJson(tr::recipeFromLlamaFactoryYaml(yaml1));
    QCOMPARE(QString::fromStdString(json2), QString::fromStdString(json1));
    QCOMPARE(tr::recipeToLlamaFactoryYaml(tr::recipeFromLlamaFactoryYaml(yaml1)), yaml1);
    // Our keys ride in a comment LLaMA-Factory ignores; none of them is a YAML key.
    QVERIFY2(yaml1.find("# crosslab: ") != std::string::npos, yaml1.c_str());
    const YAML::Node y = YAML::Load(yaml1);
    for (const char* ours : {"devices", "launcher", "dataset_file", "formatting", "deepspeed_stage", "gradient_checkpointing"})
      QVERIFY2(!y[ours].IsDefined(), ours);
    QCOMPARE(y["disable_gradient_checkpointing"].as<bool>(), true);
    // The lab defaults: no comment at all.
    QVERIFY(tr::recipeToLlamaFactoryYaml(Recipe::labDefaults()).find("# crosslab") == std::string::npos);
  }

  // LLaMA-Factory's LoRA SFT keys as interfaces.md lists them (from its examples and
  // hparams): every one is written, and nothing is written that LLaMA-Factory's argument
  // parser would refuse (it rejects unknown keys).
  void llamaFactoryKeysMatchTheReference() {
    const std::set<std::string> reference = {
        "model_name_or_path", "stage", "do_train", "finetuning_type", "lora_rank", "lora_alpha", "lora_dropout",
        "lora_target", "dataset", "dataset_dir", "template", "cutoff_len", "output_dir", "logging_steps", "save_steps",
        "overwrite_output_dir", "per_device_train_batch_size", "gradient_accumulation_steps", "learning_rate",
        "num_train_epochs", "lr_scheduler_type", "warmup_ratio", "bf16", "deepspeed"};
    // Also real arguments of LLaMA-Factory (FinetuningArguments, DataArguments) or of HF
    // TrainingArguments, which it accepts.
    const std::set<std::string> alsoAccepted = {"use_rslora", "max_grad_norm", "seed", "max_steps", "val_size",
                                                "eval_steps", "save_strategy", "disable_gradient_checkpointing"};
    Recipe r = Recipe::labDefaults();
    r.modelPath = "/models/Llama-3.1-8B";
    r.dataset = "lab290";
    r.outputDir = "output";
    r.saveSteps = 37;
    r.deepspeedStage = 3;
    r.deepspeedOffload = true;
    const YAML::Node y = YAML::Load(tr::recipeToLlamaFactoryYaml(r));
    std::set<std::string> written;
    for (const auto& kv : y) written.insert(kv.first.as<std::string>());
    for (const auto& k : reference) QVERIFY2(written.count(k), k.c_str());
    for (const auto& k : written) QVERIFY2(reference.count(k) || alsoAccepted.count(k), k.c_str());
    QCOMPARE(y["lora_target"].as<std::string>(), std::string("all"));
    QCOMPARE(y["deepspeed"].as<std::string>(), std::string("ds_z3_offload_config.json"));
  }

  // The venue tools' older JSON ({"model", "gpus", "deepspeed": "z3_offload", …}) reads
  // into the one recipe; nothing lands under unknown keys, "none" is not a path.
  void olderVenueJsonReads() {
    const Recipe r = tr::recipeFromJson(R"({"model": "/models/llama-70b", "gpus": 2, "deepspeed": "z3_offload",
        "dataset_file": "train.json", "formatting": "alpaca", "gradient_checkpointing": false, "lora_rank": 8})");
    QCOMPARE(r.modelPath, std::string("/models/llama-70b"));
    QCOMPARE(r.devices, 2);
    QCOMPARE(r.deepspeedStage, 3);
    QVERIFY(r.deepspeedOffload);
    QCOMPARE(r.datasetFile, std::string("train.json"));
    QVERIFY(!r.gradientCheckpointing);
    QCOMPARE(r.loraAlpha, 16);
    QVERIFY2(r.unknownKeys.empty(), r.unknownKeys.begin()->first.c_str());
    const Recipe none = tr::recipeFromJson(R"({"deepspeed": "none"})");
    QCOMPARE(none.deepspeedStage, 0);
    QVERIFY(none.unknownKeys.empty());
    QVERIFY(none.deepspeedConfigName().empty());
  }

  // The table drives every form: each field's text reads back into the same value, and
  // every flag names one field.
  void fieldTableRoundTripsText() {
    Recipe r = Recipe::labDefaults();
    r.modelPath = "/m";
    r.learningRate = 3e-5;
    r.loraTargets = {"k_proj"};
    std::set<std::string> flags;
    for (const auto& f : tr::recipeFields()) {
      const std::string text = tr::recipeFieldText(r, f);
      Recipe back = Recipe::labDefaults();
      tr::setRecipeField(back, f, text);
      QCOMPARE(QString::fromStdString(tr::recipeFieldText(back, f)), QString::fromStdString(text));
      if (!f.flag.empty()) QVERIFY2(flags.insert(f.flag).second, f.flag.c_str());
      if (f.uses(tr::RecipeField::Dialog)) QVERIFY2(!f.label.empty(), f.key.c_str());
    }
    QVERIFY(flags.count("--lora-rank") && flags.count("--deepspeed-stage") && flags.count("--devices"));
    Recipe bad = Recipe::labDefaults();
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, tr::setRecipeField(bad, *tr::findRecipeField("lora_rank"), "many"));
    bad.deepspeedStage = 1;
    bad.deepspeedOffload = true;
    QCOMPARE(bad.validate().size(), size_t(2));  // stage 1 is no choice; offload needs ZeRO 2/3
  }
};

QTEST_GUILESS_MAIN(TestRecipe)
#include "test_recipe.moc"
