#!/usr/bin/env bash
# examples/my_kernels' CPU gate (`python -m compat run -n 2`), before and after, every process below each run counted
# (scripts/descendants_cpu.py):
#   bash pairs.sh PAIRS ORDER      e.g.  bash pairs.sh "1 2" "before after"; bash pairs.sh 3 "after before"
# "before" runs the checkout at /tmp/before (git worktree add /tmp/before f5aed73) through PYTHONPATH, "after" this one.
set -u
out=/tmp/bfz
mkdir -p $out
for i in $1; do
  for side in $2; do
    rm -rf $out/mk && cp -r /work/main/examples/my_kernels $out/mk && rm -rf $out/mk/compat-results
    cd $out/mk
    if [ "$side" = before ]; then export PYTHONPATH=/tmp/before; else unset PYTHONPATH; fi
    python /work/main/scripts/descendants_cpu.py "$side-$i" python -m compat run -n 2 --results $out/$side-$i.json \
        --compat-devices=cpu_interpret > $out/$side-$i.log 2>&1
    tail -1 $out/$side-$i.log >> $out/summary.txt
  done
done
