// libFuzzer: the safetensors header parser on arbitrary bytes (treated as a whole file).
// Must either accept or throw SafetensorsError; anything else is a bug.
#include <cstddef>
#include <cstdint>

#include "core/model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto h = crosslab::model::parseSafetensors(data, size);
    for (const auto& t : h.tensors)  // accepted offsets must lie inside the input
      if (h.dataStart + t.end > size) __builtin_trap();
  } catch (const crosslab::model::SafetensorsError&) {
  }
  return 0;
}
