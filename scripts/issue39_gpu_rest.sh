#!/usr/bin/env bash
# The rest of issue 39's run of examples/my_kernels on one H100 (its first call was cut at 270 s with 1,245 of its
# 2,320 CUDA cells and 69 fuzz tests done): the cells it did not reach with their fuzz tests, then the fuzz tests of
# the cells it did.
set -u
root=$(pwd)
export PYTHONPATH=$root${PYTHONPATH:+:$PYTHONPATH}
cd examples/my_kernels
OUT=$OUT bash "$root/scripts/gpu_run.sh" issue39-my-kernels-rest 280 --compat-devices=cuda \
    --compat-cells="$root/results/runs/cells/issue39-my-kernels-rest.txt"
OUT=$OUT bash "$root/scripts/gpu_run.sh" issue39-my-kernels-fuzz-rest 250 --compat-devices=cuda -m fuzz \
    --compat-cells="$root/results/runs/cells/issue39-my-kernels-fuzz-rest.txt"
