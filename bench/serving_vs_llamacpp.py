#!/usr/bin/python3
"""Serving with batching, side by side in one run (issue 14):

  crosslab in process   build/bench/batch_bench: the batch scheduler, N identical greedy requests
  crosslab over HTTP    build/app/crosslab-cli serve + crosslab-cli bench (the full path)
  llama.cpp             peers/node/llamacpp_batch.mjs: N sequences in one context, decoding together

  /usr/bin/python3 bench/serving_vs_llamacpp.py --build build [--peers /tmp/peers] [--workdir /tmp/crosslab-bench]
        [--preset tiny|small | --model-dir DIR] [--lora DIR] [--dtypes f32,bf16] [--modes merged,runtime]
        [--levels 1,8,32] [--tokens 64] [--threads 1,2] [--llamacpp-threads 1,2] [--no-http] [--no-llamacpp]
        [--repeats N] [--paired] [--stream-interval N] [--no-loopback] [--loopback-seconds S]

--preset makes the peers' checkpoint (make_llama.py, seed 0) and a random adapter (make_lora.py);
--model-dir measures an existing checkpoint (a demo lab's models/demo-base with --lora LAB/runs/demo-lora).
Same prompt everywhere (--prompt-ids, default 5 ids within the vocabulary), greedy, EOS ignored,
--tokens per request. llama.cpp runs the base weights (GGUF F32 for f32, F16 for bf16) and is
compared with crosslab's merged mode (the same cost); each side at its best thread count per level.

Figures per level: llama.cpp aggregate_tok_s (decode only), crosslab in-process decode_tok_s (the
same window: every stream decoding) and output_tok_s (tokens / wall from submission, vLLM's
output_throughput), crosslab HTTP output_throughput. One JSON line per measurement, then summary
lines: in-process / llama.cpp, HTTP / in-process (output_tok_s), gain over c=1, runtime / merged.

Both crosslab paths are measured warm and with caches alike. batch_bench first runs the widest
level once, unmeasured; the HTTP sweep's warm-up sends as many requests as its widest level, all
at once, and `serve` gets `--max-model-len` of the prompt and --tokens (about batch_bench's),
not its default of 2048. On this VM a KV-cache page's first touch is slow (memory the guest has
not used since boot: 0.47 GB/s against 11 GB/s once used), and a cold sweep paid it inside its
first level of each width: 16 to 32 streams was where the rows 16 to 31 were first written.

--repeats N measures every configuration N times, interleaved (llama.cpp, in process, HTTP, then
again), and keeps each level's best per side: on a shared VM whose memory bandwidth drifts by
1.5x within minutes, one pass's ratios say more about the neighbours than about the programs.

--paired (with the HTTP path) measures the two crosslab paths level by level instead, at the
last --threads count: one server per pass and mode; at each level batch_bench --levels L and the
client at L back to back, the order swapped every other pass, so each pair sees the VM in the
same minute. Both sides run as many requests, so both last about as long: the client's default
count at that level (max(8, 2L)) in whole waves of L (batch_bench --rounds, the client's
--num-prompts). The summary gives each level's median, lowest and highest HTTP / in process
over the pairs (http_over_in_process_paired) next to the best-of figures, which can pair a fast
spell of one side with a slow spell of the other.

--stream-interval N starts the server with that many tokens per streamed write after the first
(default 1, each token as it comes, as vLLM streams).

The loopback cost (with the HTTP path, unless --no-loopback): the same client at each level
against `crosslab-cli bench standin --round-robin` (no model: one pre-made chunk per stream per
pass, a write each, as a server ending a decode step; --stream-interval tokens per chunk), for
--loopback-seconds. It prints that path's tok/s and its CPU per token (the stand-in's and the
client's, from /proc and getrusage): what streaming through the kernel's loopback TCP costs on
this machine with nothing else to do. The summary sets it beside the in-process engine's CPU per
token (batch_bench's output_tok_per_cpu_s) and, with this machine's N cores,
  http_over_in_process_if_cpu_adds = min(1, N / ((engine_cpu + http_cpu) per token x in-process output_tok_s))
what HTTP / in process would be if the two costs simply added up on the same cores. Not a bound:
the engine's in-process CPU counts its threads' waits at the step crew's barrier, which the HTTP
path can fill (above it); a server that does more per token than the stand-in, or whose threads
preempt the step's, falls below it.
"""
import argparse
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

