#!/usr/bin/env bash
# Issue 38's evidence, one call of the device tool on one H100 (docs/EVIDENCE.md says what it measured):
#   bash scripts/issue38_gpu.sh
# 1. compile_dynamic_backward on CUDA, every kernel and style it applies to, with its fuzz tests: the stage came
#    after the H100 matrix was measured, so the measured chart's "dynamic, grads" row had no cell;
# 2. silu-triton_op_subclass at every stage on CUDA, again: its static strict export's outputs are now read before
#    they are compared (compat.child.checks.produced), which the last H100 call ran only half of.
set -u
export PYTHONPATH=$(pwd)${PYTHONPATH:+:$PYTHONPATH}
bash scripts/gpu_run.sh issue38-dynamic-backward 330 --compat-devices=cuda --compat-stages=compile_dynamic_backward \
    --compat-accept
bash scripts/gpu_run.sh issue38-subclass 200 --compat-devices=cuda --compat-kernels=silu \
    --compat-styles=triton_op_subclass --compat-accept
