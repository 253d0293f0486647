set -x
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libstdc++.so.6
nvidia-smi --query-gpu=name,driver_version --format=csv
python -c "import torch,triton,pytest,hypothesis,xdist;print(torch.__version__,triton.__version__,pytest.__version__,hypothesis.__version__,xdist.__version__)"
timeout -s INT 150 python -m pytest tests/test_fuzz.py -q -n 3 -p no:benchmark --compat-cells=results/.smoke-cells.txt --compat-fuzz-profile=thorough --compat-results=$OUT/smoke.json --compat-run-dir=/tmp/smoke > $OUT/smoke.log 2>&1
rc=$?; tail -25 $OUT/smoke.log
if [ $rc -ne 0 ] && [ $rc -ne 1 ]; then exit $rc; fi
timeout -s INT 400 python -m pytest tests/test_fuzz.py -q -n auto -p no:benchmark --compat-stages=eager,compile_eager,compile_aot_eager,compile_inductor,compile_dynamic --compat-fuzz-profile=thorough --compat-results=$OUT/fuzz-probe.json --compat-run-dir=/tmp/run > $OUT/fuzz-probe.log 2>&1
echo rc=$?; tail -40 $OUT/fuzz-probe.log; gzip -k $OUT/fuzz-probe.log
