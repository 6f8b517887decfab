#!/usr/bin/python3
"""Independent PyTorch reference for crosslab's LoRA trainer (tests/train), written from
PEFT / transformers / torch semantics, not from crosslab's code:

  ref_lora_train.py MODEL CHECKPOINT EXAMPLES.json FINAL_ADAPTER --lr LR --sched linear|cosine|constant
                    --warmup W --total N --max-grad-norm G

Starts from crosslab's CHECKPOINT (adapter A/B, AdamW exp_avg/exp_avg_sq, global_step k),
then runs optimizer steps k+1..N where every step trains on all EXAMPLES
([{input_ids, labels}], labels -100 = masked):
- PEFT lora.Linear: y = W x + B(A(x)) * alpha / r (fp32, dropout 0)
- transformers causal LM loss: logits[:-1] vs labels[1:], ignore_index -100, summed over the
  effective batch and divided by its number of trained tokens (num_items_in_batch)
- torch.nn.utils.clip_grad_norm_, torch.optim.AdamW (betas 0.9/0.999, eps 1e-8, wd 0)
- get_{linear,cosine,constant}_schedule_with_warmup multipliers
Prints {"losses": {step: loss}, "max_diff": max |A,B(reference) - A,B(FINAL_ADAPTER)|}.
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "model"))
from ref_llama import forward, read_safetensors  # noqa: E402


def multiplier(kind, step, warmup, total):
    if step < warmup:
        return step / max(1, warmup)
    if kind == "constant":
        return 1.0
    progress = (step - warmup) / max(1, total - warmup)
    if kind == "linear":
        return max(0.0, (total - step) / max(1, total - warmup))
    return max(0.0, 0.5 * (1.0 + math.cos(math.pi * 0.5 * 2.0 * progress)))


def main():
    model, ckpt, examples_file, final = sys.argv[1:5]
    o = dict(zip(sys.argv[5::2], sys.argv[6::2]))
    torch.set_num_threads(1)
    with open(model + "/config.json") as f:
        cfg = json.load(f)
    w = {k: v.float() for k, v in read_safetensors(model + "/model.safetensors").items()}
    with open(ckpt + "/adapter_config.json") as f:
        acfg = json.load(f)
    scaling = acfg["lora_alpha"] / (math.sqrt(acfg["r"]) if acfg.get("use_rslora") else acfg["r"])
    ad = read_safetensors(ckpt + "/adapter_model.safetensors")
    opt_state = read_safetensors(ckpt + "/optimizer.safetensors")
    with open(ckpt + "/trainer_state.json") as f:
        start = json.load(f)["global_step"]
    with open(examples_file) as f:
        examples = json.load(f)

    names = sorted(n for n in ad if n.endswith(".lora_A.weight"))
    lora, params = {}, []
    for n in names:
        a = ad[n].clone().requires_grad_(True)
        b = ad[n.replace("lora_A", "lora_B")].clone().requires_grad_(True)
        lora[n[len("base_model.model."):-len(".lora_A.weight")]] = (a, b, scaling)
        params += [(n, a), (n.replace("lora_A", "lora_B"), b)]
    opt = torch.optim.AdamW([p for _, p in params], lr=float(o["--lr"]), betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.0, foreach=False)
    for name, p in params:
        opt.state[p] = {"step": torch.tensor(float(start)), "exp_avg": opt_state[name + ".exp_avg"].clone(),
                        "exp_avg_sq": opt_state[name + ".exp_avg_sq"].clone()}

    total, warmup = int(o["--total"]), int(o["--warmup"])
    n_targets = sum(sum(1 for l in e["labels"][1:] if l != -100) for e in examples)
    losses = {}
    for step in range(start, total):
        for g in opt.param_groups:
            g["lr"] = float(o["--lr"]) * multiplier(o["--sched"], step, warmup, total)
        opt.zero_grad()
        loss_sum = 0.0
        for e in examples:
            logits = forward(cfg, w, e["input_ids"], torch.float32, lora)  # [T, vocab]
            labels = torch.tensor(e["labels"][1:])
            s = F.cross_entropy(logits[:-1], labels, ignore_index=-100, reduction="sum")
            (s / n_targets).backward()
            loss_sum += float(s)
        losses[step + 1] = loss_sum / n_targets
        torch.nn.utils.clip_grad_norm_([p for _, p in params], float(o["--max-grad-norm"]))
        opt.step()

    ours = read_safetensors(final + "/adapter_model.safetensors")
    max_diff = max(float((ours[n] - p.detach()).abs().max()) for n, p in params)
    print(json.dumps({"losses": losses, "max_diff": max_diff}))


if __name__ == "__main__":
    main()
