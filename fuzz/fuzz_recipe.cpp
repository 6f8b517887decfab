// libFuzzer: a LoRA recipe as LLaMA-Factory YAML (a remote box's train.yaml, a user's file)
// and as our recipe.json. What is accepted and valid must survive our own export: the YAML
// we write reads back to the same step arithmetic, and so does the JSON.
#include <stdexcept>

#include "core/train/recipe.h"
#include "fuzz/fuzz_support.h"

namespace {

void roundTrip(const crosslab::train::Recipe& r) {
  using namespace crosslab;
  if (!r.validate().empty()) return;
  auto y = train::recipeFromLlamaFactoryYaml(train::recipeToLlamaFactoryYaml(r));
  y.devices = r.devices;  // not in LLaMA-Factory's YAML: the launcher on the box sets it
  fuzz::require(y.totalSteps(290) == r.totalSteps(290), "YAML export changes the step count");
  fuzz::require(y.loraRank == r.loraRank && y.loraAlpha == r.loraAlpha, "YAML export changes the LoRA shape");
  const auto j = train::recipeFromJson(train::recipeToJson(r));
  fuzz::require(j.totalSteps(290) == r.totalSteps(290), "JSON export changes the step count");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosslab;
  const std::string text = fuzz::text(data, size);
  try {
    roundTrip(train::recipeFromLlamaFactoryYaml(text));
  } catch (const std::runtime_error& e) {
    fuzz::oneLine(e.what());
  }
  try {
    roundTrip(train::recipeFromJson(text));
  } catch (const std::runtime_error& e) {
    fuzz::oneLine(e.what());
  }
  return 0;
}
