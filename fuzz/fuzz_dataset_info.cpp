// libFuzzer: LLaMA-Factory's dataset_info.json. Every dataset it names is looked up; an
// accepted entry's columns and formatting then read a fixed alpaca and sharegpt record.
#include <nlohmann/json.hpp>

#include <stdexcept>

#include "core/train/sft_data.h"
#include "fuzz/fuzz_support.h"

namespace {

const char* kAlpaca = R"([{"instruction": "Say hi", "input": "", "output": "hi", "system": "be brief"}])";
const char* kShareGpt = R"({"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosslab;
  const std::string text = fuzz::text(data, size);
  std::vector<std::string> names = {"demo"};
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_object())
    for (const auto& [key, value] : j.items()) {
      if (names.size() >= 8) break;
      names.push_back(key);
    }
  for (const auto& name : names) {
    try {
      const auto entry = train::parseDatasetEntry(text, name, "dataset_info.json");
      for (const char* records : {kAlpaca, kShareGpt}) {
        try {
          for (const auto& ex : train::parseDataRecords(records, entry.formatting, entry.columns, "records.json"))
            fuzz::require(!ex.messages.empty() && ex.messages.size() % 2 == 0, "an example without whole turns");
        } catch (const std::runtime_error& e) {
          fuzz::oneLine(e.what());
        }
      }
    } catch (const std::runtime_error& e) {
      fuzz::oneLine(e.what());
    }
  }
  return 0;
}
