#include "hotaisle_standin.h"

#include <nlohmann/json.hpp>

namespace {

// Two shelf offers shaped like the seed lab's: 1x MI300X $2.99/h 1-minute minimum,
// 2x MI300X $5.98/h 60-minute minimum. Capacities are bytes, price is US cents.
nlohmann::json offers() {
  auto specs = [](int gpus, int cores, double ramGiB) {
    return nlohmann::json{{"cpu_cores", cores},
                          {"ram_capacity", ramGiB * 1e9},
                          {"disk_capacity", 12e12},
                          {"cpus", {{"count", 1}, {"manufacturer", "Intel"}, {"model", "Xeon 8462Y+"}, {"cores", cores}, {"frequency", 2800000000}}},
                          {"gpus", {{{"count", gpus}, {"manufacturer", "AMD"}, {"model", "MI300X"}}}}};
  };
  return nlohmann::json::array({
      {{"Specs", specs(2, 26, 448)}, {"OnDemandPrice", 598}, {"Quantity", 1}, {"MinimumReservationMinutes", 60}},
      {{"Specs", specs(1, 8, 224)}, {"OnDemandPrice", 299}, {"Quantity", 3}, {"MinimumReservationMinutes", 1}},
  });
}

void json(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

}  // namespace

HotAisleStandin::HotAisleStandin(const std::string& teamHandle) {
  auto& s = http_.server();
  s.Get("/api/user/", [this, teamHandle](const httplib::Request& req, httplib::Response& res) {
    if (!gate(req, res)) return;
    json(res, 200, {{"username", "tester"}, {"teams", {{{"handle", teamHandle}}}}});
  });
  s.Post("/api/user/ssh_keys/", [this](const httplib::Request& req, httplib::Response& res) {
    if (!gate(req, res)) return;
    const auto j = nlohmann::json::parse(req.body, nullptr, false);
    if (!j.is_object() || !j.contains("authorized_key")) return json(res, 400, {{"detail", "authorized_key required"}});
    std::lock_guard<std::mutex> lock(mutex_);
    const bool added = keys_.insert(j["authorized_key"].get<std::string>()).second;
    json(res, added ? 201 : 409, {{"detail", added ? "created" : "already exists"}});
  });
  const std::string team = "/api/teams/" + teamHandle;
  s.Get(team + "/virtual_machines/available/", [this](const httplib::Request& req, httplib::Response& res) {
    if (!gate(req, res)) return;
    json(res, 200, offers());
  });
  s.Post(team + "/virtual_machines/", [this](const httplib::Request& req, httplib::Response& res) {
    ++provisionPosts_;
    if (!gate(req, res)) return;
    std::lock_guard<std::mutex> lock(mutex_);
    lastProvision_ = req.body;
    const auto j = nlohmann::json::parse(req.body, nullptr, false);
    if (!j.is_object() || !j.contains("gpus")) return json(res, 400, {{"detail", "Specs required"}});
    const std::string name = "vm-" + std::to_string(nextVm_++);
    vms_[name] = 0;
    if (const int status = provisionFailAfterCreate_.exchange(0))  // created, but the answer is lost
      return json(res, status, {{"detail", "Internal server error"}});
    json(res, 201, {{"name", name}, {"ip_address", ipAddress}});
  });
  s.Get(team + "/virtual_machines/", [this](const httplib::Request& req, httplib::Response& res) {
    if (!gate(req, res)) return;
    std::lock_guard<std::mutex> lock(mutex_);
    nlohmann::json list = nlohmann::json::array();
    for (const auto& [name, polls] : vms_)
      list.push_back({{"name", name}, {"ip_address", ipAddress},
                      {"state", polls > pollsUntilRunning ? "running" : "provisioning"},
                      {"Specs", {{"gpus", {{{"count", 1}, {"manufacturer", "AMD"}, {"model", "MI300X"}}}}}}});
    json(res, 200, list);
  });
  s.Get(team + R"(/virtual_machines/([^/]+)/state/)", [this](const httplib::Request& req, httplib::Response& res) {
    if (!gate(req, res)) return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = vms_.find(req.matches[1]);
    if (it == vms_.end()) return json(res, 404, {{"detail", "Not found."}});
    const int polls = ++it->second;
    json(res, 200, {{"state", polls > pollsUntilRunning ? "running" : "provisioning"}});
  });
  s.Delete(team + R"(/virtual_machines/([^/]+)/)", [this](const httplib::Request& req, httplib::Response& res) {
    if (!gate(req, res)) return;
    std::lock_guard<std::mutex> lock(mutex_);
    std::string query;
    for (const auto& [k, v] : req.params) query += (query.empty() ? "" : "&") + k + "=" + v;
    deletes_.push_back(std::string(req.matches[1]) + "?" + query);
    if (vms_.erase(req.matches[1]) == 0) return json(res, 404, {{"detail", "Not found."}});
    res.status = 204;
  });
}

bool HotAisleStandin::gate(const httplib::Request& req, httplib::Response& res) {
  ++requests_;
  if (req.body.find(kKey) != std::string::npos) sawKeyInBody_ = true;
  if (failures_ > 0) {
    --failures_;
    res.set_header("Retry-After", "0");
    json(res, failStatus_, {{"detail", "try again"}});
    return false;
  }
  const std::string auth = req.get_header_value("Authorization");
  if (auth == std::string("Token ") + kNoPermissionKey && req.method != "GET") {
    json(res, 403, {{"detail", "You do not have permission to perform this action."}});
    return false;
  }
  if (auth != std::string("Token ") + kKey && auth != std::string("Token ") + kNoPermissionKey) {
    json(res, 401, {{"detail", "Invalid token."}});
    return false;
  }
  return true;
}

std::string HotAisleStandin::lastProvisionBody() {
  std::lock_guard<std::mutex> lock(mutex_);
  return lastProvision_;
}

std::vector<std::string> HotAisleStandin::vmNames() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [name, polls] : vms_) out.push_back(name);
  return out;
}

std::vector<std::string> HotAisleStandin::deletes() {
  std::lock_guard<std::mutex> lock(mutex_);
  return deletes_;
}
