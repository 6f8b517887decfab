#pragma once
// One exchange with a provider's REST API, bounded and cancellable. Every try has its
// own timeout; all tries together (backoff and Retry-After included) end by a deadline
// (90 s by default); a cancel flag aborts the request in flight within ~50 ms; only a
// request that is safe to repeat is ever sent twice. Failures are typed, so callers can
// say what happened ("did not answer in time, 3 tries") and whether a request that
// creates something may have done so anyway (ambiguous).

#include <QByteArray>
#include <QString>
#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

namespace crosslab::providers {

enum class Failure {
  Http,         // the provider answered with an error status
  Rejected,     // 401/403: the key (or its permissions)
  Unreachable,  // no connection: refused, host not found, TLS
  NoAnswer,     // connected, but no complete answer within the try's timeout
  Interrupted,  // the connection closed in the middle of the reply
  Cancelled,    // the user cancelled
  BadReply,     // an answer that cannot be read (not the JSON the API documents)
  BadRequest,   // our side: a malformed URL, a missing team handle, a missing key
};

class ProviderError : public std::runtime_error {
 public:
  ProviderError(const std::string& what, int httpStatus, Failure failure = Failure::Http, int attempts = 1,
                bool ambiguous = false)
      : std::runtime_error(what), status_(httpStatus), failure_(failure), attempts_(attempts), ambiguous_(ambiguous) {}
  int httpStatus() const { return status_; }
  Failure failure() const { return failure_; }
  int attempts() const { return attempts_; }
  // A request that creates something reached the provider and its outcome is unknown
  // (5xx, no answer, cut reply, cancelled in flight): it may have created it.
  bool ambiguous() const { return ambiguous_; }

 private:
  int status_;
  Failure failure_;
  int attempts_;
  bool ambiguous_;
};

struct RequestBounds {
  int attemptTimeoutMs = 30000;  // one try: connect + whole reply
  int deadlineMs = 90000;        // all tries together, waits included
  int maxAttempts = 4;           // first try + retries (repeatable requests only)
  int backoffMs = 1000;          // doubled per retry (Retry-After wins when given)
  const std::atomic<bool>* cancel = nullptr;
};

struct HttpCall {
  QByteArray method;             // GET, POST, DELETE
  QString url;                   // absolute
  QString path;                  // for messages: the path after the API base
  std::string body;
  QByteArray authorization;      // the Authorization header value; never in a message
  bool repeatable = true;        // false: sent exactly once (it creates something billable)
  std::vector<int> okStatuses;   // besides 2xx
  std::string provider = "the provider";  // "Hot Aisle", for messages
};

struct HttpReply {
  int status = 0;
  std::string body;
  int attempts = 1;
};

// Validates an API base URL before anything is sent: http or https with a host.
// Throws ProviderError(BadRequest) naming the URL otherwise.
void checkApiUrl(const QString& baseUrl, const std::string& provider);

// Sends `call` within `bounds`. Returns the reply when its status is 2xx or in
// okStatuses; throws ProviderError otherwise (one line, no key, tries counted).
HttpReply boundedRequest(const HttpCall& call, const RequestBounds& bounds);

}  // namespace crosslab::providers
