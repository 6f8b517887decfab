#include "backends/providers/hotaisle_client.h"

#include <QThread>
#include <QUrl>

#include <algorithm>
#include <chrono>

#include "core/util/printable.h"

namespace crosslab::providers {
namespace {

// A reply of the wrong shape, as the client's typed failure.
template <typename F>
auto readReply(F&& read) {
  try {
    return read();
  } catch (const BadReply& e) {
    throw ProviderError(e.what(), 200, Failure::BadReply);
  }
}

}  // namespace

HotAisleClient::HotAisleClient(HotAisleOptions options) : opt_(std::move(options)) {
  while (opt_.baseUrl.endsWith('/')) opt_.baseUrl.chop(1);
}

QString HotAisleClient::teamPath(const QString& rest) const {
  if (opt_.team.isEmpty())
    throw ProviderError("a Hot Aisle team handle is needed (--team)", 0, Failure::BadRequest, 0);
  return "/teams/" + QString::fromUtf8(QUrl::toPercentEncoding(opt_.team)) + rest;
}

HttpReply HotAisleClient::request(const char* method, const QString& path, const std::string& body,
                                  const std::vector<int>& okStatuses, bool repeatable) {
  checkApiUrl(opt_.baseUrl, "Hot Aisle");
  HttpCall call;
  call.method = method;
  call.url = opt_.baseUrl + path;
  call.path = path;
  call.body = body;
  call.authorization = "Token " + opt_.apiKey.toUtf8();
  call.repeatable = repeatable;
  call.okStatuses = okStatuses;
  call.provider = "Hot Aisle";
  RequestBounds b;
  b.attemptTimeoutMs = opt_.timeoutMs;
  b.deadlineMs = opt_.deadlineMs;
  b.maxAttempts = opt_.maxAttempts;
  b.backoffMs = opt_.backoffMs;
  b.cancel = opt_.cancel;
  return boundedRequest(call, b);
}

std::vector<std::string> HotAisleClient::validateKey() {
  return readTeams(request("GET", "/user/", {}, {}).body);
}

bool HotAisleClient::registerSshKey(const std::string& publicKey) {
  const auto r = request("POST", "/user/ssh_keys/", nlohmann::json{{"authorized_key", publicKey}}.dump(), {409});
  return r.status != 409;
}

std::vector<Offer> HotAisleClient::offers() {
  const auto body = request("GET", teamPath("/virtual_machines/available/"), {}, {}).body;
  return readReply([&] { return readOffers(body); });
}

Vm HotAisleClient::provision(const Offer& offer) {
  const auto body = request("POST", teamPath("/virtual_machines/"), offer.specs.dump(), {}, /*repeatable=*/false).body;
  Vm vm = readProvisioned(body);
  if (vm.name.empty())
    throw ProviderError("Hot Aisle accepted the rent request but its reply names no VM: a VM may have been created",
                        200, Failure::BadReply, 1, /*ambiguous=*/true);
  if (vm.state.empty()) vm.state = "provisioning";
  return vm;
}

std::vector<Vm> HotAisleClient::vms() {
  const auto body = request("GET", teamPath("/virtual_machines/"), {}, {}).body;
  return readReply([&] { return readVms(body); });
}

std::string HotAisleClient::state(const std::string& vmName) {
  const QString vm = QString::fromUtf8(QUrl::toPercentEncoding(QString::fromStdString(vmName)));
  const auto body = request("GET", teamPath("/virtual_machines/" + vm + "/state/"), {}, {}).body;
  return readReply([&] { return readState(body); });
}

void HotAisleClient::waitRunning(const std::string& vmName, int pollMs, int timeoutSeconds,
                                 const std::atomic<bool>* cancel,
                                 const std::function<void(const std::string&)>& onState) {
  if (!cancel) cancel = opt_.cancel;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutSeconds);
  for (;;) {
    const std::string s = state(vmName);
    if (onState) onState(s);
    if (s == "running") return;
    if (s == "failed" || s == "error" || s == "deleted")
      throw ProviderError("VM " + vmName + " went to state '" + util::printable(s) + "' instead of running", 200,
                          Failure::BadReply);
    if (cancel && cancel->load()) throw ProviderError("cancelled while waiting for " + vmName, 0, Failure::Cancelled);
    if (std::chrono::steady_clock::now() > deadline)
      throw ProviderError("VM " + vmName + " not running after " + std::to_string(timeoutSeconds) +
                              " s (last state '" + util::printable(s) + "'); it may still bill: delete it",
                          0, Failure::NoAnswer);
    // Sleep in short slices: Cancel answers within a fraction of a second.
    for (const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(pollMs);
         std::chrono::steady_clock::now() < until && !(cancel && cancel->load());)
      QThread::msleep(static_cast<unsigned long>(std::min(pollMs, 50)));
  }
}

bool HotAisleClient::remove(const std::string& vmName) {
  const QString vm = QString::fromUtf8(QUrl::toPercentEncoding(QString::fromStdString(vmName)));
  const auto r = request("DELETE", teamPath("/virtual_machines/" + vm + "/?force=true"), {}, {404});
  return r.status != 404;
}

}  // namespace crosslab::providers
