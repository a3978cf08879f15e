# Two commands for a fresh machine (see README): `make run` and `make test`.
# Both set up the environment first; the set-up is idempotent and costs seconds once done.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= all

# Offline mirrors: ir_datasets writes derived files beside its sources, so a read-only mirror
# (IR_DATASETS_MIRROR) is copied into a writable cache (IR_DATASETS_HOME) first.
ifdef IR_DATASETS_MIRROR
export IR_DATASETS_HOME ?= $(CURDIR)/.cache/ir_datasets
endif
export TOKENIZERS_PARALLELISM ?= false
export PATH := $(CURDIR)/$(BIN):$(PATH)  # rules call `python`: the suite's venv
export OPENAI_API_KEY ?= not-used-by-birch-repro

PROFILE ?= default
# One part of the run (the configuration's `parts`, e.g. `make run PART=birch`), in a run folder of its own: a
# batch job that fits where the whole run does not. `make promote PART=birch` stores it (results/parts/birch/).
PART ?=
RUN_DIR ?= runs/$(PROFILE)$(if $(PART),-$(PART))
# The DAG's command: a plain `snakemake` loads the default profile by itself (profiles/default), another
# PROFILE is named; SNAKEMAKE_ARGS adds to it (e.g. --configfile my.yaml, whose run_dir is RUN_DIR).
SNAKEMAKE = $(BIN)/snakemake --cores $(CORES) $(if $(filter-out default,$(PROFILE)),--profile workflow/profiles/$(PROFILE)) \
	$(if $(PART),--config part=$(PART) run_dir=$(RUN_DIR)) $(SNAKEMAKE_ARGS)

.PHONY: setup run data test test-fast docs quick promote index stale lint benchmarks dry-run image test-image test-cluster browser

setup: $(STAMP)
ifdef IR_DATASETS_MIRROR
	@mkdir -p "$(IR_DATASETS_HOME)" && cp -rn "$(IR_DATASETS_MIRROR)"/. "$(IR_DATASETS_HOME)"/ && chmod -R u+w "$(IR_DATASETS_HOME)"
endif

# torch first, from its pinned CPU build: an unpinned resolve would pull several GB of CUDA wheels.
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check torch==2.13.0
	$(BIN)/pip install --quiet --disable-pip-version-check -e ".[bench,dev,cluster]"
	@touch $(STAMP)

# Every table of the default configuration, computed under runs/default/ and compared with results/;
# then, in one call (python -m reranker.workflow.finish, whose docstring says what it writes), the run's wall clock
# (runs/default/numbers/run.json), the part of each paper that has one (the registry's: the union of its
# jobs' spans, <name>_time.json), the resources table again with that wall clock, and the HTML report of
# every table and figure (runs/default/report.html). A run stopped and resumed (`make run` again) is
# one run made in stretches: each stretch's Snakemake log is kept in runs/default/logs/ and the wall clock
# adds the stretches up, pauses left out. The Snakefile holds one lock per run folder (reranker/workflow/run_lock.py)
# instead of Snakemake's, which outlives a SIGKILL: a run whose machine went away resumes with `make run` alone.
run: setup
	$(BIN)/python -m reranker.workflow.finish --run-dir $(RUN_DIR) --logs-only --snakemake "$(SNAKEMAKE)"
	$(SNAKEMAKE) --nolock
	$(BIN)/python -m reranker.workflow.finish --run-dir $(RUN_DIR) --command "make run$(if $(PART), PART=$(PART))" --snakemake "$(SNAKEMAKE)"

# The files the configuration reads that no library downloads, fetched and checked into data/ or BIRCH_DATA
# (workflow/config/downloads.yaml, docs/data.md); `make run` fetches each as its first job needs it.
data: setup
	$(SNAKEMAKE) data

# The test suite, including the quick profile's DAG and its comparison with results/quick/.
test: setup lint browser
	$(BIN)/python -m pytest

# The inner loop while changing code: every test but the slow ones (Lucene, the DAG, long training), a few minutes.
test-fast: setup
	$(BIN)/python -m pytest -m "not slow"

