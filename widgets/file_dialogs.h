#pragma once
// Every file dialog the window shows comes from here. Qt's own file dialog types each listed
// file by its content (QMimeDatabase opens and reads it) — and a native one may do the same
// in our process — so a dialog opened on a lab folder used to open and close lab.sqlite, -wal
// and -shm on the GUI thread, which drops every POSIX lock this process's SQLite connections
// hold on them (issue #11; core/util/lab_files.h). These dialogs are Qt's non-native dialog
// with an icon provider that types files by name only, never list a lab's database files,
// and refuse one typed by hand.

#include <QFileDialog>
#include <QString>

namespace crosslab::widgets {

class FileDialog : public QFileDialog {
  Q_OBJECT
 public:
  FileDialog(QWidget* parent, const QString& caption, const QString& dir, const QString& filter = {});

  // The static helpers: modal, empty when cancelled (like QFileDialog's own).
  static QString openFile(QWidget* parent, const QString& caption, const QString& dir, const QString& filter = {});
  static QString saveFile(QWidget* parent, const QString& caption, const QString& dir, const QString& filter = {});
  static QString existingFolder(QWidget* parent, const QString& caption, const QString& dir);
  // A folder that may not exist yet (a new lab): typed, or chosen among existing ones.
  static QString newFolder(QWidget* parent, const QString& caption, const QString& dir);

 public slots:
  void accept() override;
};

}  // namespace crosslab::widgets
