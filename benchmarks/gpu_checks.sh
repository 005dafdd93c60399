#!/usr/bin/env bash
# The GPU checks of issues 14 and 22 in one run, for a lent GPU (never CI): the CUDA tests
# (fp32 against the CPU, bf16/fp16 autocast, a real out-of-memory, a GPU checkpoint opened on the
# CPU, Hugging Face greedy against generate), the engine against a plain loop in fp32 and bf16, and
# Hugging Face decoding against generate. Logs go to $OUT (default /tmp/gpu-checks).
#
#     bash benchmarks/gpu_checks.sh
set -u
OUT=${OUT:-/tmp/gpu-checks}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)" | tee -a "$OUT/gpu.txt"
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/training/test_cuda.py 2>&1 | tee "$OUT/test_cuda.log"
for precision in fp32 bf16; do
  timeout 150 python3 benchmarks/bench_engine_overhead.py --device cuda --precision "$precision" \
    --cases gpu --rounds 4 --steps 40 2>&1 | tee "$OUT/engine_$precision.log"
done
timeout 150 python3 benchmarks/bench_hf_decode.py --device cuda --no-open --rounds 5 2>&1 | tee "$OUT/hf_decode.log"
