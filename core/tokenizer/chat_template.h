#pragma once
// The Llama 3 chat template as LLaMA-Factory renders it (template: llama3).

#include <string>
#include <vector>

namespace crosslab::tokenizer {

struct ChatMessage {
  std::string role;  // system | user | assistant
  std::string content;
};

// "<|begin_of_text|>" + one "<|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|>"
// per message; with addGenerationPrompt, the assistant header that starts the reply.
// Throws std::runtime_error for an unknown role.
std::string renderLlama3Chat(const std::vector<ChatMessage>& messages, bool addGenerationPrompt = true);

// Stop strings of the template: <|eot_id|>, <|eom_id|>.
std::vector<std::string> llama3StopWords();

}  // namespace crosslab::tokenizer
