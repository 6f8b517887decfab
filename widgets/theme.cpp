#include "widgets/theme.h"

#include <QApplication>
#include <QStyle>
#include <QStyleFactory>

namespace crosslab::widgets {

Theme::Theme(QObject* parent) : QObject(parent) {
  QApplication::setStyle(QStyleFactory::create("Fusion"));
}

QPalette Theme::lightPalette() { return QApplication::style()->standardPalette(); }

QPalette Theme::darkPalette() {
  QPalette p;
  const QColor window(0x2b, 0x2d, 0x31), base(0x1e, 0x1f, 0x22), text(0xe6, 0xe6, 0xe6);
  const QColor disabled(0x80, 0x80, 0x80), accent(0x3d, 0x8b, 0xfd);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, window);
  p.setColor(QPalette::ToolTipBase, base);
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::PlaceholderText, disabled);
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, window);
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, Qt::red);
  p.setColor(QPalette::Link, accent);
  p.setColor(QPalette::Highlight, accent);
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::Mid, QColor(0x3c, 0x3f, 0x44));
  p.setColor(QPalette::Dark, QColor(0x18, 0x19, 0x1b));
  for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
    p.setColor(QPalette::Disabled, role, disabled);
  return p;
}

void Theme::apply(Mode mode) {
  mode_ = mode;
  switch (mode) {
    // A palette with no roles set resolves entirely against the platform theme, and
    // Qt re-resolves it when the desktop switches between light and dark.
    case Mode::System: QApplication::setPalette(QPalette()); break;
    case Mode::Light: QApplication::setPalette(lightPalette()); break;
    case Mode::Dark: QApplication::setPalette(darkPalette()); break;
  }
}

bool Theme::isDark() const {
  const QColor w = QApplication::palette().color(QPalette::Window);
  return w.lightness() < 128;
}

QString Theme::modeName(Mode mode) {
  switch (mode) {
    case Mode::Light: return "light";
    case Mode::Dark: return "dark";
    case Mode::System: break;
  }
  return "system";
}

Theme::Mode Theme::modeFromName(const QString& name) {
  if (name == "light") return Mode::Light;
  if (name == "dark") return Mode::Dark;
  return Mode::System;
}

}  // namespace crosslab::widgets
