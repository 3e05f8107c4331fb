# Two commands for a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
CORE := $(VENV)/.core
STAMP := $(VENV)/.installed

.PHONY: demo test clean

# what `make demo` needs: the package and its required dependencies only; then the Numba kernels compiled into
# their cache once, so that the first audit does not compile them (matchaudit/warmup.py)
$(CORE): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	$(BIN)/python -m matchaudit.warmup
	touch $(CORE)

# what `make test` adds: the test extra plus the mcmc extra (NumPyro/JAX: the NUTS sampler and its log-density
# checks run in CI too), the tracking extra (mlflow-skinny: tests/test_tracking.py logs an audit and reads it back)
# and PyTorch for tests/test_torch_backend.py (the gpu backend on CPU tensors): exactly
# 2.13.0, the CPU build these machines hold on disk (any other spec pulls GBs of CUDA wheels from the registry)
$(STAMP): $(CORE)
	$(BIN)/pip install --quiet -e '.[test,mcmc,tracking]'
	$(BIN)/pip install --quiet 'torch==2.13.0'
	touch $(STAMP)

demo: $(CORE)
	$(BIN)/matchaudit demo --out matchaudit-demo

# the suite in parallel worker processes (pytest-xdist; one per core, at most 4; the workers share one demo run:
# tests/conftest.py), handed out one test at a time (--maxschedchunk, pytest-xdist 3.2+: by default each worker first
# gets a quarter of its share in a row, and the slow tests, run first, all fell into one worker's chunk)
test: $(STAMP)
	$(BIN)/python -m pytest -n auto --maxprocesses 4 --maxschedchunk 1

clean:
	rm -rf $(VENV) matchaudit-demo
