#include "core/train/train_events.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "core/model/safetensors_writer.h"

namespace crosslab::train {

std::string timedeltaText(double seconds) {
  long long s = seconds > 0 && std::isfinite(seconds) ? (long long)seconds : 0;
  const long long days = s / 86400;
  s %= 86400;
  char hms[32];
  std::snprintf(hms, sizeof hms, "%lld:%02lld:%02lld", s / 3600, (s / 60) % 60, s % 60);
  if (days == 0) return hms;
  return std::to_string(days) + (days == 1 ? " day, " : " days, ") + hms;
}

std::string eventJson(const TrainEvent& e) {
  nlohmann::ordered_json j;
  j["current_steps"] = e.step;
  j["total_steps"] = e.totalSteps;
  if (e.loss) j["loss"] = *e.loss;
  if (e.evalLoss) j["eval_loss"] = *e.evalLoss;
  if (e.lr) j["lr"] = *e.lr;
  j["epoch"] = e.epoch;
  j["percentage"] = e.totalSteps > 0 ? std::round(10000.0 * double(e.step) / double(e.totalSteps)) / 100.0 : 0.0;
  j["elapsed_time"] = timedeltaText(e.elapsedSeconds);
  j["remaining_time"] = timedeltaText(e.remainingSeconds);
  j["throughput"] = std::round(e.tokensPerSecond * 100.0) / 100.0;
  j["total_tokens"] = e.totalTokens;
  j["event"] = e.event;
  if (!e.message.empty()) j["message"] = e.message;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

EventLog EventLog::create(const std::filesystem::path& file) {
  std::ofstream out(file, std::ios::trunc);
  if (!out) throw std::runtime_error(file.string() + ": cannot write");
  return EventLog(file);
}

EventLog EventLog::resumeAt(const std::filesystem::path& file, std::int64_t keepUpToStep) {
  std::ifstream in(file);
  std::string kept, line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) continue;  // a line cut by the kill
    if (j.contains("current_steps") && j["current_steps"].is_number_integer() &&
        j["current_steps"].get<std::int64_t>() > keepUpToStep)
      continue;
    kept += line + "\n";
  }
  model::writeFileAtomically(file, kept);
  return EventLog(file);
}

void EventLog::append(const TrainEvent& e) const {
  std::ofstream out(file_, std::ios::app);
  out << eventJson(e) << "\n";
  out.flush();
  if (!out) throw std::runtime_error(file_.string() + ": cannot append");
}

}  // namespace crosslab::train
