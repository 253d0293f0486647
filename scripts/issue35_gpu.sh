#!/usr/bin/env bash
# Issue 35's GPU calls: the cells whose outcome the gradient, float64 and autotune-pinning changes can move, run with
# --compat-accept so the cells nothing recorded yet are fuzzed too (the rows are written here, from the results):
#   bash scripts/issue35_gpu.sh suite SECONDS     the suite's training stages (eager_backward, compile_backward,
#                                                 compile_dynamic_backward) on CUDA, with their fuzz tests
#   bash scripts/issue35_gpu.sh examples SECONDS  Liger-Kernel's and my_kernels' ops (every stage of the new
#                                                 liger_silu_mul, the training stages of the others), then the
#                                                 probe stages of axpy_inplace's autotuned styles, every config pinned
#   bash scripts/issue35_gpu.sh autotune SECONDS  every autotuned style of every kernel, each config pinned: the
#                                                 stages that run the kernel through its autotuner (not AOTI)
#   bash scripts/issue35_gpu.sh h100 SECONDS      on an H100: LigerSiLUMulFunction's every stage, Liger's training
#                                                 stages, then axpy_inplace's autotuned cells as in `autotune`
#   bash scripts/issue35_gpu.sh rest-N SECONDS    (N = 1, 2, 3) the 159 autotuned cells `autotune` did not reach
#                                                 (heuristics and prune styles of matmul, silu, silu_mul, axpy_inplace),
#                                                 a third of their probe stages per call: each of their children
#                                                 compiles every stage once per config (205 s for one stage, H200)
set -u
part=$1 seconds=$2
root=$(pwd)
export PYTHONPATH=$root${PYTHONPATH:+:$PYTHONPATH}
training=eager_backward,compile_backward,compile_dynamic_backward
autotuned=autotune_raw,autotune_triton_op,autotune_prune_triton_op,autotune_restore_value_triton_op,autotune_reset_to_zero_triton_op,autotune_pre_hook_triton_op,autotune_heuristics_triton_op,heuristics_autotune_triton_op
at_run_time=eager,$training,flop_count,opcheck,compile_eager,compile_aot_eager,compile_inductor,compile_dynamic,compile_cudagraphs,compile_max_autotune,compile_cpp_wrapper,export_strict,save_load_strict,decompose_strict,export_static_strict,export_nonstrict,save_load_nonstrict,decompose_nonstrict,export_static_nonstrict
if [ "$part" = suite ]; then
    bash scripts/gpu_run.sh issue35-training "$seconds" --compat-accept --compat-devices=cuda --compat-stages=$training
elif [ "$part" = examples ]; then
    start=$(date +%s)
    (cd examples/liger_kernel && OUT=$OUT bash "$root/scripts/gpu_run.sh" issue35-liger-silu-mul $((seconds / 4)) \
        --compat-accept --compat-kernels=liger_silu_mul)
    (cd examples/liger_kernel && OUT=$OUT bash "$root/scripts/gpu_run.sh" issue35-liger-training $((seconds / 4)) \
        --compat-accept --compat-stages=$training)
    (cd examples/my_kernels && OUT=$OUT bash "$root/scripts/gpu_run.sh" issue35-my-kernels-training $((seconds / 6)) \
        --compat-accept --compat-stages=$training)
    left=$(( seconds - ($(date +%s) - start) ))
    bash scripts/gpu_run.sh issue35-axpy-autotune "$left" --compat-accept --compat-devices=cuda \
        --compat-kernels=axpy_inplace --compat-styles=autotune_raw,autotune_triton_op,autotune_prune_triton_op,autotune_restore_value_triton_op,autotune_reset_to_zero_triton_op,autotune_pre_hook_triton_op,autotune_heuristics_triton_op,heuristics_autotune_triton_op \
        --compat-stages=eager,compile_eager,compile_aot_eager,compile_inductor,compile_dynamic,compile_cudagraphs,compile_max_autotune,compile_cpp_wrapper,export_static_strict,export_static_nonstrict,flop_count,opcheck -m "not fuzz"
fi
if [ "$part" = rms_norm ]; then  # the suite call's rms_norm fuzz tests again, after a harness fix (compare_gradient)
    bash scripts/gpu_run.sh issue35-rms-norm-training "$seconds" --compat-accept --compat-devices=cuda \
        --compat-kernels=rms_norm --compat-stages=$training
fi
if [ "$part" = liger ]; then  # Liger's probe stages that train, and liger_silu_mul's, after the integer-input fix
    (cd examples/liger_kernel && OUT=$OUT bash "$root/scripts/gpu_run.sh" issue35-liger-probes "$seconds" \
        --compat-accept --compat-devices=cuda --compat-kernels=liger_silu_mul,liger_rms_norm,liger_cross_entropy,liger_fused_linear_cross_entropy,liger_swiglu_mlp \
        --compat-stages=eager,compile_inductor,$training)
fi
if [ "$part" = autotune ]; then
    bash scripts/gpu_run.sh issue35-autotune-pinned "$seconds" --compat-accept --compat-devices=cuda \
        --compat-styles=$autotuned --compat-stages=$at_run_time -m "not fuzz"
fi
if [ "$part" = h100 ]; then
    start=$(date +%s)
    (cd examples/liger_kernel && OUT=$OUT bash "$root/scripts/gpu_run.sh" issue35-h100-liger-silu-mul $((seconds / 3)) \
        --compat-accept --compat-devices=cuda --compat-kernels=liger_silu_mul)
    (cd examples/liger_kernel && OUT=$OUT bash "$root/scripts/gpu_run.sh" issue35-h100-liger-training $((seconds / 4)) \
        --compat-accept --compat-devices=cuda --compat-stages=$training)
    left=$(( seconds - ($(date +%s) - start) ))
    bash scripts/gpu_run.sh issue35-h100-axpy-autotune-pinned "$left" --compat-accept --compat-devices=cuda \
        --compat-kernels=axpy_inplace --compat-styles=$autotuned --compat-stages=$at_run_time -m "not fuzz"
fi
case "$part" in
    rest-1) stages=eager,eager_backward,flop_count,opcheck,compile_eager,compile_aot_eager ;;
    rest-2) stages=compile_inductor,compile_dynamic,compile_backward,compile_dynamic_backward ;;
    rest-3) stages=compile_cudagraphs,compile_max_autotune,compile_cpp_wrapper,export_static_strict,export_static_nonstrict ;;
    *) stages= ;;
esac
if [ -n "$stages" ]; then
    bash scripts/gpu_run.sh "issue35-autotune-pinned-$part" "$seconds" --compat-accept --compat-devices=cuda \
        --compat-kernels=matmul,silu,silu_mul,axpy_inplace \
        --compat-styles=autotune_heuristics_triton_op,autotune_prune_triton_op --compat-stages=$stages -m "not fuzz"
fi
