#pragma once
// Splits a text/event-stream body into events (WHATWG SSE): "data:" lines of one event
// are joined with '\n' and handed over at the blank line that ends the event. Comments
// (":…") and the fields event/id/retry are ignored; any other line is reported as
// malformed, as vLLM's bench client fails a request on anything it cannot parse.
// Line ends are "\n" or "\r\n" (a lone '\r' is not treated as a line end).

#include <string>
#include <string_view>

namespace crosslab::bench {

class SseSplitter {
 public:
  class Handler {
   public:
    virtual ~Handler() = default;
    // `payload` stays valid until the next feed(). It is padded: capacity() of the
    // underlying buffer exceeds size() by at least kPadding (for simdjson).
    virtual void onEvent(std::string& payload) = 0;
    virtual void onMalformed(std::string_view line) = 0;
  };
  static constexpr size_t kPadding = 64;

  // Feeds body bytes in any split; calls the handler for every complete event.
  void feed(std::string_view bytes, Handler& handler);
  // True when bytes of an unfinished line or event are held back.
  bool hasPartial() const { return !pending_.empty() || haveData_; }

 private:
  void processLine(std::string_view line, Handler& handler);

  std::string pending_;  // an unfinished line carried to the next feed()
  std::string data_;     // the data lines of the current event
  bool haveData_ = false;
};

}  // namespace crosslab::bench
