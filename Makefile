# lossless-lab: the few verbs a user needs. `make help` lists them.
# Everything a target needs (apt packages, the Python venv, cargo builds) is installed by the
# target itself, idempotently, so a fresh Debian 12 machine needs nothing but `make`.

SHELL := /bin/bash
.DEFAULT_GOAL := build
# Only when missing: a PATH that differs from the shell's makes cargo rerun pyo3's build script
# (it watches PATH), rebuilding fpm-netlink on every switch between `make` and plain `cargo`.
ifeq ($(filter $(HOME)/.cargo/bin,$(subst :, ,$(PATH))),)
export PATH := $(HOME)/.cargo/bin:$(PATH)
endif

BUILD    := build
BIN      := $(CURDIR)/$(BUILD)/bin
STAMPS   := $(BUILD)/.stamps
VENV     := .venv
PY       := $(CURDIR)/$(VENV)/bin/python
CARGO    ?= cargo
PROFILE  := release
TARGET   := target/$(PROFILE)
RESULTS  := results
# Python trees that exist so far; lint and format only those.
PY_DIRS  := $(wildcard control kit topo ptf-tests p4src/tests tests/p4runtime-shell tests/doubles \
	tests/conformance tools toolchain/p4runtime-proto)

# The P4 compiler and the switch. Ours by default; `make run P4C=p4c SWITCH=simple_switch_grpc`
# selects the p4lang tools where they are installed.
P4C      ?= $(BIN)/p4-compile
SWITCH   ?= $(BIN)/p4-switch
export P4C SWITCH

# Debian packages the tree needs: the C preprocessor (P4 #include), Debian's Python with venv
# (Mininet's module is installed for it), and iproute2 for namespaces and veths; the lab's
# Mininet with the helpers it calls (bridge-utils, iputils-ping), iperf3 for TCP flows,
# tcpdump for per-port pcaps and ethtool to turn off checksum offloads on veths; FRR (zebra
# with dplane_fpm_nl, staticd, bgpd, vtysh), the routing daemons that feed the controller's
# FPM listener; munge, slurmctld, slurmd and slurm-client for the single-node Slurm cluster
# lossless-sim's sweep test runs an emitted job array on (toolchain/lossless-sim/tests/sweep.rs).
APT_PACKAGES := cpp python3-venv iproute2 mininet bridge-utils iputils-ping iperf3 tcpdump ethtool frr \
	munge slurmctld slurmd slurm-client
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: help build test lint fmt run sim sweep bench bench-routes clean distclean deps p4 check-p4c ptf ptf-negative test-scale stf \
	p4sh-test conformance proto soak test-bgp

