#pragma once
// The demo lab's base model: a small Llama-architecture checkpoint (GQA, RMSNorm, SwiGLU,
// RoPE, tied embeddings) sized so that pretraining + LoRA + eval fit a few minutes on two
// CPU cores, randomly initialised as transformers initialises Llama (normal(0, 0.02)
// weights, unit norms) and written as a real Hugging Face checkpoint. Torch-free.

#include <cstdint>
#include <filesystem>
#include <string>

#include "core/tokenizer/bpe_trainer.h"

namespace crosslab::demo {

struct DemoModelSpec {
  int64_t hidden = 128;
  int64_t intermediate = 384;
  int64_t layers = 4;
  int64_t heads = 4;
  int64_t kvHeads = 2;  // GQA 2:1
  int64_t maxPositions = 2048;
  uint32_t seed = 17;
};

// The lab's demo spec; `quick` (tests) halves depth and width.
DemoModelSpec demoModelSpec(bool quick);

// Writes DIR/config.json, DIR/generation_config.json, DIR/model.safetensors (F32) and the
// tokenizer files; vocab_size = the tokenizer's. Every file through temp + rename. Same
// spec and tokenizer -> same bytes.
void writeDemoBaseModel(const std::filesystem::path& dir, const tokenizer::TrainedBpe& tok, const DemoModelSpec& spec);

}  // namespace crosslab::demo
