#include "cli/commands.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <csignal>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "core/infer/local_engine.h"
#include "core/model/checkpoint_files.h"
#include "core/model/llama_layout.h"
#include "core/model/safetensors_writer.h"
#include "core/tokenizer/chat_template.h"
#include "core/tokenizer/utf8.h"

namespace crosslab::cli {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path modelDir(const Args& args) { return args.directory("--model"); }

// A JSON list of token ids, given literally or as @file.
std::vector<int32_t> parseIds(const std::string& arg) {
  const std::string text = !arg.empty() && arg[0] == '@' ? readFile(arg.substr(1)) : arg;
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception&) {
    throw UsageError("ids must be a JSON list of integers");
  }
  if (!j.is_array()) throw UsageError("ids must be a JSON list of integers");
  std::vector<int32_t> ids;
  for (const auto& v : j) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
      throw UsageError("ids must be a JSON list of non-negative integers");
    ids.push_back(v.get<int32_t>());
  }
  return ids;
}

tokenizer::BpeTokenizer loadTokenizer(const fs::path& dir) {
  if (!fs::exists(dir / "tokenizer.json")) throw std::runtime_error(dir.string() + ": no tokenizer.json");
  return tokenizer::BpeTokenizer::load(dir / "tokenizer.json");
}


infer::EngineOptions engineOptions(const Args& args) {
  infer::EngineOptions o;
  o.dtype = args.value("--dtype").value_or("f32");
  if (o.dtype != "f32" && o.dtype != "bf16") throw UsageError("--dtype must be f32 or bf16");
  o.device = args.value("--device").value_or("cpu");
  o.threads = int(args.integer("--threads", 0, 0, 1024));
  o.adapter = args.value("--adapter").value_or("");
  const std::string load = args.value("--load").value_or("map");
  if (load != "map" && load != "copy") throw UsageError("--load must be map or copy");
  o.copyWeights = load == "copy";
  return o;
}

int tokenize(const Args& args, Context& ctx) {
  args.expectPositionals(0, 1);
  const auto tok = loadTokenizer(modelDir(args));
  tokenizer::EncodeOptions opts;
  opts.addBos = !args.has("--no-bos");
  opts.parseSpecial = args.has("--special");
  std::vector<std::string> inputs;
  if (auto file = args.value("--input")) {
    std::istringstream lines(readFile(*file));
    size_t lineNo = 0;
    for (std::string line; std::getline(lines, line);) {
      ++lineNo;
      if (line.empty()) continue;
      json j;
      try {
        j = json::parse(line);
      } catch (const json::exception&) {
        throw std::runtime_error(*file + ":" + std::to_string(lineNo) + ": not a JSON string");
      }
      if (!j.is_string()) throw std::runtime_error(*file + ":" + std::to_string(lineNo) + ": not a JSON string");
      inputs.push_back(j.get<std::string>());
    }
  } else {
    if (args.positionals().empty()) throw UsageError("give TEXT or --input FILE");
    inputs.push_back(args.positional(0, "TEXT"));
  }
  for (const auto& text : inputs) ctx.out << json(tok.encode(text, opts)).dump() << "\n";
  return 0;
}

int detokenize(const Args& args, Context& ctx) {
  args.expectPositionals(1, 1);
  const auto tok = loadTokenizer(modelDir(args));
  const std::string text = tok.decode(parseIds(args.positional(0, "IDS_JSON")), args.has("--skip-special"));
  if (args.has("--json")) {
    if (!tokenizer::isValidUtf8(text)) throw std::runtime_error("decoded bytes are not valid UTF-8 (cut inside a character)");
    ctx.out << json({{"text", text}}).dump() << "\n";
  } else {
    ctx.out << text;
  }
  return 0;
}

std::atomic<bool> gInterrupted{false};
extern "C" void onInterrupt(int) { gInterrupted = true; }