help:
	@echo "make build      build the Rust toolchain into $(BUILD)/bin"
	@echo "make test       lint, unit, golden and integration tests (what CI runs)"
	@echo "make run        build and run the default lab (ROUTING=bgp: FRR on every switch)"
	@echo "make test-bgp   leaf-spine with FRR/BGP over FPM; link flap, flap storm, FRR restart, clear neighbours, controller and switch restart (IPv4 and IPv6 traffic); kernel neighbours"
	@echo "make sim        lossless-sim, nominal rates, virtual time: seed 003 quick subset; EXP=seed003 all 40 cases; TOPO=..."
	@echo "make sweep      lossless-sim sweep SWEEP=file (default: SFC threshold x 25G/100G), J=parallel"
	@echo "make bench      benchmarks; JSON results under $(RESULTS)/bench/"
	@echo "make bench-routes  FRR's routes over FPM to p4-switch (root); SEED002=1 for 10k-90k IPv4,"
	@echo "                GOAL=1 for 200k IPv4 + 65k IPv6 (streams kept in $(RESULTS)/bench/fpm-streams);"
	@echo "                BGP=1: live from a BGP peer (ExaBGP -> bgpd -> zebra), seed 002's points, the goal, ECMP"
	@echo "make soak       60 s (switch time) of PFC storms and lossless incast through p4-switch"
	@echo "make stf        STF tests of the pipeline's mechanisms (p4src/tests/)"
	@echo "make p4sh-test  the PyPI p4runtime-shell drives p4-switch (tests/p4runtime-shell/)"
	@echo "make conformance  p4c's harness, real p4c's JSON and P4Info vs our tools (tests/conformance/)"
	@echo "make ptf        PTF conformance suite against \$$SWITCH in namespaces (root)"
	@echo "make ptf-negative  PFC/ECN/SFC tests must fail with the mechanism off in the controller"
	@echo "make test-scale seed 002's full scale points through \$$SWITCH (times in $(RESULTS)/ptf/), then FRR-as-source route points"
	@echo "make p4         compile p4src/ with \$$P4C into $(BUILD)/p4/"
	@echo "make check-p4c  compile p4src/ with the real p4c (without it: fails, after comparing our"
	@echo "                P4Info with the real p4c's in tests/p4c-corpus/p4src/; CHECK_P4C=optional)"
	@echo "make fmt        format Rust and Python sources"
	@echo "make proto      re-export the P4Runtime descriptor set p4runtime-proto compiles"
	@echo "make clean      remove build outputs (keeps the venv)"

# --- installation -------------------------------------------------------------------------

