#!/usr/bin/python3
"""Independent PyTorch reference for crosslab's engine tests: transformers' LlamaForCausalLM
forward (eager attention), written from the transformers semantics, reading safetensors
with its own parser (not crosslab's).

  ref_llama.py CKPT IDS_JSON --logits OUT.f32 [--dtype f32|bf16]   all positions, raw float32 [T, vocab]
  ref_llama.py CKPT IDS_JSON --greedy N [--dtype f32|bf16]          prints {"ids": [...], "margins": [...]}
  IDS_JSON may be a list of lists: several sequences, each computed on its own (no padding);
  --logits then writes their logits one after the other, --greedy prints {"batch": [{...}, ...]}.
  either with [--adapter DIR]: a PEFT LoRA adapter applied unmerged, as PEFT's lora.Linear does:
  y = W x + B(A(x)) * scaling in the adapter's fp32, scaling = lora_alpha / r (/ sqrt(r) with use_rslora)

Semantics (transformers/models/llama/modeling_llama.py):
- RMSNorm: x.float(); x * rsqrt(mean(x^2) + eps); weight * x.to(input dtype)
- RoPE: inv_freq = 1 / theta^(arange(0, d, 2) / d) in fp32, llama3 or linear scaling
  (_compute_llama3_parameters / _compute_linear_scaling_rope_parameters); cos/sin of
  cat(freqs, freqs) in fp32, cast to the activation dtype; q*cos + rotate_half(q)*sin
- attention: repeat_kv for GQA; q k^T * head_dim^-0.5 + causal mask (dtype min);
  softmax in fp32 cast back; optional q/k/v/o bias (attention_bias)
- MLP: down(silu(gate(x)) * up(x)); logits = lm_head(norm(h)) (embed_tokens when tied), fp32
"""
import json
import math
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

NP = {"F32": np.float32, "F16": np.float16, "BF16": np.int16}  # BF16 bits, viewed as torch.bfloat16 below


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        arr = np.frombuffer(blob, dtype=NP[e["dtype"]], count=(end - b) // np.dtype(NP[e["dtype"]]).itemsize,
                            offset=base + b).reshape(e["shape"])
        t = torch.from_numpy(arr.copy())
        if e["dtype"] == "BF16":
            t = t.view(torch.bfloat16)
        out[name] = t
    return out


def inv_freq(cfg):
    d = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    inv = 1.0 / (cfg.get("rope_theta", 10000.0) ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    rs = cfg.get("rope_scaling") or {}
    kind = rs.get("rope_type", rs.get("type", "default"))
    if kind == "linear":
        return inv / rs["factor"]
    if kind != "llama3":
        return inv
    factor, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    orig = rs["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv
    scaled = torch.where(wavelen > orig / lo, inv / factor, inv)
    smooth = (orig / wavelen - lo) / (hi - lo)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < orig / hi) * ~(wavelen > orig / lo)
    return torch.where(medium, smoothed, scaled)


def rms(x, w, eps):
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return w * h.to(x.dtype)


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


def forward(cfg, w, ids, dtype, lora=None):
    """ids: [T] -> logits [T, vocab] fp32, a full causal pass (no cache)."""
    nh, hdim = cfg["num_attention_heads"], cfg["hidden_size"]
    nkv = cfg.get("num_key_value_heads", nh)
    d = cfg.get("head_dim") or hdim // nh
    eps = cfg["rms_norm_eps"]
    T = len(ids)
    x = w["model.embed_tokens.weight"][torch.tensor(ids)].unsqueeze(0)  # [1, T, H]
    pos = torch.arange(T).float()
    freqs = pos[:, None] * inv_freq(cfg)[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().to(dtype), emb.sin().to(dtype)
    mask = torch.full((T, T), torch.finfo(dtype).min, dtype=dtype).triu(1)
    def lin(t, p):
        y = F.linear(t, w[p + ".weight"], w.get(p + ".bias"))
        if lora and p in lora:
            a, b, scaling = lora[p]
            y = (y + F.linear(F.linear(t.float(), a), b) * scaling).to(y.dtype)
        return y

    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms(x, w[p + "input_layernorm.weight"], eps)
        q = lin(h, p + "self_attn.q_proj").view(1, T, nh, d).transpose(1, 2)
        k = lin(h, p + "self_attn.k_proj").view(1, T, nkv, d).transpose(1, 2)
        v = lin(h, p + "self_attn.v_proj").view(1, T, nkv, d).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(nh // nkv, dim=1)  # repeat_kv: head j reads kv head j // rep
        v = v.repeat_interleave(nh // nkv, dim=1)
        s = torch.matmul(q, k.transpose(2, 3)) * d ** -0.5 + mask
        a = F.softmax(s, dim=-1, dtype=torch.float32).to(dtype)
        o = torch.matmul(a, v).transpose(1, 2).reshape(1, T, nh * d)
        x = x + lin(o, p + "self_attn.o_proj")
        h = rms(x, w[p + "post_attention_layernorm.weight"], eps)
        x = x + lin(F.silu(lin(h, p + "mlp.gate_proj")) * lin(h, p + "mlp.up_proj"), p + "mlp.down_proj")
    x = rms(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else w["lm_head.weight"]
    return F.linear(x, head)[0].float()


def main():
    ckpt, ids = sys.argv[1], json.loads(sys.argv[2])
    opts = dict(zip(sys.argv[3::2], sys.argv[4::2]))
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[opts.get("--dtype", "f32")]
    torch.set_num_threads(1)
    with open(ckpt + "/config.json") as f:
        cfg = json.load(f)
    w = {k: v.to(dtype) for k, v in read_safetensors(ckpt + "/model.safetensors").items()}
    lora = None
    if "--adapter" in opts:
        with open(opts["--adapter"] + "/adapter_config.json") as f:
            acfg = json.load(f)
        r = acfg["r"]
        scaling = acfg["lora_alpha"] / (math.sqrt(r) if acfg.get("use_rslora") else r)
        aw = read_safetensors(opts["--adapter"] + "/adapter_model.safetensors")
        lora = {}
        for name, t in aw.items():
            if name.endswith(".lora_A.weight"):
                module = name[len("base_model.model."):-len(".lora_A.weight")]
                lora[module] = (t.float(), aw[name.replace("lora_A", "lora_B")].float(), scaling)
    batch = bool(ids) and isinstance(ids[0], list)
    seqs = ids if batch else [ids]
    with torch.no_grad():
        if "--logits" in opts:
            torch.cat([forward(cfg, w, s, dtype, lora) for s in seqs]).numpy().astype("<f4").tofile(opts["--logits"])
            return
        results = []
        for prompt in seqs:
            seq, margins = list(prompt), []
            for _ in range(int(opts["--greedy"])):
                last = forward(cfg, w, seq, dtype, lora)[-1]
                top = torch.topk(last, 2)
                margins.append(float(top.values[0] - top.values[1]))
                seq.append(int(top.indices[0]))
            results.append({"ids": seq[len(prompt):], "margins": margins})
        print(json.dumps({"batch": results} if batch else results[0]))


if __name__ == "__main__":
    main()
