#include "core/infer/text_streamer.h"

#include <algorithm>

namespace crosslab::infer {

size_t completeUtf8Length(const std::string& bytes) {
  const size_t n = bytes.size();
  for (size_t back = 1; back <= std::min<size_t>(3, n); ++back) {
    const unsigned char c = static_cast<unsigned char>(bytes[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: look further back
    const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return need > back ? n - back : n;
  }
  return n;
}

TextStreamer::TextStreamer(const tokenizer::BpeTokenizer* tok, std::vector<std::string> stopStrings) : tok_(tok) {
  for (auto& s : stopStrings)
    if (!s.empty()) stops_.push_back(std::move(s));
}

size_t TextStreamer::safeLength() const {
  size_t safe = completeUtf8Length(pending_);
  // Hold back the longest suffix that is a proper prefix of some stop string.
  for (const auto& s : stops_) {
    const size_t maxK = std::min(s.size() - 1, pending_.size());
    for (size_t k = maxK; k > 0; --k) {
      if (pending_.compare(pending_.size() - k, k, s, 0, k) == 0) {
        safe = std::min(safe, pending_.size() - k);
        break;
      }
    }
  }
  return safe;
}

std::string TextStreamer::push(int32_t id) {
  if (stopped_ || !tok_ || id < 0 || id >= tok_->vocabSize()) return {};
  if (!tok_->isSpecial(id)) pending_ += tok_->tokenBytes(id);
  // A stop string anywhere in pending_ (the held tail plus this token) ends the text there.
  size_t cut = std::string::npos;
  for (const auto& s : stops_) {
    const size_t at = pending_.find(s);
    if (at != std::string::npos && at < cut) {
      cut = at;
      matched_ = s;
    }
  }
  if (cut != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, cut);
    pending_.clear();
    sent_ += out;
    return out;
  }
  const size_t n = safeLength();
  std::string out = pending_.substr(0, n);
  pending_.erase(0, n);
  sent_ += out;
  return out;
}

std::string TextStreamer::flush() {
  std::string out;
  out.swap(pending_);
  sent_ += out;
  return out;
}

}  // namespace crosslab::infer