$(STAMPS)/apt: Makefile
	@mkdir -p $(@D)
	@missing=$$(for p in $(APT_PACKAGES); do \
	    dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	    echo "apt: installing $$missing"; \
	    $(SUDO) apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@touch $@

$(STAMPS)/rust: Makefile
	@mkdir -p $(@D)
	@command -v $(CARGO) >/dev/null || { echo "cargo not found: install Rust (rustup) first" >&2; exit 1; }
	@$(CARGO) fmt --version >/dev/null 2>&1 || rustup component add rustfmt clippy
	@touch $@

# Debian's /usr/bin/python3 with system site packages, so that Debian's mininet module is visible.
$(STAMPS)/venv: pyproject.toml $(STAMPS)/apt
	@mkdir -p $(@D)
	@[ -x $(PY) ] || /usr/bin/python3 -m venv --system-site-packages $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	$(PY) -m lossless_ctl.p4rt_proto >/dev/null  # P4Runtime bindings for the controller (cached)
	@touch $@

deps: $(STAMPS)/apt $(STAMPS)/rust $(STAMPS)/venv

# --- build --------------------------------------------------------------------------------

# Rust only: p4runtime-proto compiles its committed descriptor set (`make proto`).
build: $(STAMPS)/rust
	$(CARGO) build --$(PROFILE) --workspace
	@mkdir -p $(BIN)
	@find $(TARGET) -maxdepth 1 -type f -executable ! -name '*.so' -exec install -p -m 755 {} $(BIN)/ \;
	@# The controller's FPM decoder (toolchain/fpm-netlink), a Python extension module, where
	@# the editable install imports it from.
	@install -p -m 755 $(TARGET)/lib_fpm_netlink.so control/lossless_ctl/_fpm_netlink.abi3.so
	@# p4c's bmv2 backend name (the compiler takes that tool's command line from argv[0]) and
	@# our core.p4/v1model.p4 where the installed compiler looks for them.
	@ln -sf p4-compile $(BIN)/p4c-bm2-ss
	@# bmv2's names for the switch (it picks its command line from argv[0]); `make run` puts
	@# $(BIN) last on PATH, so SWITCH=simple_switch_grpc finds an installed bmv2 first.
	@ln -sf p4-switch $(BIN)/simple_switch
	@ln -sf p4-switch $(BIN)/simple_switch_grpc
	@mkdir -p $(BUILD)/share/p4c/p4include
	@install -m 644 toolchain/p4-compile/p4include/*.p4 $(BUILD)/share/p4c/p4include/

# The P4Runtime schema of the venv's PyPI p4runtime and googleapis-common-protos packages as
# the FileDescriptorSet p4runtime-proto compiles (committed, so cargo needs no Python). Rerun
# after upgrading either package; toolchain/p4runtime-proto/tests/test_descriptor_set.py fails
# until then.
PROTO_FDS := toolchain/p4runtime-proto/p4runtime.fds.bin
proto: $(STAMPS)/venv
	$(PY) toolchain/p4runtime-proto/export_fds.py $(PROTO_FDS) >/dev/null

# --- the P4 program ----------------------------------------------------------------------

P4_OUT   := $(BUILD)/p4
P4_MAIN  := p4src/lossless.p4
P4_FLAGS := --target bmv2 --arch v1model --std p4-16

# p4c's command line, so P4C=p4c gives the same outputs from the real compiler. The C preprocessor
# (apt) handles #include.
p4: $(P4_OUT)/lossless.json

# The compiler is a prerequisite too: a compiler change must not leave a stale pipeline behind.
$(P4_OUT)/lossless.json: $(wildcard p4src/*.p4) $(wildcard $(P4C)) | build $(STAMPS)/apt
	@mkdir -p $(@D)
	$(P4C) $(P4_FLAGS) -o $(@D) --p4runtime-files $(@D)/lossless.p4info.txtpb $(P4_MAIN)

# Issue 6: the program must also compile with p4lang's p4c. Where it is not installed (it
# cannot be, from the registries our machines reach) our P4Info of p4src/ is compared with the
# one the real p4c wrote (tests/p4c-corpus/p4src/, vendored), and the target fails: a check
# that did not run is not a pass. CHECK_P4C=optional reports the same and succeeds.
REAL_P4C := $(firstword $(shell command -v p4c-bm2-ss p4c 2>/dev/null))
CHECK_P4C ?= required
P4C_REFERENCE := tests/p4c-corpus/p4src
check-p4c:
ifeq ($(REAL_P4C),)
	@$(MAKE) --no-print-directory p4
	@echo "check-p4c: p4lang p4c is not installed; our P4Info of $(P4_MAIN) against the real p4c's ($(P4C_REFERENCE)):"
	@$(PY) tests/conformance/p4info_diff.py $(P4_OUT)/lossless.p4info.txtpb \
	    $(P4C_REFERENCE)/lossless.p4info.txtpb || true
	@if [ "$(CHECK_P4C)" != optional ]; then \
	    echo "check-p4c: failed: p4c is not installed (CHECK_P4C=optional to accept the comparison above)" >&2; \
	    exit 1; fi
else
	@mkdir -p $(BUILD)/p4c-check
	$(REAL_P4C) --arch v1model -o $(BUILD)/p4c-check/lossless.json \
	    --p4runtime-files $(BUILD)/p4c-check/lossless.p4info.txtpb $(P4_MAIN)
	@echo "check-p4c: $(REAL_P4C) compiled $(P4_MAIN)"
endif

# --- checks -------------------------------------------------------------------------------

lint: $(STAMPS)/rust $(STAMPS)/venv
	$(CARGO) fmt --all --check
	$(CARGO) clippy --$(PROFILE) --workspace --all-targets -- -D warnings
	$(PY) -m ruff check $(PY_DIRS)
	$(PY) -m ruff format --check $(PY_DIRS)
	$(PY) tools/import_graph.py --check  # docs/ARCHITECTURE.md: no file cycles, no controller->lab arrow

test: build deps lint
	$(CARGO) test --$(PROFILE) --workspace
	$(PY) -m pytest
	$(MAKE) --no-print-directory p4sh-test
	$(MAKE) --no-print-directory stf
	$(MAKE) --no-print-directory conformance
	$(MAKE) --no-print-directory ptf
	$(MAKE) --no-print-directory ptf-negative

fmt: $(STAMPS)/rust $(STAMPS)/venv
	$(CARGO) fmt --all
	$(PY) -m ruff format $(PY_DIRS)

# STF tests of p4src's mechanisms (p4src/tests/README.md), each on a fresh engine with the
# switch's 8 priority queues; p4-stf exits non-zero on any failure.
stf: build p4
	$(BIN)/p4-stf --priority-queues 8 $(P4_OUT)/lossless.json $(sort $(wildcard p4src/tests/*.stf))

# Issue 4: the unmodified PyPI p4runtime-shell against p4-switch. It pins protobuf<3.21 and
# p4runtime 1.4.1, which the project's venv cannot hold, so it gets a venv of its own; system
# site packages as in $(VENV); the test starts the switch with lossless_kit's SwitchProcess.
P4SH_VENV := .venv-p4sh
P4SH_PY   := $(CURDIR)/$(P4SH_VENV)/bin/python
$(STAMPS)/venv-p4sh: tests/p4runtime-shell/requirements.txt $(STAMPS)/apt
	@mkdir -p $(@D)
	@[ -x $(P4SH_PY) ] || /usr/bin/python3 -m venv --system-site-packages $(P4SH_VENV)
	$(P4SH_PY) -m pip install -q --upgrade pip
	$(P4SH_PY) -m pip install -q -r $<
	@touch $@

p4sh-test: build $(STAMPS)/venv-p4sh
	cd tests/p4runtime-shell && PYTHONPATH=$(CURDIR)/kit $(P4SH_PY) -m pytest

# Issue 20: p4c's own STF harness (tests/p4c-harness/, unmodified) with our p4c-bm2-ss,
# simple_switch and simple_switch_CLI; the real p4c's JSON on our switch; our P4Info against
# p4c's. Fails when a count drops below tests/conformance/expected-counts.json or a program not
# in expected-failures.txt fails. About 4 minutes on 2 cores (the harness waits 2 s per test,
# so 4 run at once).
CONFORMANCE_JOBS ?= 4
conformance: build deps
	$(PY) tests/conformance/run.py --jobs $(CONFORMANCE_JOBS)

# --- PTF suite (ptf-tests/, issue 10) ----------------------------------------------------

# Namespaces and veths need root. PTF_OVERLAY=ptf-tests/config/no_pfc.json loads the suite with
# a mechanism turned off (the tests still expect it); PTF_TESTS=pfc runs one module or test.
# Against bmv2 (SWITCH=simple_switch_grpc) the tests of ptf-tests/ptf_harness/bmv2_limits.py
# are skipped; PTF_AS_BMV2=1 runs the tests that way on p4-switch too.
PTF_RUN = $(SUDO) env PYTHONPATH=$(CURDIR)/ptf-tests $(PY) -m ptf_harness.run \
	--switch $(SWITCH) --pipeline $(P4_OUT) --results $(RESULTS)/ptf \
	$(foreach o,$(PTF_OVERLAY),--overlay $(o)) $(if $(PTF_AS_BMV2),--as-bmv2)

ptf: build deps p4
	$(PTF_RUN) --scale ci $(PTF_TESTS)

# Issue 10: with PFC, ECN or SFC turned off in the controller (ptf-tests/config/no_*.json) every
# test of that mechanism must fail; --baseline also requires them to pass with it on.
ptf-negative: build deps p4
	$(PTF_RUN) --scale ci --negative --baseline

# Then seed 002's route points with FRR as the source (a BGP peer feeding bgpd, about 10
# minutes): every route checked on the switch, times in $(RESULTS)/scale/routes-fpm-bgp.json.
test-scale: build deps p4
	$(PTF_RUN) --scale full scale
	$(PY) -m lossless_kit.bench_routes --pipeline $(P4_OUT) --points '' --bgp --bgp-ecmp \
	    --streams $(RESULTS)/scale/fpm-streams -o $(RESULTS)/scale/routes-fpm-bgp.json

# --- lab ----------------------------------------------------------------------------------

# `make run [TOPO=prio-2to1|incast-16to1|leafspine-7to1] [EXP=...|none] [QUICK=1]
# [ROUTING=static|bgp]`: topo/README.md.
# The P4 program is compiled first; a missing switch or pipeline is reported by the runner.
TOPO  ?= prio-2to1
EXP   ?=
QUICK ?=
ROUTING ?= static
export TOPO EXP QUICK ROUTING
run: build deps
	-@$(MAKE) --no-print-directory p4
	PATH=$$PATH:$(BIN) $(PY) -m lossless_topo.runner --switch $(SWITCH) --pipeline $(P4_OUT) \
	    --results $(RESULTS)

# ROUTING=bgp end to end (topo/bgp_tests, about 3 minutes, root): the leaf-spine with FRR on
# every switch, BGP sessions, FPM routes in the P4 tables, h1 -> h8 forwarded over IPv4 and IPv6,
# a leaf-spine link down and up, a flap storm, an FRR restart, clear neighbours, a controller and
# a switch restart under IPv4 and IPv6 traffic (loss from sequence numbers to $(RESULTS)/bgp/*.json),
# neighbours from the kernel's table (run --neighsync).
test-bgp: build deps
	$(PY) -m pytest -s topo/bgp_tests

# `make sim`: one case of each table, quick, each topology into $(RESULTS)/sim/TOPO: seed 003's
# (leafspine-7to1: 9:1, 4 KB, 8x7 and 256x7, without and with remote PFC, in one run), seed 000's
# incast (incast-16to1), seed 001's head-of-line table (prio-2to1) and seed 003's field test
# (fieldtest-7to1); about 2 min of CPU, every child counted (toolchain/lossless-sim/README.md). `make sim EXP=seed003` (or seed000,
# seed001): that seed's topology, every case in one run, full; EXP=fieldtest: seed 003's field
# test and its two phenomena (fieldtest-7to1). `make sim TOPO=... [CASE=ecn=off]
# [QUICK=1] [SEED=N]`: any topology, every case or one (toolchain/lossless-sim/README.md).
CASE ?=
SEED ?= 1
SIM_EXP_seed000 := incast-16to1
SIM_EXP_seed001 := prio-2to1
SIM_EXP_seed003 := leafspine-7to1
SIM_EXP_fieldtest := fieldtest-7to1
SIM_GIVEN := $(filter command line environment,$(origin TOPO))
SIM_SUBSET := leafspine-7to1 incast-16to1 prio-2to1 fieldtest-7to1
SIM_TOPOS = $(if $(EXP),$(or $(SIM_EXP_$(EXP)),$(error EXP=$(EXP): make sim knows seed000, seed001, seed003, fieldtest)),$(if $(SIM_GIVEN),$(TOPO),$(SIM_SUBSET)))
SIM_QUICK = $(if $(or $(EXP),$(SIM_GIVEN)),$(filter 1,$(QUICK)),1)
sim: build deps p4
	set -e; for t in $(SIM_TOPOS); do \
	    $(BIN)/lossless-sim run $$t --lab $(CURDIR) --seed $(SEED) --out $(RESULTS)/sim/$$t \
	        $(if $(CASE),--case '$(CASE)') $(if $(SIM_QUICK),--quick); \
	done

# lossless-sim sweep (toolchain/lossless-sim/README.md, "Sweep"): SWEEP=file (default: the
# worked SFC threshold question), J=points at once (default: the cores); results/sweep/NAME/.
SWEEP ?= toolchain/lossless-sim/sweeps/sfc-threshold.json
sweep: build deps p4
	$(BIN)/lossless-sim sweep $(SWEEP) --lab $(CURDIR) \
	    $(if $(filter command line environment,$(origin SEED)),--seed $(SEED)) --out $(RESULTS)/sweep/$(basename $(notdir $(SWEEP))) $(if $(J),-j $(J))

# Each benchmark writes JSON under results/bench/ with its baseline measured in the same run
# (a no-op program, the heap scheduler, a linear scan, ...); crates' READMEs explain the figures.
BENCH_OUT := $(RESULTS)/bench
CARGO_EXAMPLE := $(CARGO) run -q --$(PROFILE) -p
bench: build deps p4
	@mkdir -p $(BENCH_OUT)
	$(CARGO_EXAMPLE) switch-v1model --example switch-v1model-bench -- $(BENCH_OUT)/switch-v1model.json
	$(CARGO_EXAMPLE) p4-switch --example p4-switch-bench -- $(BENCH_OUT)/p4-switch.json
	$(CARGO_EXAMPLE) p4-switch --example p4-switch-tm-bench -- $(BENCH_OUT)/p4-switch-tm.json
	$(CARGO_EXAMPLE) p4runtime-server --example p4runtime-server-bench -- $(BENCH_OUT)/p4runtime-write.json
	$(CARGO_EXAMPLE) p4-switch --example p4-switch-p4rt-write-bench -- $(P4_OUT)/lossless.json \
	    $(P4_OUT)/lossless.p4info.txtpb $(BENCH_OUT)/p4runtime-write-lossless.json
	$(CARGO_EXAMPLE) switch-tables --example switch-tables-bench -- $(BENCH_OUT)/switch-tables.json
	$(CARGO_EXAMPLE) switch-hash --example switch-hash-bench -- $(BENCH_OUT)/switch-hash.json
	$(CARGO_EXAMPLE) roce-host --example roce-host-bench -- $(BENCH_OUT)/roce-host.json
	$(CARGO_EXAMPLE) lossless-sim --example lossless-sim-bench -- $(BENCH_OUT)/sim.json
	$(CARGO_EXAMPLE) p4-bmv2-backend --example compile_bench -- $(P4_MAIN) $(BENCH_OUT)/compile.json
	$(CARGO_EXAMPLE) p4-p4info --example bench_p4info > $(BENCH_OUT)/p4-p4info.json
	$(BIN)/flowgen bench --out $(BENCH_OUT)/flowgen.json
	$(CARGO_EXAMPLE) flowgen --example flowgen-tx-bench -- $(BENCH_OUT)/flowgen-tx.json
	$(PY) -m lossless_kit.bench --pipeline $(P4_OUT) -o $(BENCH_OUT)/control.json
	@ls -l $(BENCH_OUT)

# Issue 22: FRR's static routes recorded off zebra's FPM stream and replayed into `lossless-ctl
# run --fpm`, first FPM byte to the last route on the switch, beside seed 002 (kit/README.md).
# BGP=1 adds FRR fed live by a BGP peer (ExaBGP) at seed 002's points, the goal and ECMP.
# Root (network namespaces) and FRR; minutes with SEED002=1 or BGP=1, so not part of `make bench`.
bench-routes: build deps p4
	@mkdir -p $(BENCH_OUT)
	$(PY) -m lossless_kit.bench_routes --pipeline $(P4_OUT) $(if $(filter 1,$(SEED002)),--seed002) \
	    $(if $(filter 1,$(GOAL)),--goal) $(if $(filter 1,$(BGP)),--bgp --bgp-ecmp) \
	    --streams $(BENCH_OUT)/fpm-streams -o $(BENCH_OUT)/routes-fpm.json

# Issue 19: 60 s of switch time of lossless incast with a PFC storm every 5 s, through p4-switch's
# core on a simulated clock (toolchain/p4-switch/README.md, "Soak"); fails on a lossless drop
# outside the storms or occupancy left at the end. Not part of `make test`.
soak: build
	$(CARGO_EXAMPLE) p4-switch --example p4-switch-soak

clean:
	rm -rf $(BUILD) target

distclean: clean
	rm -rf $(VENV) $(P4SH_VENV)
