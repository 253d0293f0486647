#!/usr/bin/env bash
# Issue 36's GPU call (made on 2026-11-26 on one H100: docs/EVIDENCE.md):
#   bash scripts/issue36_gpu.sh SECONDS
# 1. Liger's functional liger_cross_entropy, declared with keywords and an input left out, on CUDA (with accept, so
#    its cells are fuzzed too); needs the Liger wheel carried (see scripts/issue35_gpu.sh's callers).
# 2. A cases module that reads the GPU at import, run with compat_children = fresh in its ini: every fresh child that
#    compiles C++ uses the run's one ISA detection (its cpu_s shows no 40-70 s detection of its own).
set -u
seconds=$1
root=$(pwd)
export PYTHONPATH=$root${PYTHONPATH:+:$PYTHONPATH}
(cd examples/liger_kernel && OUT=$OUT bash "$root/scripts/gpu_run.sh" issue36-liger-cross-entropy-fn \
    $((seconds / 2)) --compat-accept --compat-devices=cuda --compat-kernels=liger_cross_entropy_fn)
repo=$(mktemp -d)
printf 'import torch\nPROPS = torch.cuda.get_device_properties(0)  # as Triton tutorials read it, at import\n' \
    > "$repo/tutorial_cases.py"
printf '[pytest]\ncompat_cases = tutorial_cases compat.matrix.kernels\ncompat_children = fresh\npythonpath = .\n' \
    > "$repo/pytest.ini"
(cd "$repo" && OUT=$OUT bash "$root/scripts/gpu_run.sh" issue36-fresh-children $((seconds / 2)) \
    --compat-kernels=silu --compat-styles=triton_op --compat-dtypes=float32 --compat-devices=cuda \
    --compat-stages=eager,compile_cpp_wrapper,aoti_strict -m "not fuzz")
