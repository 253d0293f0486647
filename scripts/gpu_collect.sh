#!/usr/bin/env bash
# Bring one device call's runs into a sharded gate's folder, so the next call (the same scripts/gpu_shard_lane.sh
# command) skips what ran and goes on with what a cut left:
#   bash scripts/gpu_collect.sh ARCHIVE DONE
# ARCHIVE: the call's lanes.tar.gz (scripts/gpu_lanes.sh); DONE: the gate's folder. Each run NAME.json goes there as
# NAME.json.gz, with its pytest log (NAME.pytest.log.gz) and profile (NAME.profile.txt). Quick, so the next call
# starts within the runner's 30 s of idle; accept the runs (the command printed) while it runs.
set -euo pipefail
archive=$1 done=$2
unpacked=$(mktemp -d)
trap 'rm -rf "$unpacked"' EXIT
tar -xzf "$archive" -C "$unpacked"
for run in "$unpacked"/*.json; do
    [ -e "$run" ] || { echo "gpu_collect: no run in $archive" >&2; exit 1; }
    name=$(basename "$run" .json)
    gzip -c "$run" > "$done/$name.json.gz"
    [ -e "$unpacked/$name.log.gz" ] && cp "$unpacked/$name.log.gz" "$done/$name.pytest.log.gz"
    [ -e "$unpacked/$name.profile.txt" ] && cp "$unpacked/$name.profile.txt" "$done/"
    echo "python -m compat accept $done/$name.json.gz --expectations expectations.yaml"
done
