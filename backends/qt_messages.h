#pragma once
// Qt's own diagnostics ("QIODevice::read (QNetworkReplyHttpImpl): device not open", …)
// are about Qt's internals, not about what the user asked: they go to crosslab's log at
// debug level (CROSSLAB_LOG=debug shows them) instead of the terminal.

namespace crosslab::backends {

void routeQtMessagesToLog();

}  // namespace crosslab::backends
