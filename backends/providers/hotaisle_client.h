#pragma once
// Hot Aisle's REST API (interfaces.md): validate the key, register an SSH key, list
// offers, provision, poll state, list the team's VMs, delete. Synchronous calls (run them
// off the GUI thread), each bounded (provider_request.h: a timeout per try, 90 s for all
// tries by default, cancellable). Reads and deletes retry 429/5xx/network errors with
// backoff; provisioning is sent exactly once, and a failure that leaves its outcome
// unknown says so (ProviderError::ambiguous) so the caller lists the team's VMs instead
// of retrying. The API key is sent only in the Authorization header and never appears
// in an error message or log line.

#include <QString>
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "backends/providers/hotaisle_replies.h"
#include "backends/providers/provider_request.h"

namespace crosslab::providers {

struct HotAisleOptions {
  QString baseUrl = QStringLiteral("https://admin.hotaisle.app/api");
  QString team;
  QString apiKey;
  int timeoutMs = 30000;   // one try
  int deadlineMs = 90000;  // all tries of one call together, waits included
  int maxAttempts = 4;     // first try + retries (never for provisioning)
  int backoffMs = 1000;    // doubled per retry, capped at 30 s; Retry-After wins
  const std::atomic<bool>* cancel = nullptr;  // set: the call in flight stops within ~50 ms
};

class HotAisleClient {
 public:
  explicit HotAisleClient(HotAisleOptions options);

  // The team handles the key can see; throws on 401/403.
  std::vector<std::string> validateKey();
  // True when added, false when Hot Aisle already had it (409).
  bool registerSshKey(const std::string& publicKey);
  std::vector<Offer> offers();
  // Sent exactly once. On a failure with ambiguous() set the VM may exist: list the
  // team's VMs (vms()) rather than asking again.
  Vm provision(const Offer& offer);
  // The team's VMs (GET /teams/{team}/virtual_machines/, the collection provisioning
  // posts to).
  std::vector<Vm> vms();
  std::string state(const std::string& vmName);
  // Polls state until "running" (or throws on timeout / cancel / a failed state).
  void waitRunning(const std::string& vmName, int pollMs, int timeoutSeconds,
                   const std::atomic<bool>* cancel = nullptr,
                   const std::function<void(const std::string&)>& onState = {});
  // True when deleted now, false when it was already gone (404). Sent with force=true
  // (as dstack's Hot Aisle backend does): the user asked for it inside the minimum too.
  bool remove(const std::string& vmName);

 private:
  HttpReply request(const char* method, const QString& path, const std::string& body,
                    const std::vector<int>& okStatuses, bool repeatable = true);
  QString teamPath(const QString& rest) const;

  HotAisleOptions opt_;
};

}  // namespace crosslab::providers
