#!/usr/bin/env bash
# One lane of a sharded gate on the GPU runner, from scripts/gpu_lanes.sh (which defines `run`, $root and $work):
#   bash scripts/gpu_shard_lane.sh END DONE LIST...
# Runs each cells list in turn, as `run NAME SECONDS --compat-cells LIST $SHARD_ARGS`, while more than 120 s remain
# before END (epoch seconds), each cut at END. LIST may join lists with '+' (A.txt+B.txt): one run of both, whose
# workers never idle between them; NAME joins their stems alike. DONE is the folder of the runs committed from
# earlier calls (DONE/NAME.json.gz, brought there by scripts/gpu_collect.sh): a list run to its end is skipped, and
# one cut short goes on with the cells it did not finish (scripts/shard_rest.py), as NAME-rest; so a gate too long
# for one call goes on in the next with the same command. DONE/cells/fuzz-tests.txt: the fuzz tests the runner
# collects for the gate, one id a line.
set -u
end=$1 done=$2
shift 2
for lists in "$@"; do
    IFS=+ read -ra parts <<< "$lists"
    name=$(for p in "${parts[@]}"; do basename "$p" .txt; done | paste -sd+)
    (cd "$root" && cat "${parts[@]}") > "$work/$name.txt"
    while [ -e "$root/$done/$name.json.gz" ]; do  # run before: what it left, if anything
        python "$root/scripts/shard_rest.py" "$work/$name.txt" "$root/$done/$name.json.gz" \
            "$root/$done/cells/fuzz-tests.txt" "$work/$name-rest.txt" || exit 1
        name=$name-rest
    done
    [ -s "$work/$name.txt" ] || continue
    left=$(( end - $(date +%s) ))
    [ "$left" -gt 120 ] || break
    run "$name" "$left" --compat-cells="$work/$name.txt" ${SHARD_ARGS:-}
done