int generate(const Args& args, Context& ctx) {
  args.expectPositionals(0, 0);
  const fs::path dir = modelDir(args);
  auto engine = infer::LocalEngine::open(dir, engineOptions(args));
  const auto* tok = engine->tokenizer();
  std::vector<int32_t> prompt;
  infer::GenerateOptions g;
  if (auto ids = args.value("--prompt-ids")) {
    prompt = parseIds(*ids);
  } else if (auto text = args.value("--prompt")) {
    if (!tok) throw std::runtime_error(dir.string() + ": no tokenizer.json for --prompt (use --prompt-ids)");
    if (args.has("--chat")) {
      prompt = tok->encode(tokenizer::renderLlama3Chat({{"user", *text}}), {false, true});
      for (const auto& w : tokenizer::llama3StopWords())
        if (auto id = tok->tokenId(w)) g.stopIds.push_back(*id);
    } else {
      prompt = tok->encode(*text);
    }
  } else {
    throw UsageError("give --prompt TEXT or --prompt-ids JSON");
  }
  g.maxTokens = int(args.integer("--max-tokens", 128, 0, 1 << 20));
  g.sampling.temperature = args.number("--temperature", 0, 0, 100);
  g.sampling.topP = args.number("--top-p", 1, 1e-9, 1);
  g.sampling.topK = int(args.integer("--top-k", 0, 0, 1 << 30));
  g.sampling.seed = uint64_t(args.integer("--seed", 0, 0, INT64_MAX));
  if (auto s = args.value("--stop")) g.stopStrings.push_back(*s);
  g.ignoreEos = args.has("--ignore-eos");
  const bool asJson = args.has("--json");
  g.cancel = &gInterrupted;
  std::signal(SIGINT, onInterrupt);
  if (!asJson)
    g.onToken = [&](int32_t, const std::string& piece) {
      ctx.out << piece << std::flush;
      return true;
    };
  const auto r = engine->generate(prompt, g);
  if (asJson) {
    json j = {{"ids", r.ids},
              {"text", r.text},
              {"prompt_tokens", r.promptTokens},
              {"completion_tokens", r.ids.size()},
              {"finish_reason", r.finishReason},
              {"prefill_tok_s", r.prefillTokPerS()},
              {"decode_tok_s", r.decodeTokPerS()}};
    ctx.out << j.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  } else {
    ctx.out << "\n";
  }
  return 0;
}

int forward(const Args& args, Context& ctx) {
  args.expectPositionals(0, 0);
  const auto ids = parseIds(args.value("--ids").value_or(""));
  const auto out = args.value("--dump-logits");
  if (!out) throw UsageError("--dump-logits FILE is required");
  auto engine = infer::LocalEngine::open(modelDir(args), engineOptions(args));
  const std::vector<float> logits = engine->forwardLogits(ids, args.has("--incremental"), args.has("--op-by-op"));  // [T, vocab], little-endian
  model::writeFileAtomically(*out, std::string(reinterpret_cast<const char*>(logits.data()), logits.size() * sizeof(float)));
  ctx.out << json({{"positions", ids.size()}, {"vocab", engine->config().vocabSize}, {"file", *out}}).dump() << "\n";
  return 0;
}

int modelInfo(const Args& args, Context& ctx) {
  args.expectPositionals(1, 1);
  const fs::path dir = args.positional(0, "DIR");
  const auto config = model::loadModelConfig(dir);
  const auto files = model::CheckpointFiles::open(dir);
  model::checkLlamaCheckpoint(files, config);
  int64_t params = 0;
  std::map<std::string, int64_t> dtypes;
  for (const auto& name : files.names()) {
    const auto* info = files.find(name).info;
    params += info->numel();
    dtypes[model::dtypeName(info->dtype)] += info->numel();
  }
  if (fs::exists(dir / "tokenizer.json")) loadTokenizer(dir);  // validate it too
  json fileList = json::array();
  for (const auto& f : files.files()) fileList.push_back(f.filename().string());
  json j = {{"model_type", config.modelType},   {"hidden_size", config.hiddenSize},
            {"intermediate_size", config.intermediateSize}, {"layers", config.numLayers},
            {"heads", config.numHeads},         {"kv_heads", config.numKvHeads},
            {"head_dim", config.headDim},       {"vocab_size", config.vocabSize},
            {"tie_word_embeddings", config.tieWordEmbeddings}, {"parameters", params},
            {"dtypes", dtypes},                 {"torch_dtype", config.torchDtype},
            {"files", fileList},                {"bytes", files.totalBytes()},
            {"tokenizer", fs::exists(dir / "tokenizer.json")}};
  if (args.has("--json")) {
    ctx.out << j.dump() << "\n";
    return 0;
  }
  for (auto it = j.begin(); it != j.end(); ++it) ctx.out << std::left << std::setw(20) << it.key() << it.value().dump() << "\n";
  return 0;
}