PY = "/usr/bin/python3"


def run_json_lines(cmd, cwd=None, timeout=3600):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr[-3000:]}")
    out = []
    for line in p.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def started(cmd, port, what):
    """Starts a server on a loopback port and waits (up to 5 minutes: a model to load) until /health answers."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for _ in range(1500):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
            return proc
        except Exception:
            if proc.poll() is not None:
                sys.exit(what + " exited: " + proc.stderr.read()[-2000:])
            time.sleep(0.2)
    proc.kill()
    sys.exit(what + " did not answer /health in 5 minutes")


def stop(proc):
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prepare(a):
    os.makedirs(a.workdir, exist_ok=True)
    if a.model_dir:
        ckpt, name = a.model_dir, os.path.basename(os.path.normpath(a.model_dir))
    else:
        ckpt, name = os.path.join(a.workdir, a.preset), a.preset
        if not os.path.exists(os.path.join(ckpt, "config.json")):
            subprocess.run([PY, os.path.join(a.peers, "make_llama.py"), ckpt, "--preset", a.preset], check=True,
                           capture_output=True)
    lora = a.lora
    if not lora:
        lora = os.path.join(a.workdir, name + "-lora")
        if not os.path.exists(os.path.join(lora, "adapter_config.json")):
            subprocess.run([PY, os.path.join(a.peers, "make_lora.py"), ckpt, lora], check=True, capture_output=True)
    ggufs = {"f32": os.path.join(a.workdir, name + "-f32.gguf"), "bf16": os.path.join(a.workdir, name + "-f16.gguf")}
    if not a.no_llamacpp:
        for dtype, path in ggufs.items():
            if dtype in a.dtypes and not os.path.exists(path):
                subprocess.run([PY, os.path.join(a.peers, "to_gguf.py"), ckpt, path] + (["--f16"] if dtype == "bf16" else []),
                               check=True, capture_output=True)
    return ckpt, name, lora, ggufs


def llamacpp(a, gguf, prompt, dtype):
    best = {}
    for t in a.llamacpp_threads:
        rows = run_json_lines(["node", "llamacpp_batch.mjs", gguf, json.dumps(prompt), str(a.tokens),
                               "--sequences", ",".join(map(str, a.levels)), "--threads", str(t)],
                              cwd=os.path.join(a.peers, "node"))
        for r in rows:
            r.update({"engine": "llama.cpp", "dtype": "F32" if dtype == "f32" else "F16"})
            print(json.dumps(r), flush=True)
            if r["sequences"] not in best or r["aggregate_tok_s"] > best[r["sequences"]]["aggregate_tok_s"]:
                best[r["sequences"]] = r
    return best


def inprocess(a, ckpt, lora, dtype, mode, prompt, rounds=1):
    best = {}
    for t in a.threads:
        cmd = [os.path.join(a.build, "bench", "batch_bench"), "--model", ckpt, "--dtype", dtype, "--levels",
               ",".join(map(str, a.levels)), "--tokens", str(a.tokens), "--prompt-ids", json.dumps(prompt),
               "--threads", str(t), "--lora", lora, "--lora-mode", mode, "--load", a.load, "--rounds", str(rounds)]
        for r in run_json_lines(cmd):
            r["threads"] = t
            print(json.dumps(r), flush=True)
            if "level" in r and (r["level"] not in best or r["decode_tok_s"] > best[r["level"]]["decode_tok_s"]):
                best[r["level"]] = r
    return best


def serve_cmd(a, ckpt, lora, dtype, mode, t, port):
    cli = os.path.join(a.build, "app", "crosslab-cli")
    serve = [cli, "serve", "--model", ckpt, "--dtype", dtype, "--port", str(port), "--threads", str(t),
             "--max-batch", str(max(a.levels)), "--lora", "adapter=" + lora, "--load", a.load,
             # the in-process engine's cache rows: prompt + tokens (batch_bench), not serve's default
             # 2048 positions, whose 4x more pages the first streams would touch (see the docstring)
             "--max-model-len", str(a.tokens + 4 * a.input_words + 8)]
    if a.stream_interval != 1:
        serve += ["--stream-interval", str(a.stream_interval)]
    if mode == "merged":
        serve += ["--merge", "adapter"]
    return serve


def http_levels(a, port, dtype, mode, t, levels, num_prompts=None):
    """One client run against a running server: {level: record}, each record printed."""
    out = {}
    result = os.path.join(a.workdir, f"http-{os.getpid()}.jsonl")
    cmd = bench_cmd(a, port, "adapter", levels, result)
    if num_prompts:
        cmd += ["--num-prompts", str(num_prompts)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=3600)
    with open(result) as f:
        for line in f:
            j = json.loads(line)
            r = {"engine": "crosslab", "path": "http", "dtype": dtype, "lora": mode, "threads": t,
                 "level": j["max_concurrency"], "output_tok_s": j["output_throughput"],
                 "ttft_ms_p50": j["median_ttft_ms"], "ttft_ms_p99": j["p99_ttft_ms"],
                 "tpot_ms_p50": j["median_tpot_ms"], "tpot_ms_p99": j["p99_tpot_ms"],
                 "collapse": j.get("collapse", "")}
            print(json.dumps(r), flush=True)
            out[r["level"]] = r
    os.remove(result)
    return out


def over_http(a, ckpt, lora, dtype, mode, vocab):
    best = {}
    for t in a.threads:
        port = free_port()
        server = started(serve_cmd(a, ckpt, lora, dtype, mode, t, port), port, "serve")
        try:
            for lv, r in http_levels(a, port, dtype, mode, t, a.levels).items():
                if lv not in best or r["output_tok_s"] > best[lv]["output_tok_s"]:
                    best[lv] = r
        finally:
            stop(server)
    return best


def paired(a, ckpt, lora, dtype, mode, prompt, swap):
    """Level by level, in process and HTTP back to back (HTTP first when swap); one server, a
    thread count: [(level, in-process record, HTTP record)]."""
    t = a.threads[-1]
    port = free_port()
    server = started(serve_cmd(a, ckpt, lora, dtype, mode, t, port), port, "serve")
    pairs = []
    try:
        for lv in a.levels:
            # the client's default request count (max(8, 2L)), rounded up to whole waves of L, given
            # to both sides: batch_bench as --rounds, the client as --num-prompts
            rounds = -(-max(8, 2 * lv) // lv)
            one = argparse.Namespace(**{**vars(a), "threads": [t], "levels": [lv]})
            def in_process():
                return inprocess(one, ckpt, lora, dtype, mode, prompt, rounds)[lv]
            def through_http():
                return http_levels(a, port, dtype, mode, t, [lv], rounds * lv)[lv]
            if swap:
                h = through_http()
                o = in_process()
            else:
                o = in_process()
                h = through_http()
            pairs.append((lv, o, h))
    finally:
        stop(server)
    return pairs


def bench_cmd(a, port, model, levels, result):
    """The client both paths are measured with: crosslab-cli bench, greedy lengths fixed, EOS ignored."""
    return [os.path.join(a.build, "app", "crosslab-cli"), "bench", "--url", f"http://127.0.0.1:{port}", "--model", model,
            "--concurrency", ",".join(map(str, levels)), "--input-len", str(a.input_words), "--output-len",
            str(a.tokens), "--ignore-eos", "--warmup", str(max(levels)), "--save-result", result]


def cpu_seconds(pid):
    """utime + stime of a running process, from /proc (clock ticks)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def loopback(a):
    """Per level: the stand-in (round-robin, no model) and the same client; tok/s and CPU per token."""
    cli = os.path.join(a.build, "app", "crosslab-cli")
    port = free_port()
    standin = started([cli, "bench", "standin", "--round-robin", "--tokens-per-frame", str(a.stream_interval),
                       "--port", str(port), "--seconds", "3600"], port, "bench standin")
    out = {}
    try:
        result = os.path.join(a.workdir, f"loopback-{os.getpid()}.jsonl")
        for lv in a.levels:
            server0, client0 = cpu_seconds(standin.pid), resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run(bench_cmd(a, port, "standin", [lv], result) + ["--duration", str(a.loopback_seconds)],
                           check=True, capture_output=True, timeout=600)
            server1, client1 = cpu_seconds(standin.pid), resource.getrusage(resource.RUSAGE_CHILDREN)
            with open(result) as f:
                j = [json.loads(line) for line in f][-1]
            os.remove(result)
            client = (client1.ru_utime - client0.ru_utime) + (client1.ru_stime - client0.ru_stime)
            tokens = j["total_output_tokens"]
            r = {"engine": "stand-in", "path": "loopback", "level": lv, "tokens_per_chunk": a.stream_interval,
                 "output_tok_s": j["output_throughput"], "server_cpu_s": round(server1 - server0, 2),
                 "client_cpu_s": round(client, 2),
                 "cpu_us_per_token": (server1 - server0 + client) / tokens * 1e6 if tokens else None}
            print(json.dumps(r), flush=True)
            out[lv] = r
    finally:
        stop(standin)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--peers", default="/tmp/peers")
    ap.add_argument("--workdir", default="/tmp/crosslab-bench")
    ap.add_argument("--preset", default="small")
    ap.add_argument("--model-dir")
    ap.add_argument("--lora")
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--modes", default="merged,runtime")
    ap.add_argument("--levels", default="1,8,32")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--input-words", type=int, default=8, help="HTTP prompts: words (about tokens)")
    ap.add_argument("--prompt-ids", help="in-process and llama.cpp prompt (default: 5 ids in the vocabulary)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--llamacpp-threads", default="1,2")
    ap.add_argument("--load", default="copy", help="crosslab weights: map or copy (default copy: faster decode)")
    ap.add_argument("--no-http", action="store_true")
    ap.add_argument("--no-llamacpp", action="store_true")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--paired", action="store_true", help="in process and HTTP level by level, back to back")
    ap.add_argument("--stream-interval", type=int, default=1, help="serve --stream-interval (tokens per write)")
    ap.add_argument("--no-loopback", action="store_true", help="skip the loopback cost (the stand-in + client)")
    ap.add_argument("--loopback-seconds", type=float, default=3.0, help="each level of the loopback cost")
    a = ap.parse_args()
    a.levels = [int(x) for x in a.levels.split(",")]
    a.threads = [int(x) for x in a.threads.split(",")]
    a.llamacpp_threads = [int(x) for x in a.llamacpp_threads.split(",")]
    a.dtypes, a.modes = a.dtypes.split(","), a.modes.split(",")
    ckpt, name, lora, ggufs = prepare(a)
    with open(os.path.join(ckpt, "config.json")) as f:
        vocab = json.load(f)["vocab_size"]
    prompt = json.loads(a.prompt_ids) if a.prompt_ids else [1] + [min(vocab - 1, 100 + 37 * i) for i in range(4)]
    def keep_best(acc, new, key):
        for lv, r in new.items():
            if lv not in acc or r[key] > acc[lv][key]:
                acc[lv] = r

    cores = len(os.sched_getaffinity(0))
    loop_cost = {} if a.no_http or a.no_loopback else loopback(a)
    for dtype in a.dtypes:
        peer, ours, http = {}, {m: {} for m in a.modes}, {m: {} for m in a.modes}
        ratios = {m: {lv: [] for lv in a.levels} for m in a.modes}  # --paired: HTTP / in process per pair
        for rep in range(max(1, a.repeats)):
            if not a.no_llamacpp:
                keep_best(peer, llamacpp(a, ggufs[dtype], prompt, dtype), "aggregate_tok_s")
            for mode in a.modes:
                if a.paired and not a.no_http:
                    for lv, o, h in paired(a, ckpt, lora, dtype, mode, prompt, rep % 2 == 1):
                        keep_best(ours[mode], {lv: o}, "decode_tok_s")
                        keep_best(http[mode], {lv: h}, "output_tok_s")
                        ratios[mode][lv].append(h["output_tok_s"] / o["output_tok_s"])
                    continue
                keep_best(ours[mode], inprocess(a, ckpt, lora, dtype, mode, prompt), "decode_tok_s")
                if not a.no_http:
                    keep_best(http[mode], over_http(a, ckpt, lora, dtype, mode, vocab), "output_tok_s")
        for mode in a.modes:
            s = {"summary": name, "dtype": dtype, "lora": mode, "tokens": a.tokens, "levels": a.levels,
                 "stream_interval": a.stream_interval, "cores": cores}
            first = a.levels[0]
            for lv in a.levels:
                o = ours[mode].get(lv)
                row = {"in_process_decode_tok_s": round(o["decode_tok_s"], 1), "in_process_output_tok_s": round(o["output_tok_s"], 1),
                       "in_process_threads": o["threads"], "decode_paths": o["decode_paths"]}
                if lv in peer:
                    row.update({"llamacpp_tok_s": round(peer[lv]["aggregate_tok_s"], 1), "llamacpp_threads": peer[lv]["threads"],
                                "in_process_over_llamacpp": round(o["decode_tok_s"] / peer[lv]["aggregate_tok_s"], 2)})
                h = http[mode].get(lv)
                if h:
                    row.update({"http_output_tok_s": round(h["output_tok_s"], 1), "http_threads": h["threads"],
                                "http_over_in_process": round(h["output_tok_s"] / o["output_tok_s"], 2),
                                "http_gain_over_c1": round(h["output_tok_s"] / http[mode][first]["output_tok_s"], 2)
                                if http[mode].get(first) and http[mode][first]["output_tok_s"] > 0 else None,
                                "http_ttft_ms_p50_p99": [round(h["ttft_ms_p50"], 1), round(h["ttft_ms_p99"], 1)],
                                "http_tpot_ms_p50_p99": [round(h["tpot_ms_p50"], 2), round(h["tpot_ms_p99"], 2)],
                                "http_collapse": h["collapse"]})
                rs = ratios[mode][lv]
                if rs:
                    row["http_over_in_process_paired"] = {"median": round(statistics.median(rs), 2), "low": round(min(rs), 2),
                                                          "high": round(max(rs), 2), "pairs": len(rs)}
                c = loop_cost.get(lv)
                if c and c["cpu_us_per_token"] and o.get("output_tok_per_cpu_s"):
                    engine_us = 1e6 / o["output_tok_per_cpu_s"]
                    row.update({"loopback_tok_s": round(c["output_tok_s"], 1),
                                "loopback_cpu_us_per_token": round(c["cpu_us_per_token"], 2),
                                "in_process_cpu_us_per_token": round(engine_us, 2),
                                "http_over_in_process_if_cpu_adds": round(min(1.0, cores * 1e6 / (
                                    (engine_us + c["cpu_us_per_token"]) * o["output_tok_s"])), 2)})
                if mode != "merged" and "merged" in ours:
                    row["in_process_merged_over_runtime"] = round(ours["merged"][lv]["decode_tok_s"] / o["decode_tok_s"], 2)
                    if h and h["output_tok_s"] > 0 and http.get("merged", {}).get(lv):
                        row["http_merged_over_runtime"] = round(http["merged"][lv]["output_tok_s"] / h["output_tok_s"], 2)
                s[str(lv)] = row
            print(json.dumps(s), flush=True)


if __name__ == "__main__":
    main()
