#!/usr/bin/env bash
# Where a long child of a run on the GPU runner is: beside a lane of scripts/gpu_lanes.sh,
#   bash scripts/gpu_stacks.sh OLDER_S &
# every 30 s, py-spy's dump of each of the harness's children (a fork of a worker's child server, or a fresh child)
# that has run longer than OLDER_S, into $work/stacks/PID.SECONDS.txt; each child's command line and working folder
# beside it. Runs until killed. py-spy comes from the carried wheels (scripts/gpu_wheels.sh installs it).
set -u
older=$1
mkdir -p "$work/stacks"
spy=$(command -v py-spy || echo /tmp/site/bin/py-spy)
while sleep 30; do
    for pid in $(pgrep -f "compat.child"); do
        age=$(ps -o etimes= -p "$pid" | tr -d ' ')
        parent=$(ps -o ppid= -p "$pid" | tr -d ' ')
        [ -n "$age" ] && [ "$age" -gt "$older" ] || continue
        # A worker's server lives the whole run: only its forks (and fresh children) are cells.
        grep -q "compat.child.server" "/proc/$pid/cmdline" 2>/dev/null \
            && ! grep -q "compat.child.server" "/proc/$parent/cmdline" 2>/dev/null && continue
        out="$work/stacks/$pid.$age.txt"
        { readlink "/proc/$pid/cwd"; pstree -pa "$pid" 2>/dev/null | head -20; "$spy" dump -s --pid "$pid" 2>&1; } > "$out"
    done
done