const std::vector<OptionSpec> kEngineOptions = {{"--model", true, "checkpoint folder (Hugging Face layout)", true},
                                                {"--adapter", true, "PEFT LoRA adapter folder"},
                                                {"--dtype", true, "f32 (default) or bf16"},
                                                {"--device", true, "cpu (default), cuda, cuda:N"},
                                                {"--threads", true, "CPU threads (default: all cores)"},
                                                {"--load", true, "map (default: weights used from the file's memory map) or copy (read into memory: faster batch-1 decode on some machines)"}};

std::vector<OptionSpec> with(std::vector<OptionSpec> extra) {
  extra.insert(extra.begin(), kEngineOptions.begin(), kEngineOptions.end());
  return extra;
}

}  // namespace

void addEngineCommands(std::vector<Command>& commands) {
  commands.push_back({"tokenize", "--model DIR [--no-bos] [--special] (TEXT | --input FILE)",
                      "print the token ids of TEXT (or of each JSON string line of FILE) as a JSON list",
                      {{"--model", true, "checkpoint folder with tokenizer.json", true},
                       {"--no-bos", false, "do not add <|begin_of_text|>"},
                       {"--special", false, "recognise special-token text such as <|eot_id|>"},
                       {"--input", true, "JSON Lines file of strings"}},
                      tokenize});
  commands.push_back({"detokenize", "--model DIR IDS_JSON [--json] [--skip-special]",
                      "print the exact text of a JSON list of token ids",
                      {{"--model", true, "checkpoint folder with tokenizer.json", true},
                       {"--json", false, "print {\"text\": ...}"},
                       {"--skip-special", false, "leave special tokens out"}},
                      detokenize});
  commands.push_back({"generate",
                      "--model DIR [--adapter DIR] (--prompt TEXT [--chat] | --prompt-ids JSON) [--max-tokens N] "
                      "[--temperature T] [--top-p P] [--top-k K] [--seed S] [--dtype f32|bf16] [--json]",
                      "generate a continuation with the local engine (streams text; --json for one object)",
                      with({{"--prompt", true, "prompt text"},
                            {"--chat", false, "wrap the prompt in the Llama 3 chat template"},
                            {"--prompt-ids", true, "prompt as a JSON list of ids (or @file)"},
                            {"--max-tokens", true, "most new tokens (default 128)"},
                            {"--temperature", true, "0 = greedy (default)"},
                            {"--top-p", true, "nucleus sampling mass (default 1)"},
                            {"--top-k", true, "sample from the K best (default off)"},
                            {"--seed", true, "sampling seed (default 0)"},
                            {"--stop", true, "stop string"},
                            {"--ignore-eos", false, "do not stop at EOS"},
                            {"--json", false, "print ids, text and speeds as one JSON object"}}),
                      generate});
  commands.push_back({"forward", "--model DIR [--adapter DIR] --ids JSON --dump-logits FILE [--dtype f32|bf16]",
                      "run one forward pass; write every position's logits as raw float32 [T, vocab]",
                      with({{"--ids", true, "JSON list of ids (or @file)", true},
                            {"--dump-logits", true, "output file (little-endian float32)", true},
                            {"--incremental", false, "one token at a time through the KV cache (the decode path)"},
                            {"--op-by-op", false, "with --incremental: the op-by-op decode path, not the fused CPU step"}}),
                      forward});
  commands.push_back({"model info", "DIR [--json]", "validate a checkpoint and summarise its config, parameters and files",
                      {{"--json", false, "print a JSON object"}},
                      modelInfo});
}

}  // namespace crosslab::cli
