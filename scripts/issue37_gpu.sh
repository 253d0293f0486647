#!/usr/bin/env bash
# Issue 37's GPU calls still to make (docs/EVIDENCE.md says what was measured so far):
#   bash scripts/issue37_gpu.sh whole SECONDS       the whole CUDA matrix and its fuzz tests, one run (on
#                                                   nvidia-h100-x2 / nvidia-h200-x2; target 600 s)
#   bash scripts/issue37_gpu.sh quick SECONDS       --compat-tier quick, every CUDA cell of the tier (one H100;
#                                                   target 300 s)
#   bash scripts/issue37_gpu.sh liger SECONDS       examples/liger_kernel, every cell and its fuzz tests (one H100;
#                                                   target 120 s); needs the Liger wheel carried (issue35_gpu.sh's
#                                                   callers say how)
#   bash scripts/issue37_gpu.sh reads-gpu SECONDS   examples/my_kernels with its cases module reading the device at
#                                                   import, default workers, then the same cells without the read
#                                                   (target: within 20%)
set -u
part=$1 seconds=$2
root=$(pwd)
export PYTHONPATH=$root${PYTHONPATH:+:$PYTHONPATH}
if [ "$part" = whole ]; then
    bash scripts/gpu_run.sh issue37-whole "$seconds" --compat-devices=cuda
elif [ "$part" = quick ]; then
    bash scripts/gpu_run.sh issue37-quick "$seconds" --compat-tier=quick --compat-devices=cuda
elif [ "$part" = liger ]; then
    (cd examples/liger_kernel && OUT=$OUT bash "$root/scripts/gpu_run.sh" issue37-liger "$seconds" --compat-devices=cuda)
elif [ "$part" = reads-gpu ]; then
    for reads in yes no; do
        repo=$(mktemp -d)
        cp -r examples/my_kernels/. "$repo"
        if [ $reads = yes ]; then  # as Triton's tutorials read it, at import
            printf '\nimport torch as _t\nPROPS = _t.cuda.get_device_properties(0)\n' >> "$repo/my_kernels/cases.py"
        fi
        (cd "$repo" && OUT=$OUT bash "$root/scripts/gpu_run.sh" "issue37-my-kernels-reads-$reads" $((seconds / 2)) \
            --compat-devices=cuda)
    done
else
    echo "usage: bash scripts/issue37_gpu.sh whole|quick|liger|reads-gpu SECONDS" >&2
    exit 2
fi
