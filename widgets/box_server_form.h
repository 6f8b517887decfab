#pragma once
// Benchmarks' "Server on a box": which box, which engine (crosslab, vLLM, vLLM in Docker,
// MLX), the model path on the box, adapters on the box (runtime or merged LoRA), and the
// RemoteServer that starts it over SSH, tunnels to it, health-checks it and stops it.
// Prefilled from the lab: its boxes, and the weights and adapters its runs left on them.

#include <QWidget>
#include <optional>

#include "backends/remote/remote_server.h"

class QComboBox;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace crosslab::backends {
class LabSession;
}

namespace crosslab::widgets {

class BoxServerForm : public QWidget {
  Q_OBJECT
 public:
  BoxServerForm(backends::LabSession* session, QWidget* parent = nullptr);

  // The server the form describes; nullopt and *error when incomplete.
  std::optional<remote::RemoteServer::Spec> spec(QString* error) const;
  // The model id a sweep asks for: the merged adapter, else the base model's folder name.
  QString servedModelId() const;
  remote::RemoteServer* server() const { return server_; }
  // Boxes and the lab's weights/adapters on them, again (the lab changed).
  void reload();

 signals:
  void changed();

 private:
  void prefill();

  backends::LabSession* session_;
  remote::RemoteServer* server_;
  std::vector<venues::BoxRow> boxes_;
  QComboBox *box_, *engine_, *loraMode_;
  QLineEdit *model_, *adapters_, *program_, *folder_;
  QSpinBox* port_;
  QPushButton* stop_;
};

}  // namespace crosslab::widgets
