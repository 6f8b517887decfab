#include "core/bench/sse_splitter.h"

#include <cstring>

namespace crosslab::bench {

void SseSplitter::feed(std::string_view bytes, Handler& handler) {
  while (!bytes.empty()) {
    const void* nl = std::memchr(bytes.data(), '\n', bytes.size());
    if (!nl) {
      pending_.append(bytes);
      return;
    }
    const size_t len = static_cast<size_t>(static_cast<const char*>(nl) - bytes.data());
    if (pending_.empty()) {
      processLine(bytes.substr(0, len), handler);
    } else {
      pending_.append(bytes.substr(0, len));
      std::string line;
      line.swap(pending_);
      processLine(line, handler);
    }
    bytes.remove_prefix(len + 1);
  }
}

void SseSplitter::processLine(std::string_view line, Handler& handler) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.empty()) {
    if (haveData_) {
      haveData_ = false;
      if (data_.capacity() < data_.size() + kPadding) data_.reserve(data_.size() + kPadding);
      handler.onEvent(data_);
      data_.clear();
    }
    return;
  }
  if (line.front() == ':') return;  // comment, e.g. a keep-alive ping
  const size_t colon = line.find(':');
  const std::string_view field = line.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view{} : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "data") {
    if (haveData_) data_.push_back('\n');
    data_.append(value);
    haveData_ = true;
  } else if (field != "event" && field != "id" && field != "retry") {
    handler.onMalformed(line);
  }
}

}  // namespace crosslab::bench
