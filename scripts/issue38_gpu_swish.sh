#!/usr/bin/env bash
# One H100 call after issue 39's check (docs/EVIDENCE.md says what it measured):
#   bash scripts/issue38_gpu_swish.sh
# 1. examples/my_kernels' my_swish, every CUDA cell and fuzz test, with its reference kept in float64 for the
#    harness's float64 run (the user page showed the op silently wrong where only its reference had underflowed);
# 2. axpy_inplace-autotune_raw-decompose_strict, the three H100 cells that passed where their rows say mismatch.
set -u
root=$(pwd)
export PYTHONPATH=$root${PYTHONPATH:+:$PYTHONPATH}
(cd examples/my_kernels && OUT=$OUT bash "$root/scripts/gpu_run.sh" issue38-my-swish 240 --compat-devices=cuda \
    --compat-kernels=my_swish)
bash scripts/gpu_run.sh issue38-axpy-decompose 200 --compat-devices=cuda --compat-kernels=axpy_inplace \
    --compat-styles=autotune_raw --compat-stages=decompose_strict
