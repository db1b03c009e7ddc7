# Veloces: the README's two commands are `make demo` and `make test`.
SHELL := /bin/bash
PY    := build/venv/bin/python
VLAB  := ./vlab
VSIM  := ./vsim
CARGO ?= $(shell command -v cargo || echo $$HOME/.cargo/bin/cargo)
SIM   := --manifest-path sim/Cargo.toml

DEMO_OUT ?= build/demo
comma := ,
space := $(subst ,, )

.PHONY: scorecards repro repro-seed000 repro-seed001 repro-bid repro-qos repro-hints report-screenshots bench-floods bench-defaults bench-switch bench-served fidelity fidelity-served all deps deps-rt deps-debug debug-kernel test-debug test-blktests module module-check demo demo-sim bench bench-sim bench-matrix-sim bench-matrix-lab heldout-sim heldout-lab heldout-table test test-lab lab-shared lab-serial test-full test-host test-unit test-boot test-rt test-sim lint lint-sim test-py bench-sweep tune-cheapflash claims clean help

help:
	@echo "make demo   - install what is needed; on 6.12, a served SD card: a reader beside a write flood, and a mix, under the five schedulers, the card setting the pace (~6 min)"
	@echo "make test   - install what is needed and run the quick suite (lint, unit, validation, boots 6.1 and 6.12), each phase timed"
	@echo "make test-full - make test plus what repeats a path on the other kernel or measures (docs/testing.md, 'Quick and full')"
	@echo "make test-host / test-lab / lab-shared / lab-serial - parts of make test (docs/testing.md)"
	@echo "make deps   - only install/check dependencies (idempotent); deps-rt adds PREEMPT_RT kernels"
	@echo "make bench  - the scheduler benchmarks of docs/notebooks/benchmarks.md (BENCH_KERNEL=6.1|6.12)"
	@echo "make test-rt - the module suite and the conformance scenarios on the PREEMPT_RT kernels"
	@echo "make debug-kernel - build the debug kernel (KASAN, lockdep, ...) once, into ~/.cache/veloces"
	@echo "make test-debug - the module suite, conformance and blktests on the debug kernel (builds it if missing)"
	@echo "make test-blktests - blktests' block group on 6.1 and 6.12 with veloces loaded (~25 min per kernel)"
	@echo "make test-sim - the simulator's lint, tests and validation only (no kernels booted)"
	@echo "make bench-sim - the simulator's speed and memory benchmark (vsim bench)"
	@echo "make bench-matrix-sim - veloces against its goals on device classes x workloads, in vsim (~35 s)"
	@echo "make bench-matrix-lab - the same cells in the lab on 6.12 (MATRIX_LAB_DEVICES; ~12 min a device)"
	@echo "make heldout-sim / heldout-lab / heldout-table - veloces on held-out random flood shapes (docs/heldout.md)"
	@echo "make bench-sweep - a 1,000-point vsim sweep on Ray against one process per core (docs/python.md)"
	@echo "make tune-cheapflash - Ray Tune over veloces's tunables on the served cheap-flash model, confirmed in the lab (~10 min)"
	@echo "make bench-served - the schedulers on vsim's flash models served over NBD (~25 min per device)"
	@echo "make bench-floods - a reader beside each shape of write flood (FLOOD_DEVICES, FLOODS; quick set ~35 min)"
	@echo "make bench-defaults - veloces's expiry defaults against lower and higher ones under the floods (~20 min)"
	@echo "make bench-switch - what an elevator switch costs, per scheduler (~3 min)"
	@echo "make fidelity - the kernel's schedulers beside vsim's models, a matrix of cells (docs/notebooks/fidelity.md)"
	@echo "make fidelity-served - one closed-loop job in vsim and through a served device (6.1 NBD, 6.12 ublk)"
	@echo "make scorecards - each seed's scorecard from its stored data (seconds; docs/reproductions.md)"
	@echo "make repro  - the seeds' reproductions, full matrices (many hours: docs/notebooks/reproductions.md; REPRO_ARGS narrows, resumes)"
	@echo "make repro-bid - seed 004 (BID-HDD, BID-Hybrid) in the simulator (seconds)"
	@echo "make repro-qos - seed 003 (RBFQ on disk and flash, the hybrid store) in the simulator (seconds)"
	@echo "make repro-hints - seed 002 §2 (a mapping-cache SSD, host hints, HPB) in the simulator (seconds)"
	@echo "make report-screenshots - after make demo: each kind of HTML report checked in Chromium, screenshots to docs/img"
	@echo "make claims - judge every row of the claims table (claims/claims.toml) again from the stored files; docs/claims.md up to date (seconds)"

