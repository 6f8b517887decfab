// libFuzzer: alpaca / sharegpt training records (a JSON array or JSON Lines), then the
// llama3 template and LLaMA-Factory's truncation on what was accepted, read as each
// formatting in turn; labels always line up with the input ids and fit the cutoff.
#include <algorithm>
#include <stdexcept>

#include "core/train/sft_data.h"
#include "fuzz/fuzz_support.h"

namespace {

// One id per byte (+1), BOS = 0: enough to exercise the truncation arithmetic.
class ByteEncoder : public crosslab::train::TextEncoder {
 public:
  std::vector<std::int32_t> encode(const std::string& text) const override {
    std::vector<std::int32_t> ids;
    for (unsigned char c : text) ids.push_back(std::int32_t(c) + 1);
    return ids;
  }
  std::int32_t bosId() const override { return 0; }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosslab;
  const std::string text = fuzz::text(data, size);
  const std::int64_t cutoffs[] = {std::int64_t(1 + size % 1024), 4096};
  const ByteEncoder enc;
  for (const char* formatting : {"auto", "alpaca", "sharegpt"}) {
    try {
      for (const auto& ex : train::parseDataRecords(text, formatting, {}, "data.json")) {
        fuzz::require(!ex.messages.empty() && ex.messages.size() % 2 == 0, "an example without whole turns");
        (void)train::llama3Prompt(ex);
        for (const std::int64_t cutoff : cutoffs) {
          const auto e = train::encodeSupervised(ex, enc, cutoff);
          fuzz::require(e.inputIds.size() == e.labels.size(), "labels and input ids differ in length");
          fuzz::require(std::int64_t(e.inputIds.size()) <= cutoff, "longer than the cutoff");
        }
      }
    } catch (const std::runtime_error& e) {
      fuzz::oneLine(e.what());
    }
  }
  return 0;
}
