#include "widgets/review_snapshot.h"

namespace crosslab::widgets {

int ReviewSnapshot::find(size_t question, const std::string& model) const {
  auto it = byQuestionModel.find({question, model});
  return it == byQuestionModel.end() ? -1 : static_cast<int>(it->second);
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
  for (const auto& s : store.samples(evalSet.sha256)) {
    if (!evalSet.find(s.questionId)) continue;  // cannot happen for a matching SHA-256; be safe
    records.push_back({s.questionId, s.model, s.output});
    ids.push_back(s.id);
  }
  const std::string sha = evalSet.sha256;
  auto snapshot = makeReviewSnapshot(std::move(evalSet), std::move(records), std::move(ids));
  snapshot->verdicts = store.currentVerdicts();
  snapshot->table = eval::buildInstrumentTable(store, sha);
  snapshot->stamp = stamp;
  return snapshot;
}

}  // namespace crosslab::widgets