# The simulator's Cargo profile (sim/Cargo.toml), for its binary, nbdkit plugin and wheel
# (lab/deps.py, ./vsim and the lab read VSIM_PROFILE too): `release` for what users run
# (make demo, make deps); make test and its parts build everything once in `fast` (release
# optimisation without fat LTO, one codegen unit or debug info), clippy and the tests
# included, and test that build (docs/testing.md). VSIM_PROFILE=release make test tests release.
TEST_GOALS := test test-full test-host lint test-sim lint-sim test-py test-lab lab-shared lab-serial test-unit test-boot
ifneq ($(filter $(TEST_GOALS),$(MAKECMDGOALS)),)
VSIM_PROFILE ?= fast
endif
VSIM_PROFILE ?= release
export VSIM_PROFILE

# `make test` times each phase (lab/phases.py; build/test-times/): a recipe line run through
# $(PHASE) NAME -- CMD is recorded as phase NAME when VELOCES_PHASES is set (make test sets
# it) and simply run otherwise.
PHASES := python3 lab/phases.py
PHASE  := @$(PHASES) run

deps:
	$(PHASE) deps -- python3 lab/deps.py

deps-rt:
	@python3 lab/deps.py --rt

deps-debug:
	@python3 lab/deps.py --debug

# The debug kernel (KASAN, lockdep, list/object debugging, fault injection), built once per
# configuration into ~/.cache/veloces/debug-kernel/ (VELOCES_CACHE moves it). See docs/kernel.md.
DEBUG_SERIES ?= 6.1
DEBUG_KERNEL = cd lab && ../$(PY) -m vlab.machine.debugkernel
debug-kernel: deps-debug
	$(DEBUG_KERNEL) build --series $(DEBUG_SERIES)

# The module suite (stress test included, VLAB_STRESS_S per device), the conformance scenarios
# and blktests on the debug kernel; any KASAN, lockdep, list-debug, object-debug or hung-task
# report on its console fails the run.
DEBUG_STRESS_S ?= 120
test-debug: debug-kernel
	kdir="$$($(DEBUG_KERNEL) path --series $(DEBUG_SERIES))"; \
	  $(MAKE) -C kernel modules KVER="$$($(DEBUG_KERNEL) release --series $(DEBUG_SERIES))" KDIR="$$kdir" KSRC="$$kdir"
	cd lab && VLAB_KERNELS=debug-$(DEBUG_SERIES) VLAB_STRESS_S=$(DEBUG_STRESS_S) VLAB_VERIFY_MIB=1024 VLAB_BLKTESTS=1 ../$(PY) -m pytest -q -ra \
		tests/test_veloces.py tests/test_conformance.py tests/test_blktests.py

# blktests' block group (../shared/third_party/blktests, or VELOCES_BLKTESTS) on 6.1 and 6.12
# with veloces loaded: ~25 min per kernel under TCG, so not in `make test` (which runs only
# its parser tests). Run before every release. VLAB_BLKTESTS_TESTS="block/005 ..." for a subset.
test-blktests: module
	cd lab && VLAB_BLKTESTS=1 ../$(PY) -m pytest -q -ra tests/test_blktests.py

