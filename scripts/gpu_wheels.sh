# Sourced by the GPU runner's scripts: this checkout importable, and the wheels carried in .whl/ (Liger-Kernel:
# pure Python, installed without its dependencies, which the runner has) on PYTHONPATH. The runner has no network.
root=$(pwd)
export PYTHONPATH=$root${PYTHONPATH:+:$PYTHONPATH}
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=$PYTHONPATH:/tmp/site
fi
