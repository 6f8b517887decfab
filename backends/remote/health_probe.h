#pragma once
// GET a URL and return its HTTP status (0 when nothing answered). Synchronous: worker
// threads and the CLI only.

#include <QString>
#include <functional>

namespace crosslab::remote {

int httpStatus(const QString& url, int timeoutMs);
// Polls `url` until it answers 200, `alive()` turns false, or `timeoutSeconds` pass.
// Returns the last status seen.
int waitForHealthy(const QString& url, int timeoutSeconds, int pollMs, const std::function<bool()>& alive);

}  // namespace crosslab::remote