module: deps
	$(PHASE) kernel-build -- $(MAKE) --no-print-directory -C kernel modules

module-check: module
	$(PHASE) kernel-check -- $(MAKE) --no-print-directory -C kernel check

# One boot of 6.12, vsim's A1 SD-card model served over ublk, a reader beside a write flood
# and the 70/30 mix under the five schedulers; then vsim on the same model and jobs
# (lab/vlab/experiments/demo.py).
demo: module
	cd lab && ../$(PY) -m vlab.experiments.demo --out ../$(DEMO_OUT)

# The simulator alone, on a modelled MLC SSD: the 70/30 mix from four processes (seconds).
demo-sim: deps
	$(VSIM) compare --device ssd:preset=mlc_16g --workload sim/examples/mix70.toml \
		--schedulers noop,deadline,cfq,veloces --out $(DEMO_OUT)/sim

# docs/img/report-*.png: the first screen of each kind of HTML report (docs/reports.md), from
# real results — the demo's flood in the lab and in vsim (run `make demo` first), a vsim run on a small
# preconditioned SSD (GC, WA) and the quick validation — each checked in headless Chromium
# as the tests do (console, rendered plots, numbers equal to the JSON).
REPORT_SRC ?= build/report-src
report-screenshots: deps
	@test -f $(DEMO_OUT)/flood/summary.json -a -f $(DEMO_OUT)/sim/flood/summary.json || { echo "run make demo first"; exit 2; }
	$(VSIM) run sim/examples/ssd-mixed.toml --device ssd:blocks_per_plane=64,precondition=full --quiet \
		--report $(REPORT_SRC)/vsim-run
	$(VSIM) validate --quick --report $(REPORT_SRC)/reproduction > /dev/null
	cd lab && ../$(PY) -m vlab.report.shots --out ../docs/img lab-compare=../$(DEMO_OUT)/flood \
		vsim-compare=../$(DEMO_OUT)/sim/flood vsim-run=../$(REPORT_SRC)/vsim-run reproduction=../$(REPORT_SRC)/reproduction

# The claims table (docs/claims.md, results/README.md): every row judged again from the stored
# files, and docs/claims.md checked against the table (`python -m vlab.claims render` remakes
# it). Standard library only: the venv's Python where it exists, else python3; no make deps.
CLAIMS_PY := $(if $(wildcard $(PY)),$(PY),python3)
claims:
	PYTHONPATH=lab $(CLAIMS_PY) -m vlab.claims judge
	PYTHONPATH=lab $(CLAIMS_PY) -m vlab.claims render --check

# The seeds' experiments in the lab (docs/notebooks/reproductions.md): every device x filesystem x
# workload cell is one `vlab compare` of the five schedulers, 3 rotated repetitions. A failed
# cell is marked and the matrix goes on; REPRO_ARGS adds options (e.g. `--devices ssd-steady`,
# `--resume` to keep the cells already finished). `make test` runs each seed's --quick variant.
REPRO_ARGS ?=
repro: repro-seed000 repro-seed001 repro-bid repro-qos repro-hints
repro-seed000 repro-seed001: repro-%: module
	$(VLAB) repro $* $(REPRO_ARGS)

# Each seed's scorecard (holds / partly / does not hold / inconclusive / not judged / not
# reproducible) from its stored data, nothing run (docs/reproductions.md, "Scorecards").
scorecards: deps
	cd lab && ../$(PY) -m vlab.repro.scorecard

# Seed 004 (BID) in the simulator: minutes, graded over its estimates (docs/reproductions.md).
repro-bid: deps
	$(VSIM) repro bid $(REPRO_ARGS)

repro-qos: deps
	$(VSIM) repro qos $(REPRO_ARGS)

repro-hints: deps
	$(VSIM) repro hints $(REPRO_ARGS)

