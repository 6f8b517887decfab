#include "widgets/file_dialogs.h"

#include <QFileIconProvider>
#include <QFileInfo>
#include <QMessageBox>
#include <QMimeDatabase>
#include <QSortFilterProxyModel>

#include "core/util/lab_files.h"

namespace crosslab::widgets {
namespace {

bool isLabDatabase(const QString& path) { return util::isLabDatabaseFile(QFileInfo(path).filePath().toStdString()); }

// Types and icons by file name alone: QFileIconProvider's own type() and icon() ask
// QMimeDatabase, which opens files whose name is not conclusive (lab.sqlite-wal) and reads them.
class NameOnlyIconProvider : public QFileIconProvider {
 public:
  NameOnlyIconProvider() { setOptions(DontUseCustomDirectoryIcons); }

  QIcon icon(IconType type) const override { return QFileIconProvider::icon(type); }
  QIcon icon(const QFileInfo& info) const override {
    if (info.isDir()) return QFileIconProvider::icon(Folder);
    const QIcon themed = QIcon::fromTheme(mimeByName(info.fileName()).iconName());
    return themed.isNull() ? QFileIconProvider::icon(File) : themed;
  }
  QString type(const QFileInfo& info) const override {
    if (info.isDir()) return QObject::tr("Folder");
    if (util::isLabDatabaseName(info.fileName().toStdString())) return QObject::tr("crosslab lab database");
    const QMimeType mime = mimeByName(info.fileName());
    return mime.comment().isEmpty() ? mime.name() : mime.comment();
  }

 private:
  QMimeType mimeByName(const QString& name) const {
    const QList<QMimeType> byName = mimes_.mimeTypesForFileName(name);  // globs only, no file access
    return byName.isEmpty() ? mimes_.mimeTypeForName("application/octet-stream") : byName.front();
  }
  QMimeDatabase mimes_;
};

// Hides lab.sqlite and SQLite's files beside it from the listing.
class HideLabDatabase : public QSortFilterProxyModel {
 public:
  using QSortFilterProxyModel::QSortFilterProxyModel;

 protected:
  bool filterAcceptsRow(int row, const QModelIndex& parent) const override {
    const QString name = sourceModel()->index(row, 0, parent).data(Qt::DisplayRole).toString();
    return !util::isLabDatabaseName(name.toStdString());
  }
};

QFileIconProvider* nameOnlyIcons() {
  static NameOnlyIconProvider provider;  // outlives every dialog
  return &provider;
}

QString run(FileDialog& dialog) {
  return dialog.exec() == QDialog::Accepted && !dialog.selectedFiles().isEmpty() ? dialog.selectedFiles().front()
                                                                                   : QString();
}

}  // namespace

FileDialog::FileDialog(QWidget* parent, const QString& caption, const QString& dir, const QString& filter)
    : QFileDialog(parent, caption, dir, filter) {
  setObjectName("fileDialog");
  setOption(DontUseNativeDialog);  // a platform dialog would type files in our process its own way
  setIconProvider(nameOnlyIcons());
  setProxyModel(new HideLabDatabase(this));
}

void FileDialog::accept() {
  for (const QString& f : selectedFiles())
    if (isLabDatabase(f)) {
      QMessageBox::warning(this, windowTitle(),
                           tr("%1 is a lab's database. crosslab reads and writes it only through SQLite; "
                              "choose another file.")
                               .arg(QFileInfo(f).fileName()));
      return;
    }
  QFileDialog::accept();
}

QString FileDialog::openFile(QWidget* parent, const QString& caption, const QString& dir, const QString& filter) {
  FileDialog d(parent, caption, dir, filter);
  d.setFileMode(ExistingFile);
  d.setAcceptMode(AcceptOpen);
  return run(d);
}

QString FileDialog::saveFile(QWidget* parent, const QString& caption, const QString& dir, const QString& filter) {
  FileDialog d(parent, caption, dir, filter);
  d.setFileMode(AnyFile);
  d.setAcceptMode(AcceptSave);
  return run(d);
}

QString FileDialog::existingFolder(QWidget* parent, const QString& caption, const QString& dir) {
  FileDialog d(parent, caption, dir);
  d.setFileMode(Directory);
  d.setOption(ShowDirsOnly);
  d.setAcceptMode(AcceptOpen);
  return run(d);
}

QString FileDialog::newFolder(QWidget* parent, const QString& caption, const QString& dir) {
  FileDialog d(parent, caption, dir);
  d.setFileMode(AnyFile);
  d.setOption(ShowDirsOnly);
  d.setAcceptMode(AcceptSave);
  return run(d);
}

}  // namespace crosslab::widgets
