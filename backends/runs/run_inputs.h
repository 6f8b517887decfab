#pragma once
// What a new run can be made of in a lab, and whether it is fit to start: the lab's own
// base models (models/*) and training sets (data/*), a model folder's completeness, a
// training set's readability. Used by the New Run dialog before Start is enabled.

#include <QString>
#include <QStringList>

namespace crosslab::backends {

// Absolute paths of models/* folders that hold a Hugging Face checkpoint (config.json).
QStringList labModels(const QString& labPath);
// Absolute paths of data/* files whose first record is alpaca or sharegpt (eval sets and
// dataset_info.json are not training sets).
QStringList labTrainingSets(const QString& labPath);

// Problems with a model folder as a base for training: missing, not a checkpoint, a
// missing or truncated shard, no tokenizer. `needTokenizerConfig` for LLaMA-Factory.
QStringList modelProblems(const QString& dir, bool needTokenizerConfig);
// Problems reading a training set: a file (alpaca/sharegpt JSON or JSON Lines), or a
// folder with dataset_info.json naming `datasets`. `*examples` gets the count.
QStringList dataProblems(const QString& path, const QString& datasets, const QString& formatting, int* examples);

}  // namespace crosslab::backends
