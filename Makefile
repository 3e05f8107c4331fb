# Two commands for a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
# the CPU build of PyTorch (~200 MB, not the CUDA wheels): tests/test_torch_backend.py runs the gpu backend on CPU tensors
	$(BIN)/pip install --quiet 'torch==2.13.0' --extra-index-url https://download.pytorch.org/whl/cpu
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/matchaudit demo --out matchaudit-demo

test: $(STAMP)
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) matchaudit-demo
