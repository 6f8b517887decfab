// libFuzzer: a checkpoint's config.json. Accepted configs have shapes the engine can build
// (positive sizes, heads dividing evenly) and a parameter count that does not overflow.
#include <stdexcept>

#include "core/model/model_config.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosslab;
  try {
    const auto c = model::parseModelConfig(fuzz::text(data, size));
    fuzz::require(c.hiddenSize > 0 && c.intermediateSize > 0 && c.numLayers > 0 && c.vocabSize > 0, "non-positive size");
    fuzz::require(c.numHeads > 0 && c.numKvHeads > 0 && c.numHeads % c.numKvHeads == 0, "bad head counts");
    fuzz::require(c.headDim > 0, "non-positive head_dim");
    fuzz::require(c.parameterCount() > 0, "non-positive parameter count");
  } catch (const std::runtime_error& e) {
    fuzz::oneLine(e.what());
  }
  return 0;
}
