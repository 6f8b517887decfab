#include "backends/runs/run_inputs.h"

#include <QDir>
#include <QFileInfo>

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "core/train/sft_data.h"
#include "core/venues/preflight.h"

namespace crosslab::backends {
namespace {

// The first record of a JSON array or JSON Lines file, without reading a big file whole.
nlohmann::json firstRecord(const QString& path) {
  std::ifstream in(path.toStdString(), std::ios::binary);
  std::string head(64 * 1024, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  const auto start = head.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) return {};
  if (head[start] == '[') {
    // The first object of the array: balance braces outside strings.
    const auto open = head.find('{', start);
    if (open == std::string::npos) return {};
    int depth = 0;
    bool str = false;
    for (size_t i = open; i < head.size(); ++i) {
      const char c = head[i];
      if (str) {
        if (c == '\\') ++i;
        else if (c == '"') str = false;
      } else if (c == '"') {
        str = true;
      } else if (c == '{') {
        ++depth;
      } else if (c == '}' && --depth == 0) {
        return nlohmann::json::parse(head.substr(open, i - open + 1), nullptr, false);
      }
    }
    return {};
  }
  return nlohmann::json::parse(head.substr(start, head.find('\n', start) - start), nullptr, false);
}

}  // namespace

QStringList labModels(const QString& labPath) {
  QStringList out;
  const QDir models(QDir(labPath).filePath("models"));
  for (const auto& info : models.entryInfoList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name))
    if (QFileInfo::exists(QDir(info.absoluteFilePath()).filePath("config.json"))) out << info.absoluteFilePath();
  return out;
}

QStringList labTrainingSets(const QString& labPath) {
  QStringList out;
  const QDir data(QDir(labPath).filePath("data"));
  for (const auto& info : data.entryInfoList({"*.json", "*.jsonl"}, QDir::Files, QDir::Name)) {
    const auto r = firstRecord(info.absoluteFilePath());
    if (r.is_object() && (r.contains("instruction") || r.contains("conversations") || r.contains("messages")))
      out << info.absoluteFilePath();
  }
  return out;
}

QStringList modelProblems(const QString& dir, bool needTokenizerConfig) {
  if (dir.trimmed().isEmpty()) return {QObject::tr("choose a base model folder")};
  if (!QFileInfo(dir).isDir()) return {QObject::tr("the base model folder %1 does not exist").arg(dir)};
  venues::PreflightReport report;
  venues::checkModelFolder(dir.toStdString(), report, needTokenizerConfig);
  QStringList out;
  for (const auto& f : report.findings)
    if (f.level == venues::Finding::Level::Error)
      out << QObject::tr("base model: %1").arg(QString::fromStdString(f.message));
  return out;
}

QStringList dataProblems(const QString& path, const QString& datasets, const QString& formatting, int* examples) {
  if (examples) *examples = 0;
  if (path.trimmed().isEmpty()) return {QObject::tr("choose training data")};
  const QFileInfo info(path);
  if (!info.exists()) return {QObject::tr("the training data %1 does not exist").arg(path)};
  try {
    std::vector<train::Example> all;
    if (info.isDir()) {
      if (datasets.trimmed().isEmpty()) return {QObject::tr("name the dataset(s) of %1's dataset_info.json").arg(path)};
      all = train::loadDatasets(path.toStdString(), datasets.toStdString());
    } else {
      all = train::loadDataFile(path.toStdString(), formatting.isEmpty() ? "auto" : formatting.toStdString());
    }
    if (all.empty()) return {QObject::tr("the training data %1 holds no example").arg(path)};
    if (examples) *examples = int(all.size());
    return {};
  } catch (const std::exception& e) {
    return {QObject::tr("training data: %1").arg(QString::fromStdString(e.what()))};
  }
}

}  // namespace crosslab::backends
