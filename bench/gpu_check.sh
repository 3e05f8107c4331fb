#!/bin/bash
# The GPU check, prepared for a session that is lent a device machine (the `device` tool; none has been yet: session
# 36 was refused a machine). One bounded run: the environment, the kernels compiled, the torch backend's tests with
# the CUDA ones (bit for bit against the CPU engine), one audit of the demo data on --backend cpu and gpu with
# results.json compared, and bench/gpu_engine.py's throughput. Each step's output lands in $OUT/<step>.txt.
#
# The device image has NumPy, Numba, SciPy, pandas, PyArrow, matplotlib, Typer, Rich, PyTorch (CUDA) and pytest, but
# not jsonschema: carry its wheels. Here, once, in the repository root:
#   echo /.whl/ >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
#     jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1
# then run `bash bench/gpu_check.sh` on the device with carry [".whl"] and timeout_s 560 (about 7 minutes).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || echo "wheels failed"
export PYTHONPATH=/tmp/site:$PWD/src:$PWD/bench:$PWD PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/nbc MPLBACKEND=Agg
step() { local name=$1 limit=$2; shift 2; local t=$SECONDS; echo "== $name"; timeout "$limit" "$@" > "$OUT/$name.txt" 2>&1; local rc=$?; tail -25 "$OUT/$name.txt"; echo "== $name rc=$rc $((SECONDS - t)) s"; }
step env 60 bash -c 'nvidia-smi -L; nproc; python3 -c "import numpy, numba, torch, scipy, pandas, typer, pyarrow, matplotlib; print(\"numpy\", numpy.__version__, \"numba\", numba.__version__, \"torch\", torch.__version__, \"scipy\", scipy.__version__, \"pandas\", pandas.__version__, \"typer\", typer.__version__, \"pyarrow\", pyarrow.__version__); print(torch.cuda.get_device_name(0))"'
step warmup 150 python3 -m matchaudit.warmup
step tests 200 python3 -m pytest tests/test_torch_backend.py -q -p no:cacheprovider -o addopts= -rs -n 4
step e2e 150 bash -c '
python3 -c "from matchaudit.simulation import write_demo_data; write_demo_data(\"/tmp/d/data\")"
for b in cpu gpu gpu; do s=$SECONDS; python3 -m matchaudit audit --samples /tmp/d/data/samples.parquet --embeddings /tmp/d/data/embeddings.npy --group-by group --fmr 1e-2,1e-3,1e-4 --n-resamples 1000 --backend $b --no-figures --no-calibration --quiet --out /tmp/d/$b; echo "audit --backend $b rc=$? $((SECONDS - s)) s"; done
python3 -c "
import json
a, b = (json.load(open(f\"/tmp/d/{k}/results.json\")) for k in (\"cpu\", \"gpu\"))
a.pop(\"command\"); b.pop(\"command\")
print(\"intervals\", len(a[\"intervals\"]), \"results.json identical:\", a == b)"'
step bench_small 150 python3 bench/gpu_engine.py --device cuda --n 2000 20000 --B 100 1000 --repeat 2
step bench_large 120 python3 bench/gpu_engine.py --device cuda --n 100000 --B 100 1000 --repeat 1 --method scatter fused