# Benchmarks of docs/notebooks/benchmarks.md (figures printed, not asserted). BENCH_KERNEL=6.12 for the other.
BENCH_KERNEL ?= 6.1
BENCH_SCHEDULERS ?= none,mq-deadline,kyber,bfq,veloces
# The overhead benchmark adds vfifo: the cheapest elevator, the framework's own cost floor
# (kernel/bench/, built here only, never installed).
bench: module bench-floods
	$(MAKE) -C kernel bench-modules
	$(VLAB) compare --kernel $(BENCH_KERNEL) --device lab/devices/fast.dev --job lab/jobs/randread-qd32.fio \
		--schedulers none,vfifo,$(BENCH_SCHEDULERS:none,%=%) --repeat 3 --runtime 5 --out build/bench/overhead-$(BENCH_KERNEL)
	$(VLAB) compare --kernel $(BENCH_KERNEL) --device lab/devices/demo.dev --job lab/jobs/mixed-randrw.fio \
		--schedulers $(BENCH_SCHEDULERS) --repeat 3 --runtime 5 --out build/bench/mixed-$(BENCH_KERNEL)

# Reads under write floods (issue 13): a reader beside each shape of write flood, per device
# (python -m vlab.experiments.floods --help). FLOOD_DEVICES / FLOODS: comma lists or all (12 null_blk
# devices x 9 floods, ~4 h); the defaults are the quick set (~30 min).
FLOOD_DEVICES ?=
FLOODS ?=
bench-floods: module
	cd lab && ../$(PY) -m vlab.experiments.floods --kernel $(BENCH_KERNEL) $(if $(FLOOD_DEVICES),--devices $(FLOOD_DEVICES)) \
		$(if $(FLOODS),--floods $(FLOODS)) --out ../build/bench/floods-$(BENCH_KERNEL)

# What an elevator switch costs, per scheduler, on an idle null_blk (docs/kernel.md, "What
# leaving veloces costs"; ~3 min).
bench-switch: module
	./vlab run --kernel $(BENCH_KERNEL) --memory 2G --timeout 600 --out build/bench/switch-$(BENCH_KERNEL) -- \
		"cd $(CURDIR)/lab && $(CURDIR)/$(PY) -m vlab.experiments.switchcost"

# The evidence for veloces's expiry defaults (docs/kernel.md, "Defaults"): each setting is a
# scheduler variant (NAME:TUNABLE=VALUE) in the same rotated comparison as the defaults.
EXPIRIES := read_expire=10 read_expire=1000 write_expire=250 write_expire=5000 bundle_expire_us=500 bundle_expire_us=8000
DEFAULTS_SWEEP ?= kyber,veloces,$(subst $(space),$(comma),$(addprefix veloces:,$(EXPIRIES)))
DEFAULTS_FLOODS ?= a-r1,a-r4,b-r1,c-r4,cf-r4,d
bench-defaults: module
	cd lab && ../$(PY) -m vlab.experiments.floods --kernel $(BENCH_KERNEL) --devices $(or $(FLOOD_DEVICES),t4-100us-q1) \
		--floods $(DEFAULTS_FLOODS) --schedulers $(DEFAULTS_SWEEP) --out ../build/bench/defaults-$(BENCH_KERNEL)

