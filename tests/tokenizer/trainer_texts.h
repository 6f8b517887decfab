#pragma once
// Text shared by the BPE trainer tests: the training corpus (demo corpus text) and varied
// probe strings the trained tokenizer must round-trip and encode like the reference.

#include <string>
#include <vector>

namespace crosslab::testing {

std::vector<std::string> trainerCorpus();
std::vector<std::string> probeTexts();

}  // namespace crosslab::testing
