#!/usr/bin/env bash
# One prepared GPU run (≤ 9.5 minutes on one GPU): the trainer benchmark on CUDA, the project's
# training step beside the packed, whole-compiled peer on CUDA (plain, then with CUDA graphs), then
# every full-scale training job of both papers on that GPU. Results go under $OUT (default: a temp
# folder):
#   env.txt            nvidia-smi, python, torch, and whether the imports work
#   trainer_cuda.json  benchmarks/trainer.py --device cuda (ratios, GFLOP/s, fp32 matmul rate)
#   trainer_cuda.log
#   peer_cuda.json     benchmarks/peer_step.py --device cuda (ms a step, events and CUDA kernels
#   peer_cuda.log        a step, compile, loss differences; both jobs)
#   peer_cudagraphs.json  the same with the peer under CUDA graphs (mode="reduce-overhead")
#   peer_cudagraphs.log
#   gpu_full.json      benchmarks/gpu_train.py: per-job wall seconds and status, total wall
#   gpu_full.log
#
# Run from the repository root on the GPU machine (it gets a copy of the working tree and has
# no network): `bash benchmarks/gpu.sh`. Nothing is installed or downloaded: it uses the
# machine's python3 with its own torch (CUDA build), numpy, pandas, pyarrow and PyYAML, and runs
# this tree's package from src/ through PYTHONPATH (no `pip install -e .`). Snakemake is not
# needed there: gpu_train.py runs each training job as its rule's command line, from the same
# plan the Snakefile reads. Tables, figures, claims and the audit are not run (they take seconds
# on a CPU). Time: the trainer benchmark is capped at TRAINER_S (100 s), each peer run at PEER_S
# (110 s), the training at TRAIN_S (220 s; jobs still running then are stopped and recorded as
# "stopped at the budget"), so the whole script stays under 9.5 minutes. On the device tool: run
# it with timeout_s = 600.
#
# Status: prepared, not yet run on a GPU (no GPU was lent to the task that wrote it).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$(mktemp -d /tmp/attnrank-gpu-XXXX)}"
PY="${PY:-python3}"
PARALLEL="${PARALLEL:-6}"
TRAINER_S="${TRAINER_S:-100}"
PEER_S="${PEER_S:-110}"
TRAIN_S="${TRAIN_S:-220}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
start=$(date +%s)

{
  nvidia-smi || echo "nvidia-smi: not found"
  "$PY" -c 'import sys, torch, numpy, pandas, pyarrow, yaml, attnrank
print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda,
      "gpu", torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)'
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
if ! "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)'; then
  echo "gpu.sh: no CUDA device visible to $PY; nothing run" | tee -a "$OUT/env.txt"
  exit 2
fi

# 1. The vectorized trainer against a loop of single models, on the GPU (2 repeats).
timeout "$TRAINER_S" "$PY" benchmarks/trainer.py --device cuda --repeats 2 \
  --out "$OUT/trainer_cuda.json" 2>&1 | tee "$OUT/trainer_cuda.log"
echo "trainer benchmark: rc ${PIPESTATUS[0]}, $(( $(date +%s) - start )) s so far"

# 2. The training step beside the packed peer (rank_vs_m m12, multihead m12), plain, then the
#    peer under CUDA graphs.
for mode in cuda cudagraphs; do
  flag=$([ "$mode" = cudagraphs ] && echo --cudagraphs)
  timeout "$PEER_S" "$PY" benchmarks/peer_step.py --device cuda $flag --k 20 --timed 30 \
    --repeats 3 --out "$OUT/peer_$mode.json" 2>&1 | tee "$OUT/peer_$mode.log"
  echo "peer step ($mode): rc ${PIPESTATUS[0]}, $(( $(date +%s) - start )) s so far"
done

# 3. Every full-scale training job on the one GPU, PARALLEL processes at a time.
"$PY" benchmarks/gpu_train.py --scale full --device cuda --parallel "$PARALLEL" \
  --budget-s "$TRAIN_S" --out "$OUT/gpu_full.json" 2>&1 | tee "$OUT/gpu_full.log"
echo "full training: rc ${PIPESTATUS[0]}, $(( $(date +%s) - start )) s in all; results in $OUT"
