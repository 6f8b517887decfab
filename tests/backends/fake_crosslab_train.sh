#!/bin/sh
# Stand-in for `crosslab-cli train` on a box (no model to train on loopback): reads the
# recipe it was handed, writes our events.jsonl (a superset of trainer_log.jsonl with an
# `event` field) and a PEFT adapter, then ends with an end event. Takes the real command's
# flags: train --recipe FILE --model DIR --data FILE --out DIR
[ "$1" = train ] || { echo "expected 'train'" >&2; exit 2; }
shift
while [ $# -gt 0 ]; do
  case "$1" in
    --recipe) recipe=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --model|--data) [ -n "$2" ] || { echo "$1 needs a value" >&2; exit 2; }; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
grep -q '"lora_rank"' "$recipe" || { echo "no recipe at $recipe" >&2; exit 2; }
mkdir -p "$out"
echo '{"event": "start", "total_steps": 2}' >> "$out/events.jsonl"
echo '{"current_steps": 1, "total_steps": 2, "loss": 1.25, "lr": 1e-4, "epoch": 1.0}' >> "$out/events.jsonl"
echo '{"current_steps": 2, "total_steps": 2, "loss": 0.75, "lr": 5e-5, "epoch": 2.0}' >> "$out/events.jsonl"
printf '{"r": 16, "lora_alpha": 32, "peft_type": "LORA"}' > "$out/adapter_config.json"
printf 'ADAPTER' > "$out/adapter_model.safetensors"
echo '{"event": "end"}' >> "$out/events.jsonl"
