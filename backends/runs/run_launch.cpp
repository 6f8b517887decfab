#include "backends/runs/run_launch.h"

#include <nlohmann/json.hpp>

namespace crosslab::backends {

std::string RunLaunch::toJson() const {
  return nlohmann::json{{"where", where},         {"engine", engine},       {"box", box},
                        {"box_id", boxId},        {"work_dir", workDir},    {"events", eventsFile},
                        {"output_dir", outputDir}, {"local_dir", localDir}, {"model_on_host", modelOnHost},
                        {"data_file", dataFile},  {"price_per_hour", pricePerHour}}
      .dump();
}

RunLaunch RunLaunch::fromJson(const std::string& text) {
  RunLaunch l;
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return l;
  l.where = j.value("where", l.where);
  l.engine = j.value("engine", l.engine);
  l.box = j.value("box", std::string());
  l.boxId = j.value("box_id", std::int64_t(0));
  l.workDir = j.value("work_dir", std::string());
  l.eventsFile = j.value("events", std::string());
  l.outputDir = j.value("output_dir", std::string());
  l.localDir = j.value("local_dir", std::string());
  l.modelOnHost = j.value("model_on_host", std::string());
  l.dataFile = j.value("data_file", std::string());
  l.pricePerHour = j.value("price_per_hour", 0.0);
  return l;
}

}  // namespace crosslab::backends
