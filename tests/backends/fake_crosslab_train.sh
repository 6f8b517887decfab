#!/bin/sh
# Stand-in for `crosslab-cli train` on a box (issue #4's trainer is not built yet): reads
# the recipe it was handed, writes our events.jsonl (a superset of trainer_log.jsonl with
# an `event` field) and a PEFT adapter, then ends with an end event.
# Usage: fake_crosslab_train.sh train recipe.json --data FILE --out DIR
recipe=$2
out=$6
grep -q '"lora_rank"' "$recipe" || { echo "no recipe at $recipe" >&2; exit 2; }
mkdir -p "$out"
echo '{"event": "start", "total_steps": 2}' >> "$out/events.jsonl"
echo '{"current_steps": 1, "total_steps": 2, "loss": 1.25, "lr": 1e-4, "epoch": 1.0}' >> "$out/events.jsonl"
echo '{"current_steps": 2, "total_steps": 2, "loss": 0.75, "lr": 5e-5, "epoch": 2.0}' >> "$out/events.jsonl"
printf '{"r": 16, "lora_alpha": 32, "peft_type": "LORA"}' > "$out/adapter_config.json"
printf 'ADAPTER' > "$out/adapter_model.safetensors"
echo '{"event": "end"}' >> "$out/events.jsonl"
