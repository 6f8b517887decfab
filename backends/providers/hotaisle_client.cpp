#include "backends/providers/hotaisle_client.h"

#include <QThread>
#include <QUrl>

#include <algorithm>
#include <chrono>

namespace crosslab::providers {
namespace {

int intOr(const nlohmann::json& j, const char* key, int fallback) {
  auto it = j.find(key);
  return (it != j.end() && it->is_number()) ? it->get<int>() : fallback;
}

double numberOr(const nlohmann::json& j, const char* key, double fallback) {
  auto it = j.find(key);
  return (it != j.end() && it->is_number()) ? it->get<double>() : fallback;
}

std::string stringOr(const nlohmann::json& j, const char* key, const std::string& fallback) {
  auto it = j.find(key);
  return (it != j.end() && it->is_string()) ? *it->get_ptr<const std::string*>() : fallback;
}

}  // namespace

nlohmann::json Offer::toJson() const {
  return {{"gpu_model", gpuModel}, {"gpu_count", gpuCount},   {"vcpus", vcpus},
          {"ram_gb", ramGb},       {"disk_gb", diskGb},       {"price_per_hour", pricePerHour},
          {"price_per_gpu_hour", pricePerGpuHour()}, {"min_minutes", minMinutes}, {"quantity", quantity}};
}

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
  const auto j = nlohmann::json::parse(request("GET", "/user/", {}, {}).body, nullptr, false);
  std::vector<std::string> teams;
  if (j.is_object() && j.contains("teams") && j.at("teams").is_array())
    for (const auto& t : j.at("teams"))
      if (t.is_object() && t.contains("handle") && t.at("handle").is_string()) teams.push_back(t.at("handle"));
  return teams;
}

bool HotAisleClient::registerSshKey(const std::string& publicKey) {
  const auto r = request("POST", "/user/ssh_keys/", nlohmann::json{{"authorized_key", publicKey}}.dump(), {409});
  return r.status != 409;
}

Offer HotAisleClient::parseOffer(const nlohmann::json& j) {
  Offer o;
  o.specs = j.value("Specs", nlohmann::json::object());
  const auto& s = o.specs;
  if (s.contains("gpus") && s.at("gpus").is_array() && !s.at("gpus").empty()) {
    const auto& g = s.at("gpus").at(0);
    o.gpuModel = stringOr(g, "model", "?");
    for (const auto& gpu : s.at("gpus")) o.gpuCount += intOr(gpu, "count", 0);
  }
  o.vcpus = intOr(s, "cpu_cores", 0);
  if (o.vcpus == 0 && s.contains("cpus") && s.at("cpus").is_object())
    o.vcpus = intOr(s.at("cpus"), "cores", 0) * std::max(1, intOr(s.at("cpus"), "count", 1));
  o.ramGb = numberOr(s, "ram_capacity", 0) / 1e9;
  o.diskGb = numberOr(s, "disk_capacity", 0) / 1e9;
  o.pricePerHour = numberOr(j, "OnDemandPrice", 0) / 100.0;  // US cents per VM-hour
  o.minMinutes = intOr(j, "MinimumReservationMinutes", 0);
  o.quantity = intOr(j, "Quantity", -1);
  return o;
}

std::vector<Offer> HotAisleClient::offers() {
  const auto body = request("GET", teamPath("/virtual_machines/available/"), {}, {}).body;
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_array())
    throw ProviderError("Hot Aisle returned offers that are not a JSON array", 200, Failure::BadReply);
  std::vector<Offer> out;
  for (const auto& o : j)
    if (o.is_object()) out.push_back(parseOffer(o));
  return out;
}

Vm HotAisleClient::parseVm(const nlohmann::json& j) {
  Vm vm;
  if (!j.is_object()) return vm;
  if (auto it = j.find("name"); it != j.end() && !it->is_null()) vm.name = it->is_string() ? it->get<std::string>() : it->dump();
  vm.ipAddress = stringOr(j, "ip_address", "");
  vm.state = stringOr(j, "state", "");
  const auto specs = j.contains("Specs") ? j.at("Specs") : j.value("specs", nlohmann::json::object());
  if (specs.is_object() && specs.contains("gpus") && specs.at("gpus").is_array())
    for (const auto& g : specs.at("gpus")) {
      if (vm.gpuModel.empty()) vm.gpuModel = stringOr(g, "model", "");
      vm.gpuCount += intOr(g, "count", 0);
    }
  return vm;
}

Vm HotAisleClient::provision(const Offer& offer) {
  const auto body = request("POST", teamPath("/virtual_machines/"), offer.specs.dump(), {}, /*repeatable=*/false).body;
  Vm vm = parseVm(nlohmann::json::parse(body, nullptr, false));
  if (vm.name.empty())
    throw ProviderError("Hot Aisle accepted the rent request but its reply names no VM: a VM may have been created",
                        200, Failure::BadReply, 1, /*ambiguous=*/true);
  if (vm.state.empty()) vm.state = "provisioning";
  return vm;
}

std::vector<Vm> HotAisleClient::vms() {
  const auto j = nlohmann::json::parse(request("GET", teamPath("/virtual_machines/"), {}, {}).body, nullptr, false);
  // A plain array, or a paginated {"results": [...]} (Django REST framework's shape).
  const nlohmann::json* list = &j;
  if (j.is_object() && j.contains("results")) list = &j.at("results");
  if (!list->is_array())
    throw ProviderError("Hot Aisle returned a VM list that is not a JSON array", 200, Failure::BadReply);
  std::vector<Vm> out;
  for (const auto& v : *list)
    if (Vm vm = parseVm(v); !vm.name.empty()) out.push_back(std::move(vm));
  return out;
}

std::string HotAisleClient::state(const std::string& vmName) {
  const QString vm = QString::fromUtf8(QUrl::toPercentEncoding(QString::fromStdString(vmName)));
  const auto body = request("GET", teamPath("/virtual_machines/" + vm + "/state/"), {}, {}).body;
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("state") || !j.at("state").is_string())
    throw ProviderError("Hot Aisle's state reply has no state", 200, Failure::BadReply);
  return j.at("state").get<std::string>();
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
      throw ProviderError("VM " + vmName + " went to state '" + s + "' instead of running", 200, Failure::BadReply);
    if (cancel && cancel->load()) throw ProviderError("cancelled while waiting for " + vmName, 0, Failure::Cancelled);
    if (std::chrono::steady_clock::now() > deadline)
      throw ProviderError("VM " + vmName + " not running after " + std::to_string(timeoutSeconds) +
                              " s (last state '" + s + "'); it may still bill: delete it",
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
