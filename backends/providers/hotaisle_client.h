#pragma once
// Hot Aisle's REST API (interfaces.md): validate the key, register an SSH key, list
// offers, provision, poll state, delete. Synchronous calls (run them off the GUI
// thread); each call retries 429/5xx/network errors with exponential backoff and turns
// 401/403 into a one-line reason. The API key is sent only in the Authorization header
// and never appears in an error message or log line.

#include <QString>
#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace crosslab::providers {

class ProviderError : public std::runtime_error {
 public:
  ProviderError(const std::string& what, int httpStatus) : std::runtime_error(what), status_(httpStatus) {}
  int httpStatus() const { return status_; }

 private:
  int status_;
};

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
};

struct HotAisleOptions {
  QString baseUrl = QStringLiteral("https://admin.hotaisle.app/api");
  QString team;
  QString apiKey;
  int timeoutMs = 30000;
  int maxAttempts = 4;   // first try + retries
  int backoffMs = 1000;  // doubled per retry, capped at 30 s
};

class HotAisleClient {
 public:
  explicit HotAisleClient(HotAisleOptions options);

  // The team handles the key can see; throws on 401/403.
  std::vector<std::string> validateKey();
  // True when added, false when Hot Aisle already had it (409).
  bool registerSshKey(const std::string& publicKey);
  std::vector<Offer> offers();
  Vm provision(const Offer& offer);
  std::string state(const std::string& vmName);
  // Polls state until "running" (or throws on timeout / cancel / a failed state).
  void waitRunning(const std::string& vmName, int pollMs, int timeoutSeconds,
                   const std::atomic<bool>* cancel = nullptr,
                   const std::function<void(const std::string&)>& onState = {});
  // True when deleted now, false when it was already gone (404).
  bool remove(const std::string& vmName);

  static Offer parseOffer(const nlohmann::json& j);

 private:
  struct Reply {
    int status = 0;
    std::string body;
  };
  Reply request(const char* method, const QString& path, const std::string& body, const std::vector<int>& okStatuses);
  Reply once(const char* method, const QString& path, const std::string& body, QString* networkError,
             int* retryAfterS);
  QString teamPath(const QString& rest) const;

  HotAisleOptions opt_;
};

}  // namespace crosslab::providers
