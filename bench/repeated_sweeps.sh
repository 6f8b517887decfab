#!/usr/bin/env bash
# Sweeps run one after another against one server, as a user clicking Run in the Benchmarks panel
# does: a fresh `crosslab-cli serve` (the demo model, the demo adapter merged, f32, 2 threads),
# one warm-up run, then RUNS runs of `crosslab-cli bench` at one level, each a new client process.
# With two crosslab-cli binaries, A and B take turns, ROUNDS fresh servers each. Prints one JSON
# line per server: its binary, each run's output tok/s, their median, and how many times the
# server said it handed the stream writer's work over (its "starve the stream writer" line).
# Usage: bench/repeated_sweeps.sh LAB CLI_A [CLI_B] [--level 16] [--runs 6] [--rounds 2]
#   LAB: a demo lab (crosslab-cli demo LAB); CLI_*: crosslab-cli binaries (a build's app/crosslab-cli)
set -euo pipefail
lab=$1
shift
clis=()
while [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; do clis+=("$(realpath "$1")"); shift; done
level=16 runs=6 rounds=2
while [ $# -gt 0 ]; do
  case $1 in
    --level) level=$2 ;;
    --runs) runs=$2 ;;
    --rounds) rounds=$2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
work=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
for round in $(seq "$rounds"); do
  for cli in "${clis[@]}"; do
    "$cli" serve --model "$lab/models/demo-base" --lora "adapter=$lab/runs/demo-lora" --merge adapter --dtype f32 \
      --threads 2 --max-batch 32 --max-model-len 600 --port "$port" --log-stats-interval 0 > /dev/null 2> "$work/serve.log" &
    server=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.2; done
    bench=("${clis[0]}" bench --url "http://127.0.0.1:$port" --model adapter --concurrency "$level" --input-len 16
           --output-len 512 --ignore-eos --num-prompts $((level * 8)) --save-result "$work/r.jsonl")
    "${bench[@]}" --warmup 32 > /dev/null
    rates=()
    for _ in $(seq "$runs"); do
      "${bench[@]}" > /dev/null
      rates+=("$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["output_throughput"])' "$work/r.jsonl")")
    done
    kill "$server"
    wait "$server" 2>/dev/null || true
    server=
    python3 - "$cli" "$level" "$(grep -c 'starve the stream writer' "$work/serve.log" || true)" "${rates[@]}" <<'PY'
import json, statistics, sys
cli, level, handovers, rates = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), [float(r) for r in sys.argv[4:]]
print(json.dumps({"cli": cli, "level": level, "output_tok_s": [round(r) for r in rates],
                  "median_tok_s": round(statistics.median(rates)), "writer_handovers": handovers}))
PY
  done
done