# Issue 12's benchmark: the five schedulers on served vsim models (docs/notebooks/benchmarks.md,
# "Served flash"). 10-20 min per device and job under TCG; SERVED_DEVICES and SERVED_JOBS pick.
SERVED_OUT ?= build/bench/served
SERVED_REPEAT ?= 3
SERVED_DIRTY := --sysctl vm.dirty_background_bytes=1048576 --sysctl vm.dirty_bytes=4194304
SERVED_DEVICES ?= cheapflash ssd-steady ssd-fresh
SERVED_JOBS ?= randwrite dbench copytree
served_spec_cheapflash := vsim:cheapflash:preset=sd_a1,size=512m,dilation=5
served_spec_ssd-fresh := vsim:ssd:blocks_per_plane=64
served_spec_ssd-steady := vsim:ssd:blocks_per_plane=64,precondition=full
bench-served: module
	fail=0; for d in $(SERVED_DEVICES); do \
	  case $$d in cheapflash) spec="$(served_spec_cheapflash)";; ssd-fresh) spec="$(served_spec_ssd-fresh)";; \
	    ssd-steady) spec="$(served_spec_ssd-steady)";; *) echo "unknown served device $$d"; exit 2;; esac; \
	  for j in $(SERVED_JOBS); do \
	    case $$j in randwrite) args="--job lab/jobs/buffered-randwrite.fio --runtime 8 $(SERVED_DIRTY)";; \
	      dbench) args="--job lab/jobs/dbench-ext4.sh";; copytree) args="--job lab/jobs/ext4-copy-tree.sh";; \
	      *) echo "unknown served job $$j"; exit 2;; esac; \
	    $(VLAB) compare --kernel $(BENCH_KERNEL) --device "$$spec" $$args --schedulers $(BENCH_SCHEDULERS) \
	      --repeat $(SERVED_REPEAT) --out $(SERVED_OUT)/$$d-$$j || fail=1; \
	  done; \
	done; exit $$fail

# The fidelity matrix (docs/notebooks/fidelity.md): the kernel's schedulers beside vsim's models, cell by
# cell (FIDELITY_DEVICES, FIDELITY_WORKLOADS: comma lists or all; ~10 min a cell on 2 cores).
# fidelity-served: the served devices' own fidelity (IOPS in model time, WA), 6.1 (NBD) and 6.12 (ublk).
FIDELITY_KERNELS ?= 6.1 6.12
fidelity: module
	$(VLAB) fidelity --kernel $(BENCH_KERNEL) $(if $(FIDELITY_DEVICES),--devices $(FIDELITY_DEVICES)) \
	  $(if $(FIDELITY_WORKLOADS),--workloads $(FIDELITY_WORKLOADS)) --out build/fidelity-$(BENCH_KERNEL) --resume

fidelity-served: module
	fail=0; for k in $(FIDELITY_KERNELS); do \
	  $(VLAB) fidelity --kernel $$k --devices served-cheapflash,served-ssd-full --workloads randwrite-closed \
	    --schedulers none --repeat 1 --out build/fidelity-served-$$k || fail=1; \
	done; exit $$fail

lint: deps lint-sim
	$(PHASE) lint-python -- bash -c 'cd lab && ../$(PY) -m ruff check . && ../$(PY) -m ruff format --check . && \
	  ../$(PY) -m mypy && cd ../sim/py && ../../$(PY) -m ruff check . && ../../$(PY) -m ruff format --check . && \
	  ../../$(PY) -m mypy'

lint-sim:
	$(PHASE) cargo-fmt -- $(CARGO) fmt $(SIM) --all --check
	$(PHASE) clippy -- $(CARGO) clippy $(SIM) --profile $(VSIM_PROFILE) --locked --workspace --all-targets -- -D warnings

# Simulator: unit/integration tests, then every validation case (printed; fails on any FAIL),
# then the Python API's tests (sim/py/tests: the API, sweeps and tuning on an embedded Ray).
# make test validates on smaller inputs (--quick: every case, 65 s here alone on 2026-11-29);
# make test-full on the full ones (322 s the same day, the block layer's group 283 s of it).
VALIDATE_ARGS = $(if $(filter 1,$(VLAB_FULL)),,--quick)
test-sim: deps lint-sim
	$(PHASE) cargo-build-tests -- $(CARGO) test $(SIM) --profile $(VSIM_PROFILE) --locked --no-run
	$(PHASE) cargo-test -- env VSIM_REQUIRE_FIO_TOOLS=1 $(CARGO) test $(SIM) --profile $(VSIM_PROFILE) --locked
	$(PHASE) validate -- $(VSIM) validate $(VALIDATE_ARGS)
	$(MAKE) --no-print-directory test-py

