#include "backends/providers/hotaisle_client.h"

#include <QEventLoop>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QThread>
#include <QTimer>
#include <QUrl>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

namespace crosslab::providers {
namespace {

bool retryable(int status) { return status == 429 || status >= 500; }

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

std::string shortBody(const std::string& body) {
  std::string s = body.substr(0, 200);
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
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
  if (opt_.team.isEmpty()) throw ProviderError("a Hot Aisle team handle is needed (--team)", 0);
  return "/teams/" + QString::fromUtf8(QUrl::toPercentEncoding(opt_.team)) + rest;
}

HotAisleClient::Reply HotAisleClient::once(const char* method, const QString& path, const std::string& body,
                                           QString* networkError, int* retryAfterS) {
  QNetworkAccessManager nam;
  QNetworkRequest req(QUrl(opt_.baseUrl + path));
  req.setRawHeader("Authorization", "Token " + opt_.apiKey.toUtf8());
  req.setRawHeader("accept", "application/json");
  req.setHeader(QNetworkRequest::ContentTypeHeader, "application/json");
  req.setTransferTimeout(opt_.timeoutMs);
  QNetworkReply* reply = nam.sendCustomRequest(req, method, QByteArray::fromStdString(body));
  QEventLoop loop;
  QObject::connect(reply, &QNetworkReply::finished, &loop, &QEventLoop::quit);
  loop.exec();
  Reply r;
  r.status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
  r.body = reply->readAll().toStdString();
  *retryAfterS = reply->rawHeader("Retry-After").toInt();
  if (r.status == 0) *networkError = reply->errorString();
  reply->deleteLater();
  return r;
}

HotAisleClient::Reply HotAisleClient::request(const char* method, const QString& path, const std::string& body,
                                              const std::vector<int>& okStatuses) {
  int delayMs = opt_.backoffMs;
  for (int attempt = 1;; ++attempt) {
    QString netError;
    int retryAfter = 0;
    Reply r = once(method, path, body, &netError, &retryAfter);
    const bool ok = std::find(okStatuses.begin(), okStatuses.end(), r.status) != okStatuses.end() ||
                    (r.status >= 200 && r.status < 300);
    if (ok) return r;
    if (r.status == 401) throw ProviderError("Hot Aisle rejected the API key (HTTP 401): check the key", 401);
    if (r.status == 403)
      throw ProviderError("the Hot Aisle API key lacks permission for this request (HTTP 403)", 403);
    const bool again = (r.status == 0 || retryable(r.status)) && attempt < opt_.maxAttempts;
    if (!again) {
      if (r.status == 0)
        throw ProviderError("cannot reach Hot Aisle at " + opt_.baseUrl.toStdString() + ": " + netError.toStdString(), 0);
      throw ProviderError(std::string(method) + " " + path.toStdString() + " failed: HTTP " +
                              std::to_string(r.status) + " " + shortBody(r.body),
                          r.status);
    }
    const int waitMs = retryAfter > 0 ? std::min(retryAfter, 60) * 1000 : delayMs;
    spdlog::info("hotaisle: {} {} -> {}; retry {} in {} ms", method, path.toStdString(), r.status, attempt, waitMs);
    QThread::msleep(static_cast<unsigned long>(waitMs));
    delayMs = std::min(delayMs * 2, 30000);
  }
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
  if (!j.is_array()) throw ProviderError("Hot Aisle returned offers that are not a JSON array", 200);
  std::vector<Offer> out;
  for (const auto& o : j)
    if (o.is_object()) out.push_back(parseOffer(o));
  return out;
}

Vm HotAisleClient::provision(const Offer& offer) {
  const auto body = request("POST", teamPath("/virtual_machines/"), offer.specs.dump(), {}).body;
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("name")) throw ProviderError("Hot Aisle's provision reply has no VM name", 200);
  Vm vm;
  const auto& name = j.at("name");
  vm.name = name.is_string() ? name.get<std::string>() : name.dump();
  vm.ipAddress = stringOr(j, "ip_address", "");
  vm.state = stringOr(j, "state", "provisioning");
  return vm;
}

std::string HotAisleClient::state(const std::string& vmName) {
  const auto body = request("GET", teamPath("/virtual_machines/" + QString::fromStdString(vmName) + "/state/"), {}, {}).body;
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("state") || !j.at("state").is_string())
    throw ProviderError("Hot Aisle's state reply has no state", 200);
  return j.at("state").get<std::string>();
}

void HotAisleClient::waitRunning(const std::string& vmName, int pollMs, int timeoutSeconds,
                                 const std::atomic<bool>* cancel,
                                 const std::function<void(const std::string&)>& onState) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutSeconds);
  for (;;) {
    const std::string s = state(vmName);
    if (onState) onState(s);
    if (s == "running") return;
    if (s == "failed" || s == "error" || s == "deleted")
      throw ProviderError("VM " + vmName + " went to state '" + s + "' instead of running", 200);
    if (cancel && cancel->load()) throw ProviderError("cancelled while waiting for " + vmName, 0);
    if (std::chrono::steady_clock::now() > deadline)
      throw ProviderError("VM " + vmName + " not running after " + std::to_string(timeoutSeconds) +
                              " s (last state '" + s + "'); it may still bill: delete it",
                          0);
    QThread::msleep(static_cast<unsigned long>(pollMs));
  }
}

bool HotAisleClient::remove(const std::string& vmName) {
  const auto r = request("DELETE", teamPath("/virtual_machines/" + QString::fromStdString(vmName) + "/"), {}, {404});
  return r.status != 404;
}

}  // namespace crosslab::providers
