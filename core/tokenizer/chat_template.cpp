#include "core/tokenizer/chat_template.h"

#include <stdexcept>

namespace crosslab::tokenizer {

std::string renderLlama3Chat(const std::vector<ChatMessage>& messages, bool addGenerationPrompt) {
  std::string out = "<|begin_of_text|>";
  for (const auto& m : messages) {
    if (m.role != "system" && m.role != "user" && m.role != "assistant")
      throw std::runtime_error("unknown chat role '" + m.role + "'");
    out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + m.content + "<|eot_id|>";
  }
  if (addGenerationPrompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

std::vector<std::string> llama3StopWords() { return {"<|eot_id|>", "<|eom_id|>"}; }

}  // namespace crosslab::tokenizer
