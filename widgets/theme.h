#pragma once
// Light and dark palettes. "System" follows the platform theme's palette (and its
// changes); Light and Dark are fixed Fusion palettes.

#include <QObject>
#include <QPalette>

namespace crosslab::widgets {

class Theme : public QObject {
  Q_OBJECT
 public:
  enum class Mode { System, Light, Dark };
  Q_ENUM(Mode)

  // Sets the Fusion style; call once after QApplication exists.
  explicit Theme(QObject* parent = nullptr);

  void apply(Mode mode);
  Mode mode() const { return mode_; }
  // Whether the palette in force is dark (System: whatever the platform says).
  bool isDark() const;

  static QPalette lightPalette();
  static QPalette darkPalette();
  static QString modeName(Mode mode);
  static Mode modeFromName(const QString& name);

 private:
  Mode mode_ = Mode::System;
};

}  // namespace crosslab::widgets
