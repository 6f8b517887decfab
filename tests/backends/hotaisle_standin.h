#pragma once
// A local stand-in for Hot Aisle's REST API (interfaces.md), on 127.0.0.1: Token auth
// (401 bad key, 403 key without permission), SSH key registration (409 the second
// time), offers with OnDemandPrice cents, provision, state that turns "running" after a
// few polls, the team's VM list, delete (404 when gone), and injectable failures: 429/5xx
// before handling (retry tests), and a provision that creates the VM and then answers
// 500 (an ambiguous failure).
// The real service cannot be reached from tests; this speaks its documented interface.

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "http_standin.h"

class HotAisleStandin {
 public:
  static constexpr const char* kKey = "ha-test-key-0123456789";
  static constexpr const char* kNoPermissionKey = "ha-readonly-key-0123456789";
  static constexpr const char* kTeam = "lab";

  // `team`: the team handle its routes answer for (the docs' examples say "myteam").
  explicit HotAisleStandin(const std::string& team = kTeam);
  int start() { return http_.start(); }
  std::string baseUrl() const { return "http://127.0.0.1:" + std::to_string(http_.port()) + "/api"; }

  // The next `n` requests fail with `status` (429 or 5xx) before being handled.
  void failNext(int n, int status) {
    failures_ = n;
    failStatus_ = status;
  }
  int requests() const { return requests_.load(); }
  // Provision POSTs received (whatever was answered).
  int provisionPosts() const { return provisionPosts_.load(); }
  // The next provision creates its VM and then answers `status` (e.g. 500) without it.
  void failProvisionAfterCreate(int status) { provisionFailAfterCreate_ = status; }
  // VM names the team holds now.
  std::vector<std::string> vmNames();
  // DELETE requests received, with their query string ("force=true").
  std::vector<std::string> deletes();
  int pollsUntilRunning = 2;
  // The next VM is named vm-N (vm-1 first).
  void setNextVmNumber(int n) { nextVm_ = n; }
  std::string ipAddress = "127.0.0.1";
  std::string lastProvisionBody();
  bool sawKeyInBody() const { return sawKeyInBody_.load(); }

 private:
  bool gate(const httplib::Request& req, httplib::Response& res);
  HttpStandin http_;
  std::atomic<int> requests_{0};
  std::atomic<int> provisionPosts_{0};
  std::atomic<int> provisionFailAfterCreate_{0};
  std::vector<std::string> deletes_;
  std::atomic<int> failures_{0};
  int failStatus_ = 503;
  std::mutex mutex_;
  std::set<std::string> keys_;
  std::map<std::string, int> vms_;  // name -> state polls so far
  int nextVm_ = 1;
  std::string lastProvision_;
  std::atomic<bool> sawKeyInBody_{false};
};
