#pragma once
// The report's sections, one function each, filling a Document from the store (internal
// to core/report).

#include <map>
#include <string>
#include <vector>

#include "core/report/document.h"
#include "core/report/portability.h"

namespace crosslab::store {
class LabStore;
}

namespace crosslab::report {

struct SectionContext {
  store::LabStore& lab;
  Document& doc;
  double now;
};

void addTraining(SectionContext& ctx);
void addServing(SectionContext& ctx);
void addQuality(SectionContext& ctx);
void addPortability(SectionContext& ctx);
void addLadder(SectionContext& ctx);
void addFriction(SectionContext& ctx);
void addLedger(SectionContext& ctx);

// Shared by sections: "0.225", "12.5", "$0.29".
std::string fixedText(double v, int decimals);
// The runs of kind train as the report and the verdict see them.
struct TrainRun {
  std::int64_t id = 0;
  std::string name, status, venue, hardware, model, runDir, recipeJson, startedAt, endedAt;
  std::optional<std::int64_t> boxId, totalSteps;
  std::optional<double> pricePerHour;
  std::vector<std::pair<double, double>> loss;  // (step, loss)
  std::int64_t firstStep = 0, lastStep = 0;
  std::string weightsSha, dataSha;  // recorded on the run, else computed from local files
};
std::vector<TrainRun> readTrainRuns(store::LabStore& lab);
// A run's recipe without paths and logging (what makes two runs the same recipe), hashed.
std::string recipeKey(const std::string& recipeJson);

}  // namespace crosslab::report
