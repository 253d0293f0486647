#!/usr/bin/env bash
# Issue 39's check on the GPU, one call of the device tool on one H100 (docs/EVIDENCE.md says what it measured):
#   bash scripts/issue39_gpu.sh
# The code after issue 39 (a stage's compiler on the Stage, the parent-child protocol module, ruff format, warnings
# as errors in this repository's pytest ini) gating, without accepting anything:
# 1. the suite's two kernels with gradients in the four canonical styles, every CUDA stage, and their fuzz tests;
# 2. examples/my_kernels, a user's repository of ops as shipped, every CUDA cell and fuzz test.
set -u
root=$(pwd)
export PYTHONPATH=$root${PYTHONPATH:+:$PYTHONPATH}
bash scripts/gpu_run.sh issue39-canonical 270 --compat-devices=cuda --compat-kernels=silu,rms_norm \
    --compat-styles=raw_jit,triton_op,custom_op,autograd_function
(cd examples/my_kernels && OUT=$OUT bash "$root/scripts/gpu_run.sh" issue39-my-kernels 270 --compat-devices=cuda)
