#!/usr/bin/env bash
# One lane of a sharded gate on the GPU runner, from scripts/gpu_lanes.sh (which defines `run`, $root and $work):
#   bash scripts/gpu_shard_lane.sh END DONE LIST...
# Runs each cells list in turn, as `run NAME SECONDS --compat-cells LIST $SHARD_ARGS`, while more than 120 s remain
# before END (epoch seconds), each cut at END. LIST may join lists with '+' (A.txt+B.txt): one run of both, whose
# workers never idle between them; NAME joins their stems alike. DONE is the folder of the runs committed from
# earlier calls (DONE/NAME.json.gz, brought there by scripts/gpu_collect.sh): a list run to its end is skipped, and
# one cut short goes on with the tests none of its runs recorded (scripts/shard_rest.py), as NAME-rest (and
# NAME-rest-rest after that); so a gate too long for one call goes on in the next with the same command. DONE/cells/fuzz-tests.txt: the fuzz tests the runner
# collects for the gate, one id a line.
set -u
end=$1 done=$2
shift 2
for lists in "$@"; do
    IFS=+ read -ra parts <<< "$lists"
    name=$(for p in "${parts[@]}"; do basename "$p" .txt; done | paste -sd+)
    first=$name
    (cd "$root" && cat "${parts[@]}") > "$work/$name.txt"
    runs=()
    while [ -e "$root/$done/$name.json.gz" ]; do  # run before: what they left, if anything
        runs+=("$root/$done/$name.json.gz")
        name=$name-rest
    done
    deselect=()
    if [ ${#runs[@]} -gt 0 ]; then
        python "$root/scripts/shard_rest.py" "$work/$first.txt" "$root/$done/cells/fuzz-tests.txt" "$work/$name.txt" \
            "${runs[@]}" || exit 1
        deselect=("@$work/$name.deselect")
    fi
    [ -s "$work/$name.txt" ] || continue
    left=$(( end - $(date +%s) ))
    [ "$left" -gt 120 ] || break
    run "$name" "$left" --compat-cells="$work/$name.txt" "${deselect[@]}" ${SHARD_ARGS:-}
done
