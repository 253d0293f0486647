# Two lanes of Liger's cpp_wrapper cells and fuzz tests, each in a TMPDIR of its own (Inductor's precompiled headers
# follow it): lane 0 cold; lane 1 builds the header first (timed by pch_cost.py), then runs the same selection.
c=$(git rev-parse --short HEAD 2>/dev/null || echo baf45f5)
sel='-k cpp_wrapper --compat-devices=cuda'
L0="export TMPDIR=\$(mktemp -d /tmp/laneA.XXXX); cd \$root/examples/liger_kernel && COMPAT_COMMIT=$c run cold 420 $sel; ls -la \$TMPDIR/torchinductor_*/precompiled_headers > \$work/headers-cold.txt; cat \$TMPDIR/torchinductor_*/precompiled_headers/*.h >> \$work/headers-cold.txt; pack"
L1="export TMPDIR=\$(mktemp -d /tmp/laneB.XXXX); LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libstdc++.so.6 python results/benchmark/isa-checks-side-by-side/cpp-wrapper-header/pch_cost.py cuda > \$work/pch-first.json 2>\$work/pch-first.err; LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libstdc++.so.6 python results/benchmark/isa-checks-side-by-side/cpp-wrapper-header/pch_cost.py cuda > \$work/pch-again.json 2>&1; cd \$root/examples/liger_kernel && COMPAT_COMMIT=$c run warm 420 $sel; ls -la \$TMPDIR/torchinductor_*/precompiled_headers > \$work/headers-warm.txt; cat \$TMPDIR/torchinductor_*/precompiled_headers/*.h >> \$work/headers-warm.txt; pack"
bash scripts/gpu_lanes.sh 540 "$L0" "$L1"
