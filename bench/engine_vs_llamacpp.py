#!/usr/bin/python3
"""Local engine vs llama.cpp on the same weights, in one run.

  /usr/bin/python3 bench/engine_vs_llamacpp.py --bench build/bench/engine_bench
        [--peers /tmp/peers] [--workdir /tmp/crosslab-bench] [--preset small] [--decode 128]
        [--model-dir DIR --prompt-ids JSON] [--repeats N]

--model-dir measures an existing checkpoint (e.g. a demo lab's models/demo-base) instead of
the preset; its GGUFs go to the workdir. --repeats measures every configuration N times,
interleaved (the machine's memory bandwidth drifts), and keeps each one's best.

Needs a copy of shared/peers with `npm install` done in peers/node (node-llama-cpp) and
Debian's python3-torch. Makes the preset checkpoint (make_llama.py, seed 0) and its F32/F16
GGUFs (to_gguf.py) once, then measures for threads 1 and 2:
  crosslab f32 and bf16 (engine_bench), llama.cpp F32 and F16 (node/llamacpp_greedy.mjs,
  its defaults for speed, --exact for the greedy-ids comparison).
Prints one JSON line per measurement, then a summary line with the ratios
(crosslab best / llama.cpp best: f32 vs F32, bf16 vs F16; llama.cpp's best over its default
and --exact settings), whether the greedy ids match, and each side's weights GB/s per decoded
token next to the memory read bandwidth engine_bench measures (batch-1 decode's limit).
"""
import argparse
import json
import os
import subprocess
import sys

PROMPT = [128000, 9906, 11, 1917, 0]  # <|begin_of_text|>Hello, world!


def run_json(cmd, cwd=None):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--peers", default="/tmp/peers")
    ap.add_argument("--workdir", default="/tmp/crosslab-bench")
    ap.add_argument("--preset", default="small")
    ap.add_argument("--decode", type=int, default=128)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--model-dir")
    ap.add_argument("--prompt-ids")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--loads", default="map,copy", help="crosslab weight loading: map (default), copy")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    prompt = json.loads(a.prompt_ids) if a.prompt_ids else PROMPT
    name = os.path.basename(os.path.normpath(a.model_dir)) if a.model_dir else a.preset
    ckpt = a.model_dir or os.path.join(a.workdir, a.preset)
    py = "/usr/bin/python3"
    if not a.model_dir and not os.path.exists(os.path.join(ckpt, "config.json")):
        subprocess.run([py, os.path.join(a.peers, "make_llama.py"), ckpt, "--preset", a.preset], check=True,
                       capture_output=True)
    ggufs = {"F32": os.path.join(a.workdir, name + "-f32.gguf"), "F16": os.path.join(a.workdir, name + "-f16.gguf")}
    for kind, path in ggufs.items():
        if not os.path.exists(path):
            subprocess.run([py, os.path.join(a.peers, "to_gguf.py"), ckpt, path] + (["--f16"] if kind == "F16" else []),
                           check=True, capture_output=True)
    node_dir = os.path.join(a.peers, "node")
    rows = []
    for t in [int(x) for x in a.threads.split(",") for _ in range(a.repeats)]:
        for dtype, load in [(d, l) for d in ("f32", "bf16") for l in a.loads.split(",")]:
            r = run_json([a.bench, "--model", ckpt, "--dtype", dtype, "--threads", str(t), "--decode", str(a.decode),
                          "--prompt-ids", json.dumps(prompt), "--load", load])
            rows.append(r)
            print(json.dumps({k: v for k, v in r.items() if k != "ids"}), flush=True)
        for kind, path in ggufs.items():
            for exact in (False, True):
                cmd = ["node", "llamacpp_greedy.mjs", path, json.dumps(prompt), str(a.decode), "--threads", str(t)]
                r = run_json(cmd + (["--exact"] if exact else []), cwd=node_dir)
                r.update({"engine": "llama.cpp", "dtype": kind, "threads": t, "exact": exact})
                rows.append(r)
                print(json.dumps({k: v for k, v in r.items() if k not in ("ids", "generated")}), flush=True)

    def best(engine, dtype, exact=None, load=None):
        cands = [r for r in rows if r["engine"] == engine and r["dtype"] == dtype
                 and (exact is None or r.get("exact") == exact) and (load is None or r.get("load") == load)]
        return max(cands, key=lambda r: r["decode_tok_s"])

    ours32, ours16 = best("crosslab", "f32"), best("crosslab", "bf16")
    ll32, ll16 = best("llama.cpp", "F32"), best("llama.cpp", "F16")
    exact32 = [r for r in rows if r["engine"] == "llama.cpp" and r["dtype"] == "F32" and r.get("exact")][0]
    ll_ids = exact32.get("ids") or exact32.get("generated")
    print(json.dumps({
        "summary": name,
        "crosslab_f32_peak_rss_mib": round(ours32["peak_rss_mib"]), "crosslab_bf16_peak_rss_mib": round(ours16["peak_rss_mib"]),
        "crosslab_f32_decode_tok_s": round(ours32["decode_tok_s"], 1), "llamacpp_f32_decode_tok_s": round(ll32["decode_tok_s"], 1),
        "ratio_f32": round(ours32["decode_tok_s"] / ll32["decode_tok_s"], 2),
        "crosslab_bf16_decode_tok_s": round(ours16["decode_tok_s"], 1), "llamacpp_f16_decode_tok_s": round(ll16["decode_tok_s"], 1),
        "ratio_bf16_vs_f16": round(ours16["decode_tok_s"] / ll16["decode_tok_s"], 2),
        # Batch-1 decode reads every weight once per token: GB/s of weights at each side's rate,
        # next to the memory read bandwidth engine_bench measured (same thread count).
        "weights_gb_per_token_f32": round(ours32["weights_gb_per_token"], 3),
        "crosslab_f32_weights_gb_s": round(ours32["weights_gb_s"], 1),
        "llamacpp_f32_weights_gb_s": round(ours32["weights_gb_per_token"] * ll32["decode_tok_s"], 1),
        "crosslab_bf16_weights_gb_s": round(ours16["weights_gb_s"], 1),
        "llamacpp_f16_weights_gb_s": round(ours16["weights_gb_per_token"] * ll16["decode_tok_s"], 1),
        "memory_read_gb_s": round(max(r["memory_read_gb_s"] for r in rows if r["engine"] == "crosslab"), 1),
        "best_load_f32": ours32.get("load"), "best_load_bf16": ours16.get("load"),
        **({"ratio_f32_load_map": round(best("crosslab", "f32", load="map")["decode_tok_s"] / ll32["decode_tok_s"], 2),
            "ratio_bf16_load_map": round(best("crosslab", "bf16", load="map")["decode_tok_s"] / ll16["decode_tok_s"], 2)}
           if "map" in a.loads.split(",") else {}),
        "greedy_ids_match_exact_f32": ours32["ids"] == ll_ids[:len(ours32["ids"])] and len(ll_ids) >= len(ours32["ids"]),
        "greedy_matching_prefix": next((i for i, (x, y) in enumerate(zip(ours32["ids"], ll_ids)) if x != y),
                                       min(len(ours32["ids"]), len(ll_ids))),
    }), flush=True)


if __name__ == "__main__":
    main()