test-py: deps
	$(PHASE) python-api -C sim/py -- ../../$(PY) -m pytest -q -ra --durations=10

# Issue 20's measurement: a 1,000-point sweep on Ray against the same points run serially,
# one process per core, rotated, 3 times, medians (docs/notebooks/python-measurements.md, "Scale"). SWEEP_SPEC picks
# the spec; SWEEP_ADDRESS=HOST:PORT also runs it on that Ray cluster.
SWEEP_SPEC ?= sim/examples/sweeps/scale-1000.toml
bench-sweep: deps
	@mkdir -p build/bench
	$(PY) -m vsim.scale $(SWEEP_SPEC) --repeat 3 $(if $(SWEEP_ADDRESS),--address $(SWEEP_ADDRESS)) \
		--json build/bench/sweep-scale.json

# Issue 20's tuning: Ray Tune over veloces's tunables for the cheap-flash model as the lab
# serves it and a reader beside a writer; the settings (sysfs script, udev rule) in
# build/tune/tune-served-cheapflash; then the lab's confirmation (~8 min): none, the defaults
# and the tuned setting on the served device, 5 rotated repetitions.
TUNED = build/tune/tune-served-cheapflash
tune-cheapflash: module
	$(VSIM) tune sim/examples/sweeps/tune-served-cheapflash.toml --out $(TUNED)
	$(VLAB) compare --kernel $(BENCH_KERNEL) --device "vsim:cheapflash:preset=sd_a1,size=512m,dilation=5" \
		--job lab/jobs/tune-read-under-writes.fio --repeat 5 --out build/bench/tune-confirm \
		--schedulers "none,veloces,$$($(PY) -c 'import json,sys; print(json.load(open(sys.argv[1]))["lab_variant"])' $(TUNED)/tuned.json)"

bench-sim: deps
	$(VSIM) bench

# Issue 40's matrix, the simulator's side (~35 s): device classes x workload families x the five
# schedulers' models, veloces judged against its goals (docs/notebooks/benchmarks.md §8). MATRIX_DEVICES,
# MATRIX_WORKLOADS: comma lists (default all); MATRIX_SCHEDULER: the veloces spec judged.
MATRIX_SCHEDULER ?= veloces
bench-matrix-sim: deps
	cd lab && ../$(PY) -m vlab.experiments.matrix $(if $(MATRIX_DEVICES),--devices $(MATRIX_DEVICES)) \
		$(if $(MATRIX_WORKLOADS),--workloads $(MATRIX_WORKLOADS)) --scheduler "$(MATRIX_SCHEDULER)" \
		--out ../build/bench/matrix-sim

# The lab's side of the same matrix (6.12: the cards served over ublk, null_blk for the fixed
# shapes; one boot per device, ~12 min each), judged beside the model's verdicts: run
# bench-matrix-sim first so each cell has both.
MATRIX_LAB_DEVICES ?= sd_a1,sd2008,emmc51,t4-1ms
bench-matrix-lab: module
	cd lab && ../$(PY) -m vlab.experiments.matrix --lab --devices $(MATRIX_LAB_DEVICES) \
		$(if $(MATRIX_WORKLOADS),--workloads $(MATRIX_WORKLOADS)) --out ../build/bench/matrix-sim

# Issue 78's held-out verdict (docs/heldout.md): veloces on random flood shapes it was never
# tuned on (vlab.experiments.family: the held-out seed ranges are fixed there), against the
# best in-tree scheduler and none with 95 % intervals. heldout-sim: 400 model shapes x 5 seeds
# (~8 min on 2 cores); heldout-lab: 48 null_blk shapes, one boot each, 3 rotated repetitions
# (~100 min, alone on the machine; a rerun into the same folder skips finished shapes);
# heldout-table: judge both again. HELDOUT_OUT: results/heldout for the record (a clean tree).
# HELDOUT_RANGE=heldout2 (and lab-heldout2 for the lab): the second ranges (docs/heldout.md).
HELDOUT_OUT ?= build/heldout
heldout-sim: deps
	cd lab && ../$(PY) -m vlab.experiments.heldout --model --out ../$(HELDOUT_OUT) $(if $(HELDOUT_RANGE),--seeds $(HELDOUT_RANGE))
