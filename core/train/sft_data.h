#pragma once
// Supervised fine-tuning data as LLaMA-Factory reads and encodes it: alpaca and sharegpt
// records (JSON or JSON Lines, named in dataset_info.json), the llama3 template, prompt
// tokens masked with -100, and LLaMA-Factory's truncation to the cutoff.

#include <cstdint>
#include <string>
#include <vector>

namespace crosslab::train {

constexpr std::int32_t kIgnoreIndex = -100;

struct Message {
  std::string role;  // "user" | "assistant"
  std::string content;
};

// One training example: an optional system prompt and alternating user/assistant turns,
// ending with an assistant turn (every assistant turn is trained).
struct Example {
  std::string system;
  std::vector<Message> messages;
};

// Text -> token ids, recognising special tokens such as <|eot_id|> in the text (as
// Hugging Face tokenizers do for added special tokens). The engine's tokenizer implements it.
class TextEncoder {
 public:
  virtual ~TextEncoder() = default;
  virtual std::vector<std::int32_t> encode(const std::string& text) const = 0;
  virtual std::int32_t bosId() const = 0;
};

struct EncodedExample {
  std::vector<std::int32_t> inputIds;
  std::vector<std::int32_t> labels;  // kIgnoreIndex where the loss is masked
  std::int64_t trainedTokens() const;
};

// How a dataset's records name their fields (dataset_info.json "columns" and "tags").
struct DataColumns {
  // alpaca
  std::string prompt = "instruction", query = "input", response = "output", history = "history";
  // sharegpt
  std::string messages = "conversations", roleTag = "from", contentTag = "value";
  std::string userTag = "human", assistantTag = "gpt", systemTag = "system";
  // both
  std::string system = "system";
};

// One dataset of dataset_info.json: its file (relative to the data folder), formatting
// ("alpaca" | "sharegpt") and columns.
struct DatasetEntry {
  std::string fileName;
  std::string formatting = "alpaca";
  DataColumns columns;
};

// The entry `name` of a dataset_info.json text; `source` labels errors. Throws
// std::runtime_error naming the dataset and the problem.
DatasetEntry parseDatasetEntry(const std::string& infoText, const std::string& name, const std::string& source);

// Records (a JSON array, or JSON Lines) -> examples; formatting "alpaca" | "sharegpt" | "auto".
// Throws std::runtime_error naming `source` and the record.
std::vector<Example> parseDataRecords(const std::string& text, const std::string& formatting,
                                     const DataColumns& columns, const std::string& source);

// dataset_info.json in `dataDir`; `names` is comma-separated. Throws naming the dataset,
// file and record on any problem.
std::vector<Example> loadDatasets(const std::string& dataDir, const std::string& names);
// One file without dataset_info.json: formatting "alpaca" | "sharegpt" | "auto" (by keys).
std::vector<Example> loadDataFile(const std::string& path, const std::string& formatting = "auto");

// The llama3 template, one (source, target) text pair per user/assistant turn, as
// LLaMA-Factory's Template.encode_multiturn lays them out. The BOS token is not in the text.
struct TurnText {
  std::string source;  // [system slot on turn 0] user slot + assistant header
  std::string target;  // assistant content + <|eot_id|>
};
std::vector<TurnText> llama3Turns(const Example& ex);

// The prompt as a generation request sees it: BOS-less text up to the assistant header of
// the last user turn (the example's final assistant message, if any, is left out).
std::string llama3Prompt(const Example& ex);

// LLaMA-Factory's infer_seqlen: how many source/target tokens survive `cutoff`.
std::pair<std::int64_t, std::int64_t> inferSeqlen(std::int64_t sourceLen, std::int64_t targetLen, std::int64_t cutoff);

// input_ids = BOS + per turn (source + target); labels mask every source token and train
// every target token (the <|eot_id|> included); truncated as LLaMA-Factory does.
EncodedExample encodeSupervised(const Example& ex, const TextEncoder& encoder, std::int64_t cutoff);

}  // namespace crosslab::train
