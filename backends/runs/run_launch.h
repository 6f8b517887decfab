#pragma once
// How a run was launched — where it lives, its work folder and events file — kept with
// the run (runs.launch_json) so that any window that opens the lab later follows it
// again, wherever it trains.

#include <cstdint>
#include <string>

namespace crosslab::backends {

struct RunLaunch {
  std::string where = "local";      // "local" (this machine) or "box"
  std::string engine = "crosslab";  // crosslab | llamafactory
  std::string box;                  // box name (where == "box")
  std::int64_t boxId = 0;
  std::string workDir;              // on the host; local: the run folder
  std::string eventsFile;           // relative to workDir
  std::string outputDir;            // relative to workDir: the adapter (box runs)
  std::string localDir;             // the lab's runs/<name>: recipe, fetched adapter
  std::string modelOnHost;          // where the weights are on the host
  std::string dataFile;             // local training data
  double pricePerHour = 0;          // the box's price, for the meter of a stall

  bool onBox() const { return where == "box"; }
  std::string toJson() const;
  // Empty or unreadable text: a default (local) launch with an empty workDir.
  static RunLaunch fromJson(const std::string& text);
};

}  // namespace crosslab::backends
