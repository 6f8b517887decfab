#pragma once
// Hot Aisle's replies, read (interfaces.md): offers, the team's VMs, a provisioned VM, a
// VM's state, the key's teams. Plain JSON in, plain structs out, no Qt and no network, so
// the fuzz target (fuzz/fuzz_provider_replies.cpp) drives exactly what the client reads.
// A reply of the wrong shape is refused with a BadReply (one printable line); odd fields
// inside an acceptable shape are skipped or read as absent; numbers are clamped to what
// the struct holds (a count of 1e300 is not undefined behaviour).

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace crosslab::providers {

struct Offer {
  std::string gpuModel;
  int gpuCount = 0;
  int vcpus = 0;
  double ramGb = 0;   // decimal GB (bytes / 1e9)
  double diskGb = 0;
  double pricePerHour = 0;  // USD for the whole VM (OnDemandPrice is US cents)
  int minMinutes = 0;       // MinimumReservationMinutes when the API says, else 0
  int quantity = -1;        // VMs on the shelf, -1 when not reported
  nlohmann::json specs;     // the offer's Specs, echoed back to provision it
  double pricePerGpuHour() const { return gpuCount > 0 ? pricePerHour / gpuCount : pricePerHour; }
  nlohmann::json toJson() const;
};

struct Vm {
  std::string name;
  std::string ipAddress;
  std::string state;
  std::string gpuModel;  // when the listing says (Specs.gpus)
  int gpuCount = 0;
};

// A reply that is not the shape the API documents (the client turns it into a
// ProviderError with Failure::BadReply).
class BadReply : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

Offer parseOffer(const nlohmann::json& j);
Vm parseVm(const nlohmann::json& j);  // an empty name when the object names no VM

std::vector<Offer> readOffers(const std::string& body);          // a JSON array of offers; null: none
std::vector<Vm> readVms(const std::string& body);                // an array, or {"results": [...]}
Vm readProvisioned(const std::string& body);                     // may have an empty name
std::string readState(const std::string& body);                  // {"state": "..."}
std::vector<std::string> readTeams(const std::string& body);     // GET /user/: teams[].handle

}  // namespace crosslab::providers
