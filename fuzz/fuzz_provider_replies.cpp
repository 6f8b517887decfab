// libFuzzer: a provider's (Hot Aisle's) reply bodies, read as every reply the client reads:
// offers, the team's VMs, a provisioned VM, a VM's state, the key's teams. A reply of the
// wrong shape is a BadReply with one printable line; any other exception, a sanitizer
// report (a float cast out of int's range, a signed overflow summing GPU counts) or a
// broken invariant is a finding.
#include <stdexcept>

#include "backends/providers/hotaisle_replies.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosslab;
  const std::string body = fuzz::text(data, size);
  try {
    for (const auto& o : providers::readOffers(body)) {
      // What `venues offers --json` prints and provisioning posts back: both must serialise.
      (void)o.toJson().dump();
      (void)o.specs.dump();
    }
  } catch (const providers::BadReply& e) {
    fuzz::oneLine(e.what());
  }
  try {
    for (const auto& vm : providers::readVms(body)) fuzz::require(!vm.name.empty(), "a listed VM without a name");
  } catch (const providers::BadReply& e) {
    fuzz::oneLine(e.what());
  }
  (void)providers::readProvisioned(body);
  try {
    (void)providers::readState(body);
  } catch (const providers::BadReply& e) {
    fuzz::oneLine(e.what());
  }
  for (const auto& team : providers::readTeams(body)) (void)team;
  return 0;
}
