#!/usr/bin/env bash
# A matrix run on the GPU runner, in one call of the device tool (10 minutes at most):
#   bash scripts/gpu_run.sh NAME SECONDS [pytest args...]
# Writes $OUT/NAME.json (the results, also when cut short: SIGINT at SECONDS writes what was measured) and
# $OUT/NAME.log.gz. Runs from the checkout with the runner's preinstalled torch and triton; installs nothing.
# The copy on the runner may have no git: name the commit it is (COMPAT_COMMIT=$(git rev-parse HEAD) in the call) so
# that the results record it.
set -u
name=$1 seconds=$2
shift 2
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libstdc++.so.6  # AOTI packages segfault on load without it there
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python -c "import torch, triton, pytest, hypothesis, xdist; print(torch.__version__, triton.__version__, pytest.__version__, hypothesis.__version__, xdist.__version__)"
start=$(date +%s)
timeout -s INT "$seconds" python -m compat run --results "$OUT/$name.json" -p no:randomly "$@" > "$OUT/$name.log" 2>&1
echo "exit $? after $(( $(date +%s) - start )) s"
grep -E "cells ran here|differ|fuzz \(|^(FAILED|ERROR)|HARNESS|INTERRUPTED|passed|failed" "$OUT/$name.log" | tail -25
gzip -f "$OUT/$name.log"
