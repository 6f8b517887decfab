#!/usr/bin/env python3
"""Independent re-implementation of vllm/benchmarks/serve.py's metric formulas.

Reads a recorded stream (JSON: per request its issue time, the arrival time of every SSE
chunk with whether it had non-empty `choices` and any `usage.completion_tokens`, the
prompt length, an error if the request failed) and prints the metrics as vLLM computes
them: the client's rules (request_func: TTFT at the first chunk with choices, ITL between
such chunks, latency at the most recent one, output tokens from usage) and
calculate_metrics (numpy mean / median / std / percentile, max_output_tokens_per_s).
Written from the definitions, not copied; used by test_vllm_reference only.
"""
import json
import sys

import numpy as np


def request_output(req):
    st = req["start"]
    ttft, itl, most_recent, first = 0.0, [], st, False
    output_tokens = None
    for ev in req["events"]:
        if ev["choices"]:
            if not first:
                first = True
                ttft = ev["t"] - st
            else:
                itl.append(ev["t"] - most_recent)
            most_recent = ev["t"]
        if ev.get("completion_tokens") is not None:
            output_tokens = ev["completion_tokens"]
    success = first and not req.get("error")
    return {"start": st, "ttft": ttft, "itl": itl, "latency": most_recent - st, "success": success,
            "output_tokens": output_tokens, "text_chunks": req["text_chunks"], "prompt_len": req["prompt_len"]}


def calculate_metrics(outputs, dur_s):
    actual_output_lens, total_input, completed = [], 0, 0
    itls, tpots, ttfts, e2els = [], [], [], []
    for o in outputs:
        if o["success"]:
            output_len = o["output_tokens"] if o["output_tokens"] else o["text_chunks"]
            actual_output_lens.append(output_len)
            total_input += o["prompt_len"]
            if output_len > 1:
                tpots.append((o["latency"] - o["ttft"]) / (output_len - 1))
            itls += o["itl"]
            ttfts.append(o["ttft"])
            e2els.append(o["latency"])
            completed += 1
        else:
            actual_output_lens.append(0)

    # max_output_tokens_per_s: tokens counted in 1 s buckets from the earliest start.
    min_start = min(o["start"] for o in outputs)
    max_end = max(o["start"] + o["latency"] for o in outputs)
    buckets = int(np.ceil(max_end - min_start)) + 1
    tokens_per_second = np.zeros(buckets)
    concurrent = np.zeros(buckets)
    for o in outputs:
        if not o["success"]:
            continue
        times = [o["start"] + o["ttft"]]
        t = times[0]
        for gap in o["itl"]:
            t += gap
            times.append(t)
        for tt in times:
            b = int(tt - min_start)
            if b < buckets:
                tokens_per_second[b] += 1
        for s in range(int(o["start"] - min_start), int(o["start"] + o["latency"] - min_start) + 1):
            concurrent[s] += 1

    m = {
        "completed": completed,
        "failed": len(outputs) - completed,
        "total_input_tokens": total_input,
        "total_output_tokens": sum(actual_output_lens),
        "request_throughput": completed / dur_s,
        "output_throughput": sum(actual_output_lens) / dur_s,
        "total_token_throughput": (total_input + sum(actual_output_lens)) / dur_s,
        "max_output_tokens_per_s": float(np.max(tokens_per_second)),
        "max_concurrent_requests": int(np.max(concurrent)),
    }
    for name, xs in (("ttft", ttfts), ("tpot", tpots), ("itl", itls), ("e2el", e2els)):
        m[f"mean_{name}_ms"] = float(np.mean(xs or 0) * 1000)
        m[f"median_{name}_ms"] = float(np.median(xs or 0) * 1000)
        m[f"std_{name}_ms"] = float(np.std(xs or 0) * 1000)
        m[f"p99_{name}_ms"] = float(np.percentile(xs or 0, 99) * 1000)
    return m


def main():
    rec = json.load(open(sys.argv[1]))
    outputs = [request_output(r) for r in rec["requests"]]
    json.dump(calculate_metrics(outputs, rec["duration"]), sys.stdout)


if __name__ == "__main__":
    main()
