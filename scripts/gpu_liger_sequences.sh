#!/usr/bin/env bash
# Whether Liger's findings that need earlier calls hold from one run to the next, in one call of the device tool:
#   bash scripts/gpu_liger_sequences.sh SECONDS_EACH
# In examples/liger_kernel: the fuzz tests of RMSNorm and SiLUMul (run 1), an accept of run 1 into the example's
# expectations, the same tests again against them (run 2, which must be green), then one recorded reproducer
# (python -m compat fuzz ... --after ...) as a user runs it. Writes $OUT/liger-sequences.tar.gz: both runs' results
# and logs, the accepted expectations, the reproducer's output. Liger-Kernel travels as a wheel in .whl/ (carry it).
set -u
. "$(dirname "$0")/gpu_wheels.sh"  # root, PYTHONPATH, the carried wheels
work=$(mktemp -d)
select=(--compat-devices=cuda -k "test_fuzz and (liger_rms_norm or liger_silu_mul)")
pack() { cp examples/liger_kernel/expectations.yaml "$work/"; tar -czf "$OUT/liger-sequences.tar.gz" -C "$work" .; }
(cd examples/liger_kernel && OUT=$work bash "$root/scripts/gpu_run.sh" run-1 "$1" "${select[@]}")
(cd examples/liger_kernel && python -m compat accept "$work/run-1.json" > "$work/accept.log" 2>&1; tail -5 "$work/accept.log")
pack
(cd examples/liger_kernel && OUT=$work bash "$root/scripts/gpu_run.sh" run-2 "$1" "${select[@]}")
pack
command=$(python - <<'PY'
import yaml
rows = yaml.safe_load(open("examples/liger_kernel/expectations.yaml"))["fuzz"]
print(next(r["reproducer"] for r in rows if "--after" in (r.get("reproducer") or "")))
PY
)
(cd examples/liger_kernel && timeout 100 bash -c "$command") > "$work/reproducer.log" 2>&1
echo "reproducer exit $?"; tail -2 "$work/reproducer.log" | cut -c1-400
pack
