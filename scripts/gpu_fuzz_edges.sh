#!/usr/bin/env bash
# The fuzz tests whose findings sat at the dtype's edges, judged again against float64 (the fuzz judgement of
# compat.evidence.numerics), and a user's repository written from the README with its planted bugs, on the GPU
# runner in one call of the device tool:
#   bash scripts/gpu_fuzz_edges.sh edges SECONDS   the suite's edge rows (fuzz_overflow_as_eager), Liger-Kernel's and
#                                                  examples/my_kernels' edge rows
#   bash scripts/gpu_fuzz_edges.sh views SECONDS   a sample of view findings recorded before findings were pinned
#   bash scripts/gpu_fuzz_edges.sh user SECONDS    tests/test_user_repository.py, on CUDA
# Each run gates without accepting; its results file is accepted here afterwards (python -m compat accept). Writes
# one archive into $OUT, fuzz-edges-<part>.tar.gz, of each run's results and log. Liger-Kernel travels as a wheel in
# .whl/ (carry it).
set -u
part=$1 seconds=$2
. "$(dirname "$0")/gpu_wheels.sh"  # root, PYTHONPATH, the carried wheels
work=$(mktemp -d)

# The CUDA cells of the fuzz rows whose catalogue entry is one of KEYS, in the repository of the current folder.
edge_cells() {
    python - "$@" <<'EOF'
import subprocess, sys, yaml
keys = set(sys.argv[1:])
ini_cells = set(subprocess.run([sys.executable, "-m", "compat", "cells", "--devices=cuda"], capture_output=True,
                               text=True, check=True).stdout.split())
rows = yaml.safe_load(open("expectations.yaml")).get("fuzz", [])
wanted = {i.replace("-*-", f"-{d}-") for r in rows if r.get("known") in keys and r.get("host") == "gpu"
          for i in r["ids"] for d in ("float32", "float16", "bfloat16")}
print("\n".join(sorted(wanted & ini_cells)))
EOF
}

run() {  # NAME SECONDS [args]: gpu_run.sh into the work folder
    OUT=$work bash "$root/scripts/gpu_run.sh" "$@"
}

if [ "$part" = edges ]; then
    edge_cells fuzz_overflow_as_eager > "$work/suite-cells.txt"
    run suite-edges $((seconds * 2 / 9)) --compat-devices=cuda --compat-cells "$work/suite-cells.txt" -m fuzz
    (cd examples/liger_kernel && edge_cells liger_layer_norm_overflow liger_rms_norm_grad_overflow \
        liger_ce_smoothing_overflow > "$work/liger-cells.txt" \
        && run liger-edges $((seconds * 2 / 9)) --compat-devices=cuda --compat-cells "$work/liger-cells.txt" -m fuzz)
    (cd examples/my_kernels && edge_cells my_bias_relu_nan my_gelu_tanh_flush my_layer_norm_overflow \
        my_rms_norm_grad_overflow my_swish_grad_at_max > "$work/my-kernels-cells.txt" \
        && run my-kernels-edges $((seconds * 5 / 9)) --compat-devices=cuda --compat-cells "$work/my-kernels-cells.txt" \
        -m fuzz)
fi
if [ "$part" = views ]; then  # view findings recorded before findings were pinned: each row's example replays
    run suite-views "$seconds" --compat-devices=cuda --compat-kernels=silu --compat-styles=triton_op,raw_jit \
        --compat-stages=decompose_strict,export_nonstrict,aoti_strict --compat-dtypes=float32 -m fuzz
fi
if [ "$part" = user ]; then  # a user's repository with planted bugs (tests/test_user_repository.py), on CUDA
    start=$(date +%s)
    timeout -s INT "$seconds" python -m pytest tests/test_user_repository.py -p no:cacheprovider -q \
        > "$work/user-repository.log" 2>&1
    echo "user repository test: exit $? after $(( $(date +%s) - start )) s"; tail -3 "$work/user-repository.log"
fi
wc -l "$work"/*.txt
tar czf "$OUT/fuzz-edges-$part.tar.gz" -C "$work" .
