// libFuzzer: the safetensors header parser on arbitrary bytes (treated as a whole file).
// Must either accept or throw SafetensorsError; anything else is a bug.
#include "core/model/safetensors.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosslab;
  try {
    const auto h = model::parseSafetensors(data, size);
    uint64_t next = 0;
    for (const auto& t : h.tensors) {  // accepted offsets are contiguous and inside the input
      fuzz::require(t.begin == next && t.end >= t.begin, "tensor offsets not contiguous");
      fuzz::require(h.dataStart + t.end <= size, "tensor outside the file");
      fuzz::require(t.numel() >= 0, "negative element count");
      next = t.end;
    }
  } catch (const model::SafetensorsError& e) {
    fuzz::oneLine(e.what());
  }
  return 0;
}
