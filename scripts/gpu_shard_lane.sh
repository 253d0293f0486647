#!/usr/bin/env bash
# One lane of a sharded gate on the GPU runner, from scripts/gpu_lanes.sh (which defines `run`, $root and $work):
#   bash scripts/gpu_shard_lane.sh END DONE LIST...
# Runs each cells list in turn, as `run NAME SECONDS --compat-cells LIST $SHARD_ARGS`, while more than 120 s remain
# before END (epoch seconds), each cut at END. LIST may join lists with '+' (A.txt+B.txt): one run of both, whose
# workers never idle between them; NAME joins their stems alike. A list whose results are in the folder DONE
# (DONE/NAME.json.gz, committed from an earlier call) is skipped: a gate too long for one call goes on in the next.
# A list cut short is done too; its cells not finished go into a list of their own (scripts/shard_rest.py).
set -u
end=$1 done=$2
shift 2
for lists in "$@"; do
    IFS=+ read -ra parts <<< "$lists"
    name=$(for p in "${parts[@]}"; do basename "$p" .txt; done | paste -sd+)
    [ -e "$root/$done/$name.json.gz" ] && continue
    left=$(( end - $(date +%s) ))
    [ "$left" -gt 120 ] || break
    (cd "$root" && cat "${parts[@]}") > "$work/$name.txt"
    run "$name" "$left" --compat-cells="$work/$name.txt" ${SHARD_ARGS:-}
done
