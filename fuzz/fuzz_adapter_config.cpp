// libFuzzer: a PEFT adapter_config.json. An accepted config has a rank > 0 and a finite scaling.
#include <cmath>
#include <stdexcept>

#include "core/model/adapter_config.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosslab;
  try {
    const auto c = model::parseAdapterConfig(fuzz::text(data, size));
    fuzz::require(c.rank > 0, "rank not positive");
    fuzz::require(std::isfinite(c.scaling()), "scaling not finite");
  } catch (const std::runtime_error& e) {
    fuzz::oneLine(e.what());
  }
  return 0;
}
