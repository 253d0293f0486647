#!/usr/bin/env bash
# On the GPU runner, after scripts/gpu_wheels.sh put Liger on PYTHONPATH: the four modes at once, 4 cores each, each
# with fresh Inductor and Triton caches, one compile thread (as the gate's children), cut at SECONDS:
#   bash results/benchmark/flce-cpp-wrapper/run_modes.sh SECONDS OUTDIR
set -u
seconds=$1 out=$2
here=$(dirname "$0")
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libstdc++.so.6 TORCHINDUCTOR_COMPILE_THREADS=1 PYTHONUNBUFFERED=1
pids=()
i=0
for mode in inductor cpp_wrapper cpp_wrapper_separate max_autotune; do
    separate=0
    [ "$mode" = cpp_wrapper_separate ] && separate=1
    TORCHINDUCTOR_CPP_WRAPPER_BUILD_SEPARATE=$separate TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) TRITON_CACHE_DIR=$(mktemp -d) \
        taskset -c "$(( i * 4 ))-$(( i * 4 + 3 ))" timeout -s KILL "$seconds" \
        python "$here/flce_compile_modes.py" "$mode" "$out/flce-$mode.json" > "$out/flce-$mode.log" 2>&1 &
    pids+=($!)
    i=$(( i + 1 ))
done
wait "${pids[@]}"
tail -n 3 "$out"/flce-*.log
