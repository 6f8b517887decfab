#pragma once
// The lab the GUI has open: a Qt-facing owner of core's LabStore. Opening either fully
// succeeds (the new lab replaces the old one) or changes nothing and reports why.

#include <QObject>
#include <QString>
#include <memory>

namespace crosslab::store {
class LabStore;
struct LabInfo;
}  // namespace crosslab::store

namespace crosslab::backends {

class LabSession : public QObject {
  Q_OBJECT
 public:
  explicit LabSession(QObject* parent = nullptr);
  ~LabSession() override;

  // On failure returns false, sets *error to a one-line reason, keeps the current lab.
  bool requestOpen(const QString& dir, QString* error);
  bool requestCreate(const QString& dir, const QString& name, QString* error);

  bool isOpen() const { return store_ != nullptr; }
  QString path() const { return path_; }
  QString name() const { return name_; }
  int schemaVersion() const { return schemaVersion_; }
  // Row count of a lab table; 0 when no lab is open.
  qint64 count(const QString& table) const;
  store::LabStore* store() { return store_.get(); }

 signals:
  void labChanged();

 private:
  void adopt(std::unique_ptr<store::LabStore> store);

  std::unique_ptr<store::LabStore> store_;
  QString path_;
  QString name_;
  int schemaVersion_ = 0;
};

}  // namespace crosslab::backends
