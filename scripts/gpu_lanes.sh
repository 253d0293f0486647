#!/usr/bin/env bash
# Several runs at once on the GPU runner, in one call of the device tool (10 minutes at most):
#   bash scripts/gpu_lanes.sh DEADLINE_S 'LANE 0' 'LANE 1' ...
# Lane i runs on GPU i mod (the GPUs) and on its own share of the CPU cores (taskset), as `bash -c` from the
# checkout's root, with $work, the folder whose files come back, and `run NAME SECONDS [pytest args]` (a matrix run
# by scripts/gpu_run.sh into $work, then its profile). At DEADLINE_S every run still going gets SIGINT (a run writes
# what it measured), then whatever exists is packed: one archive, $OUT/lanes.tar.gz, also packed after each run.
# The carried wheels (.whl/) install first (scripts/gpu_wheels.sh); name the commit in the call: COMPAT_COMMIT=...
# (in each lane where lanes run different checkouts: a before/after call).
set -u
. "$(dirname "$0")/gpu_wheels.sh"  # root, PYTHONPATH, the carried wheels
deadline=$1
shift
export work=$(mktemp -d)
gpus=$(nvidia-smi -L | wc -l)
cores=$(nproc)
per=$(( cores / $# ))
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | tee "$work/machine.txt"
echo "cores $cores, lanes $#, commit ${COMPAT_COMMIT:-unknown}" | tee -a "$work/machine.txt"
# One pack at a time: two lanes ending together raced on the same .part file (one mv found it gone).
pack() { ( flock 9 && tar -czf "$OUT/lanes.tar.gz.part" -C "$work" . && mv "$OUT/lanes.tar.gz.part" "$OUT/lanes.tar.gz" ) 9>"$work.lock"; }
export -f pack
run() {  # NAME SECONDS [pytest args]: one matrix run into $work, its profile beside it
    OUT=$work bash "$root/scripts/gpu_run.sh" "$@"
    python -m compat profile "$work/$1.json" --top 10 > "$work/$1.profile.txt" 2>&1
    pack
}
export -f run
export root
pids=()
i=0
for lane in "$@"; do
    first=$(( i * per ))
    CUDA_VISIBLE_DEVICES=$(( i % gpus )) taskset -c "$first-$(( first + per - 1 ))" \
        bash -c "$lane" > "$work/lane$i.log" 2>&1 &
    pids+=($!)
    i=$(( i + 1 ))
done
# At the deadline: SIGINT to each run (it writes its results), then nothing of the harness is left running.
# Its sleep ends with it: one left behind held the call open until the deadline after every lane had finished.
(
    trap 'kill "$nap" 2>/dev/null; exit' TERM
    sleep "$deadline" & nap=$!
    wait "$nap"
    pkill -INT -f -- "-m compat run"; sleep 20; pkill -KILL -f -- "-m compat"
) >/dev/null 2>&1 &
watchdog=$!
wait "${pids[@]}"
kill "$watchdog" 2>/dev/null
pack
for f in "$work"/lane*.log; do echo "== $f"; tail -15 "$f"; done
