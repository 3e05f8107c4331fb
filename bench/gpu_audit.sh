#!/bin/bash
# #46 item 5's end-to-end figure, for a session lent a device machine (the `device` tool), as a second run after
# bench/gpu_check.sh (same carried wheels, .whl): the default audit with intervals (B = 1,000) of 50,000 x 512 on the
# GPU backend and on the machine's CPU cores, the ratio, and whether the two results.json are identical
# (bench/audit_50k.py --backends). The data (simulated once, ~1 GB) and the exact audit's figures against one GEMM
# come first. Run with timeout_s 560; the GPU audit runs before the CPU one, so a cut-off run still has it.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || echo "wheels failed"
export PYTHONPATH=/tmp/site:$PWD/src:$PWD/bench:$PWD PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/nbc MPLBACKEND=Agg
t=$SECONDS
timeout 540 python3 bench/audit_50k.py 50000 512 --intervals --backends gpu,cpu 2>&1 | tee "$OUT/audit50k.txt"
echo "== audit50k rc=${PIPESTATUS[0]} $((SECONDS - t)) s"
