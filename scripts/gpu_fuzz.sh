#!/usr/bin/env bash
# The fuzz tests on the GPU runner, one shard per call (the device tool's 10-minute limit):
#   bash scripts/gpu_fuzz.sh NAME SELECTION [SECONDS]
#   SELECTION: --compat-stages=eager,compile_eager   or   --compat-cells=FILE
# Writes $OUT/fuzz-NAME.json (results, also when cut short by the time limit) and $OUT/fuzz-NAME.log.gz.
set -u
name=$1 selection=$2 seconds=${3:-560}
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libstdc++.so.6  # AOTI packages segfault on load without it there
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python -c "import torch, triton, pytest, hypothesis, xdist; print(torch.__version__, triton.__version__, pytest.__version__, hypothesis.__version__, xdist.__version__)"
timeout -s INT "$seconds" python -m pytest tests/test_fuzz.py -q -n auto -p no:benchmark --compat-devices=cuda \
    "$selection" --compat-fuzz-profile=thorough --compat-results="$OUT/fuzz-$name.json" \
    --compat-run-dir=/tmp/run-"$name" > "$OUT/fuzz-$name.log" 2>&1
echo "pytest exit: $?"
tail -40 "$OUT/fuzz-$name.log"
gzip "$OUT/fuzz-$name.log"
