# Liger's whole gate before (baf45f5, in .bench/before) and after (HEAD) the side-by-side ISA checks, at once on one
# host, 8 cores each, each lane in a TMPDIR of its own (Inductor's headers and the run directory follow it).
after=$1
lane() {  # NAME COMMIT TREE
    echo "export TMPDIR=\$(mktemp -d /tmp/$1.XXXX) PYTHONPATH=$3:\$PYTHONPATH; cd $3/examples/liger_kernel && COMPAT_COMMIT=$2 run $1 530 --compat-devices=cuda; cp \$TMPDIR/compat-run-*/isa.json \$work/isa-$1.json; pack"
}
bash scripts/gpu_lanes.sh 555 "$(lane before baf45f5 \$root/.bench/before)" "$(lane after $after \$root)"