# The documentation site (docs/, mkdocs.yml) into site/; --strict fails on a broken link or anchor.
# The variable hides Material's banner about MkDocs 2, which would otherwise open every build's output.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# Headless Chromium for the report's rendering test (Debian's package, as root); elsewhere that test
# skips and says why.
browser:
	@command -v chromium-headless-shell >/dev/null || command -v chromium >/dev/null || \
	{ [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  { apt-get install -y --no-install-recommends chromium-headless-shell >/dev/null 2>&1 || \
	    { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends chromium-headless-shell >/dev/null; }; } ; } || \
	echo "make browser: no headless Chromium installed (needs root and apt); the report's rendering test will skip"

# The container image (containers/Dockerfile): docker where its daemon runs, else podman; the base from Debian
# packages where no registry answers. Its build time and size are a benchmark stored on purpose (tracked:
# `containers/build --record`, never from a cached build), so `make image` leaves results/ as it is.
image:
	containers/build

# The image's check: the quick profile inside it, non-root, offline, caches read-only (tests/test_container.py).
test-image: setup
	$(BIN)/python -m pytest -m container

# The Slurm profile against a one-node Slurm on this machine (workflow/cluster/slurm-local; root, Debian):
# the quick profile with scoring split into parts, and a cancelled score job resumed (tests/test_cluster.py).
test-cluster: setup
	$(BIN)/python -m pytest -m cluster

quick: setup
	$(BIN)/snakemake --cores $(CORES) --profile workflow/profiles/quick

# Make a finished run the new stored reference: `make promote` (default) or `make promote PROFILE=quick`.
# File by file: stored files the run did not make are kept and listed; `make promote PRUNE=1` deletes them.
# The default's promote also writes the stored split of the gap to the Radboud thesis into results/radboud.md.
# Then what each promoted numbers file rests on (jobs.json beside numbers/: every job behind it, with the digest of its shell,
# params and inputs, from this checkout's DAG, so promote from the checkout that made the run): `make stale` sets
# a later commit's DAG against it and prints the tables whose jobs changed pending.
# A part (PART=name) replaces in jobs.json what its own numbers files rest on, marks the stored tables whose jobs
# changed pending (tools/stale.py), and makes the reference's index anew from every stored table (make index).
REFERENCE = $(if $(filter quick,$(PROFILE)),results/quick,results)
promote:
	$(BIN)/python -m reranker compare --config $(RUN_DIR)/config.yaml --promote $(if $(PRUNE),--prune)
	$(if $(filter default,$(PROFILE)),test ! -f $(RUN_DIR)/numbers/radboud_split.json || \
	  $(BIN)/python -m reranker tables split --stored results/numbers/radboud_split.json --into results/radboud.md)
	$(BIN)/python tools/dag_jobs.py $(PROFILE) --run-dir $(RUN_DIR) --behind-numbers $(REFERENCE)/jobs.json $(if $(PART),--merge-from $(RUN_DIR))
	$(if $(PART),$(BIN)/python tools/stale.py $(PROFILE) --mark && $(MAKE) --no-print-directory index)

# The reference's index (its README.md and the forest plot of its tests) made anew from every table stored there, with
# the profile's seed file and preface: after a part is promoted, the claims of all parts are judged together.
INDEX_COMMAND ?= make run (or part by part: make run PART=<name>, each promoted with make promote PART=<name>)
index: setup
	$(BIN)/python -m reranker.workflow.index --reference $(REFERENCE) --profile $(PROFILE) --command "$(INDEX_COMMAND)"

# The stored numbers whose jobs changed since they were made, printed pending in their tables (tools/stale.py).
stale: setup
	$(BIN)/python tools/stale.py $(PROFILE) --mark

# Repeated code (tools/duplicates.py): a six-line pair of the same shape, names folded, anywhere in reranker/,
# workflow/ or the rules fails.
lint: setup
	$(BIN)/ruff check reranker tests benchmarks tools
	$(BIN)/python tools/duplicates.py
	$(BIN)/snakefmt --check Snakefile workflow/rules tests/plugins
	$(BIN)/hadolint containers/Dockerfile
	$(BIN)/snakemake --lint

benchmarks: setup
	$(BIN)/python benchmarks/score_throughput.py
	$(BIN)/python benchmarks/fusion_cv.py
	$(BIN)/python benchmarks/train_throughput.py
	$(BIN)/python benchmarks/score_threads.py

dry-run: setup
	$(BIN)/snakemake -n
