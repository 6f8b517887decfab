#!/bin/sh
# Stand-in for `llamafactory-cli train CONFIG.yaml` (LLaMA-Factory cannot run in tests):
# checks it was handed a LoRA SFT config, writes trainer_log.jsonl lines in
# LLaMA-Factory's own format (LogCallback: str(timedelta) times, `lr`), then ends the way
# MODE says. Usage: fake_llamafactory.sh MODE train CONFIG.yaml
mode=$1
yaml=$3
grep -q '^finetuning_type: lora' "$yaml" || { echo "not a LoRA SFT config: $yaml" >&2; exit 2; }
out=$(sed -n 's/^output_dir: *//p' "$yaml")
mkdir -p "$out"
total=10
[ "$mode" = ok ] && total=3
echo "[INFO|trainer.py] ***** Running training *****"
# silent_drop_kill, silent_drop_kill_once: silent, with a marker in the run directory that makes
# the box's stand-in `cat` (test_remote_cli) drop the SSH connection that comes to kill the run:
# every time, or the first time only
case $mode in
  silent_drop_kill) : > drop-kill; mode=silent ;;
  silent_drop_kill_once) : > drop-kill-once; mode=silent ;;
esac
# silent: stuck before the first step (a model that never finishes loading)
[ "$mode" = silent ] && { echo "Loading checkpoint shards:   0%"; sleep 300; exit 0; }
for s in 1 2 3; do
  loss=$(echo "0.56 0.41 0.23" | cut -d' ' -f$s)
  echo "{\"current_steps\": $s, \"total_steps\": $total, \"loss\": $loss, \"lr\": 9.5e-05, \"epoch\": 0.$s, \"percentage\": $((s * 100 / total)).0, \"elapsed_time\": \"0:00:0$s\", \"remaining_time\": \"0:00:1$s\"}" >> "$out/trainer_log.jsonl"
  echo "{'loss': $loss, 'learning_rate': 9.5e-05, 'epoch': 0.$s}"
done
case $mode in
  ok)
    echo "{\"current_steps\": 3, \"total_steps\": 3, \"epoch\": 3.0, \"percentage\": 100.0, \"elapsed_time\": \"0:00:03\", \"remaining_time\": \"0:00:00\"}" >> "$out/trainer_log.jsonl"
    printf '{"r": 16, "lora_alpha": 32, "peft_type": "LORA"}' > "$out/adapter_config.json"
    printf 'ADAPTER' > "$out/adapter_model.safetensors"
    exit 0 ;;
  traceback)
    printf 'Traceback (most recent call last):\n  File "launcher.py", line 23, in <module>\n    launch()\nOSError: Can'"'"'t load tokenizer for /models/llama-70b\n' >&2
    exit 1 ;;
  oom_rocm)
    printf 'Traceback (most recent call last):\n  File "trainer.py", line 1\ntorch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.96 GiB. GPU 0 has a total capacity of 191.98 GiB of which 120.00 MiB is free.\n' >&2
    exit 1 ;;
  oom_cuda)
    echo 'torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB' >&2
    exit 1 ;;
  nccl)
    echo 'torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error' >&2
    exit 1 ;;
  killed)
    kill -9 $$ ;;
  exit0)
    exit 0 ;;
  nan)
    echo "{\"current_steps\": 4, \"total_steps\": $total, \"loss\": NaN, \"lr\": 9.5e-05, \"epoch\": 0.4}" >> "$out/trainer_log.jsonl"
    sleep 300 ;;
  stall)
    sleep 300 ;;
  chatty)
    # Alive and talking, never another step: a hung collective's warnings.
    i=0
    while [ $i -lt 600 ]; do echo "[W ProcessGroupNCCL.cpp:1856] waiting for the collective ($i)" >&2; sleep 0.5; i=$((i+1)); done ;;
esac