heldout-lab: module
	cd lab && ../$(PY) -m vlab.experiments.heldout --lab --out ../$(HELDOUT_OUT) $(if $(HELDOUT_RANGE),--seeds $(HELDOUT_RANGE))
heldout-table: deps
	cd lab && ../$(PY) -m vlab.experiments.heldout --table ../$(HELDOUT_OUT)

# The lab's suite in two phases: first the tests that boot nothing and the boots that may
# share the machine, TEST_WORKERS at a time (pytest-xdist; each kernel's suite boot stays on
# one worker); then the boots whose checks are timed (read preference under a flood,
# bundling, liveness, the conformance scenarios), one at a time and alone.
# lab/tests/conftest.py says which are which (SERIAL). A guest is one single-threaded TCG
# vCPU thread, but two guests left the 2 cores idle a fifth to a half of the time (udev
# settling, the served SD card's model, a guest asleep in the timeout test): three share them
# (docs/testing.md).
TEST_WORKERS ?= 3
LAB_PYTEST = $(PHASE) $(1) -C lab -- ../$(PY) -m pytest -q -ra --durations=15 $(2)
lab-shared: module
	$(call LAB_PYTEST,lab-shared,-m "not serial" -n $(TEST_WORKERS) --dist loadgroup)

lab-serial: module
	$(call LAB_PYTEST,lab-serial,-m serial)

test-lab: module
	$(MAKE) --no-print-directory lab-shared
	$(MAKE) --no-print-directory lab-serial

test-unit: deps
	$(call LAB_PYTEST,lab-unit,-m "not boot" -n $(TEST_WORKERS))

test-boot: module
	$(call LAB_PYTEST,lab-boot-shared,-m "boot and not serial" -n $(TEST_WORKERS) --dist loadgroup)
	$(call LAB_PYTEST,lab-boot-serial,-m "boot and serial")

# The host's checks (lint, the simulator's tests and validation, the Python API's tests).
test-host: lint test-sim

# make test (docs/testing.md): deps, the module and its static checks; then the host's checks
# beside the lab's shared boots (make -j2: the host's phases one after another in one job,
# the guests in the other); then the timed boots, alone. Every phase timed
# (build/test-times/), one line each and the tests counted at the end, pass or fail.
test: export VELOCES_PHASES := 1
test:
	@$(PHASES) start
	@rc=0; $(MAKE) --no-print-directory module-check && \
	  $(MAKE) --no-print-directory -j2 VELOCES_PHASES_PREFIX=1 test-host lab-shared && \
	  $(MAKE) --no-print-directory lab-serial || rc=$$?; \
	  $(PHASES) summary || rc=$$((rc ? rc : 1)); exit $$rc

# make test, and what it leaves to this target (VLAB_FULL=1: lab/tests/conftest.py): the
# lab's paths booted on both kernels, the SSD's served verify, the served verifies and
# scheduler runs over NBD, 6.1's stress check, seed000's quick matrix on a two-node Ray
# cluster, the trace's overhead runs, the ten-million-request report, validation's full
# inputs (docs/testing.md, "Quick and full").
test-full: export VLAB_FULL := 1
test-full: test

# The module suite on the PREEMPT_RT kernels (installs them first).
test-rt: deps-rt
	$(MAKE) -C kernel modules KVER="$$(PYTHONPATH=lab python3 -c 'from vlab.machine.kernels import KERNELS as K; print(K["6.1-rt"].release, K["6.12-rt"].release)')"
	cd lab && VLAB_RT=1 ../$(PY) -m pytest -q -ra tests/test_veloces.py tests/test_conformance.py

clean:
	rm -rf build sim/target
