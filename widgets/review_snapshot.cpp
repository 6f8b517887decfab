#include "widgets/review_snapshot.h"

namespace crosslab::widgets {

int ReviewSnapshot::find(size_t question, const std::string& model) const {
  auto it = byQuestionModel.find({question, model});
  return it == byQuestionModel.end() ? -1 : static_cast<int>(it->second);
}

eval::InstrumentTable ReviewSnapshot::instrumentTable() const {
  eval::SampleLabels labels;
  for (const auto& [id, byName] : verdicts)
    for (const auto& [name, v] : byName) labels[id][name] = v.verdict;
  return eval::checkedInstrumentTable(report, sampleIds, labels, published);
}

std::shared_ptr<ReviewSnapshot> makeReviewSnapshot(eval::EvalSet evalSet, std::vector<eval::OutputRecord> records,
                                                   std::vector<std::int64_t> sampleIds) {
  auto s = std::make_shared<ReviewSnapshot>();
  s->evalSet = std::move(evalSet);
  s->records = std::move(records);
  s->sampleIds = std::move(sampleIds);
  s->report = eval::checkOutputs(s->evalSet, s->records);
  s->models = s->report.models;
  for (size_t i = 0; i < s->records.size(); ++i)
    s->byQuestionModel[{s->evalSet.indexById.at(s->records[i].id), s->records[i].model}] = i;
  return s;
}

std::shared_ptr<ReviewSnapshot> loadReviewSnapshot(const std::string& labDir, const std::string& evalPath,
                                                   const std::string& importOutputs) {
  auto evalSet = eval::loadEvalSet(evalPath);
  auto lab = store::LabStore::open(labDir);
  eval::EvalStore store(lab);
  if (!importOutputs.empty()) {
    const auto outputs = eval::loadOutputs(importOutputs);
    eval::recordCheck(store, eval::checkOutputs(evalSet, outputs), importOutputs);
  }
  const std::string stamp = store.changeStamp();
  std::vector<eval::OutputRecord> records;
  std::vector<std::int64_t> ids;
  store.outputsFor(evalSet, records, ids);
  auto snapshot = makeReviewSnapshot(std::move(evalSet), std::move(records), std::move(ids));
  snapshot->verdicts = store.currentVerdicts();
  snapshot->stamp = stamp;
  snapshot->pairVerdicts = store.currentPairVerdicts("human:pair");
  snapshot->published = store.publishedScores();
  return snapshot;
}

}  // namespace crosslab::widgets
