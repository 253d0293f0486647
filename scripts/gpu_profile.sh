#!/usr/bin/env bash
# Where the gate's time goes on the GPU runner (issue: the gate's cost), in one call of the device tool:
#   bash scripts/gpu_profile.sh SECONDS_LIGER [SECONDS_QUICK]
# Runs Liger-Kernel's gate (examples/liger_kernel, its CUDA cells and fuzz tests, lanes split by the durations its ini
# names) and then, given its seconds, the suite's quick tier on CUDA, each cut by SIGINT at its seconds
# (the run writes what it measured), and profiles each run
# (python -m compat profile). Writes one archive into $OUT, gpu-profile.tar.gz: each run's results, log and profile.
# Liger-Kernel travels as a wheel in .whl/ (carry it). DURATIONS names another results file to split lanes by;
# REPRODUCE, a finding's reproducer to run after the gate.
set -u
. "$(dirname "$0")/gpu_wheels.sh"  # root, PYTHONPATH, the carried wheels
work=$(mktemp -d)
nproc; python -c "import os; print('affinity', len(os.sched_getaffinity(0)))"
run() {  # NAME SECONDS [args]: gpu_run.sh into the work folder, then its profile
    OUT=$work bash "$root/scripts/gpu_run.sh" "$@"
    python -m compat profile "$work/$1.json" --top 15 > "$work/$1.profile.txt" 2>&1
    head -30 "$work/$1.profile.txt"
    tar -czf "$OUT/gpu-profile.tar.gz" -C "$work" .  # after each run: a call cut at its limit keeps what ran
}
# Without DURATIONS the example's ini names its committed files (compat_durations).
(cd examples/liger_kernel && run liger-gate "$1" --compat-devices=cuda ${DURATIONS:+--compat-durations="$DURATIONS"})
if [ "${2:-0}" -gt 0 ]; then run quick-tier "$2" --compat-devices=cuda --compat-tier=quick; fi
if [ -n "${REPRODUCE:-}" ]; then  # a finding's reproducer, one command, from the example's folder
    (cd examples/liger_kernel && timeout 120 bash -c "$REPRODUCE") > "$work/reproducer.log" 2>&1
    echo "reproducer exit $?"; tail -3 "$work/reproducer.log"
    tar -czf "$OUT/gpu-profile.tar.gz" -C "$work" .
fi
