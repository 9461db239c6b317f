# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# sroce top-level Makefile.  `make help` lists the targets.

SRC := $(CURDIR)

# Kernel build tree: KDIR= overrides; else the running kernel's headers if
# installed, else the newest installed /lib/modules/*/build.
KDIR ?= $(shell \
	if [ -d /lib/modules/$$(uname -r)/build ]; then \
		echo /lib/modules/$$(uname -r)/build; \
	else \
		ls -d /lib/modules/*/build 2>/dev/null | sort -V | tail -n 1; \
	fi)
# The kernel release the module is built for.  Debian's header trees name a
# shorter release than the kernel's, so trust the path.  Every variable that
# depends on installed packages is expanded when used (=, not :=), after
# `deps` has run: a fresh machine has none of them when make starts.
KREL ?= $(strip $(if $(filter /lib/modules/%/build,$(KDIR)),\
	$(patsubst /lib/modules/%/build,%,$(KDIR)),\
	$(shell cat $(KDIR)/include/config/kernel.release 2>/dev/null)))

# Warnings are errors in CI (CI=true), or when asked: make WERROR=1.
ifeq ($(CI),true)
WERROR ?= 1
endif
KBUILD_ARGS = -C $(KDIR) M=$(SRC) $(if $(filter 1,$(WERROR)),SROCE_WERROR=y)

BUILD := $(SRC)/build
KODIR := $(BUILD)/modules
# The VMs boot the kernel the module was built for (tools/vm/run reads it
# from sroce.ko's vermagic).
VMARGS = -M $(KODIR)

# The libibverbs provider (ABI 34, rdma-core 44).
PROVIDER := $(BUILD)/lib/libsroce-rdmav34.so
PROVIDER_CFLAGS := -O2 -g -Wall -Wextra -Wno-unused-parameter \
	-Wno-missing-field-initializers $(if $(filter 1,$(WERROR)),-Werror)
LIBDIR ?= $(shell pkg-config --variable=libdir libibverbs 2>/dev/null || \
	echo /usr/lib/x86_64-linux-gnu)

.PHONY: all modules provider deps lint check demo clean help install uninstall deb \
	check-deb \
	debug-kernel check-debug kcsan-kernel check-kcsan bench bench-nvmeof \
	bench-sweep bench-ab profile \
	fuzz-wire fuzz-verbs soak teardown perftest

all: modules provider

help:
	@echo "make            build sroce.ko against KDIR ($(KDIR))"
	@echo "make deps       install the Debian packages everything needs"
	@echo "make demo       build, boot two VMs, create sroce devices, show them"
	@echo "make check      build + lint + the VM test suite (N passed, N failed)"
	@echo "make lint       sparse (C=2), checkpatch.pl --strict and kernel-doc"
	@echo "make bench      sroce beside rdma_rxe and TCP, two VMs, one boot"
	@echo "make bench-nvmeof  NVMe-oF IOPS/bandwidth: sroce, rdma_rxe, NVMe/TCP (REPS= MTU=)"
	@echo "make bench-sweep  64 B-1 MiB send/write/read: table and SVG (MTU= QPS= RPS=)"
	@echo "make bench-ab   an A/B in one boot: module of OLD=REV against the working tree"
	@echo "make profile    perf in both VMs during perftest: where the time goes"
	@echo "make fuzz-wire  the long wire fuzzer run in a VM (SEED=, PACKETS=, DURATION=)"
	@echo "make fuzz-verbs the long verbs fuzzer run in a VM (SEED=, OPS= per thread)"
	@echo "make soak       integrity over a lossy, corrupting link (DURATION= s)"
	@echo "make teardown   teardown under load, many cycles (CYCLES=)"
	@echo "make perftest   perftest's option matrix over loopback (make check: a short set)"
	@echo "make install    install the module (depmod), provider, sroce.driver, sroce(7)"
	@echo "make uninstall  remove what make install installed (DESTDIR= for both)"
	@echo "make deb        Debian packages in build/deb: sroce-dkms, libsroce-rdmav34"
	@echo "make check-deb  install, use and purge those packages in a VM (DKMS build)"
	@echo "make debug-kernel  build the KASAN/lockdep/kmemleak kernel (cached)"
	@echo "make check-debug   the VM suite on the debug kernel"
	@echo "make kcsan-kernel  build the KCSAN (data race) kernel (cached)"
	@echo "make check-kcsan   the smoke set on the KCSAN kernel"

deps:
	@tools/deps.sh

modules:
	@test -n "$(KDIR)" || { echo "no kernel headers: run 'make deps'"; exit 1; }
	$(MAKE) $(KBUILD_ARGS) modules
	@mkdir -p $(KODIR)
	@find drivers tests -name '*.ko' -exec cp {} $(KODIR)/ \;

provider: $(PROVIDER) $(BUILD)/tests/sroce_objects $(BUILD)/tests/sroce_integrity \
	$(BUILD)/tests/sroce_wire_target \
	$(BUILD)/tests/sroce_hostile $(BUILD)/tests/sroce_fuzz_verbs \
	$(BUILD)/tests/sroce_orphan $(BUILD)/tests/sroce_ringkeep

# User-space test programs (libibverbs), run inside the VMs.
$(BUILD)/tests/sroce_objects: tests/user/objects.c tests/user/common.h tests/user/tap.h
	@mkdir -p $(BUILD)/tests
	$(CC) $(PROVIDER_CFLAGS) -o $@ $< -libverbs -lpthread

$(BUILD)/tests/sroce_integrity: tests/user/integrity.c tests/user/tap.h
	@mkdir -p $(BUILD)/tests
	$(CC) $(PROVIDER_CFLAGS) -o $@ $< -libverbs

$(BUILD)/tests/sroce_orphan: tests/user/orphan.c tests/user/common.h tests/user/tap.h
	@mkdir -p $(BUILD)/tests
	$(CC) $(PROVIDER_CFLAGS) -o $@ $< -libverbs

$(BUILD)/tests/sroce_ringkeep: tests/user/ringkeep.c
	@mkdir -p $(BUILD)/tests
	$(CC) $(PROVIDER_CFLAGS) -o $@ $< -libverbs

$(BUILD)/tests/sroce_wire_target: tests/user/wire-target.c
	@mkdir -p $(BUILD)/tests
	$(CC) $(PROVIDER_CFLAGS) -o $@ $< -libverbs

$(BUILD)/tests/sroce_hostile: tests/user/hostile.c tests/user/tap.h include/uapi/rdma/sroce-abi.h
	@mkdir -p $(BUILD)/tests
	$(CC) $(PROVIDER_CFLAGS) -Iinclude/uapi -o $@ $< -libverbs -lpthread

$(BUILD)/tests/sroce_fuzz_verbs: tools/fuzz/fuzz-verbs.c
	@mkdir -p $(BUILD)/tests
	$(CC) $(PROVIDER_CFLAGS) -o $@ $< -libverbs -lpthread

$(PROVIDER): tools/lib/sroce.c tools/lib/verbs_provider.h include/uapi/rdma/sroce-abi.h
	@mkdir -p $(BUILD)/lib
	@grep -qa IBVERBS_PRIVATE_34 $(LIBDIR)/libibverbs.so 2>/dev/null || { \
		echo "provider: $(LIBDIR)/libibverbs.so lacks the private provider" \
		     "interface IBVERBS_PRIVATE_34 that tools/lib/verbs_provider.h" \
		     "declares (rdma-core 44 has it); not built" >&2; exit 1; }
	$(CC) $(PROVIDER_CFLAGS) -fPIC -shared -Iinclude/uapi \
		-Wl,--no-undefined -Wl,-z,defs -o $@ tools/lib/sroce.c -libverbs
	@echo "driver $(BUILD)/lib/libsroce" > $(BUILD)/lib/sroce.driver

lint: modules
	@tools/lint.sh "$(KDIR)"

check: deps
	@$(MAKE) --no-print-directory modules provider
	@tools/lint.sh "$(KDIR)"
	@tests/run $(VMARGS)

# A benchmark, not a test: prints figures, writes build/bench/bench.{csv,json}.
bench: deps
	@$(MAKE) --no-print-directory modules provider
	@echo "bench: two VMs, sroce then rdma_rxe then TCP, each row $(or $(REPS),3) times (10-20 minutes a round under emulation)..."
	@rm -f $(BUILD)/vm/bench-vm/shared/bench.txt
	@SROCE_ARG_REPS=$(or $(REPS),3) SROCE_ARG_CMD=$(or $(CMD),0) tools/vm/run $(VMARGS) -t $$(( $(or $(REPS),3) * 1200 + 600 )) \
		tools/bench/bench-vm.sh > $(BUILD)/bench.tap; \
	rc=$$?; tools/bench/report $(BUILD)/vm/bench-vm/shared/bench.txt $(BUILD)/bench || rc=1; \
	if [ $$rc -ne 0 ]; then grep -v '^ *ok' $(BUILD)/bench.tap | head -40; fi; exit $$rc

# An A/B of two builds of the module in one boot: revision OLD's (default
# HEAD) against the working tree's, loaded in turn, REPS rounds (default
# 3), a few perftest rows each and the ACKs sent per packet; the table in
# build/bench-ab/.  Builds OLD in a worktree under build/ab/.
bench-ab: deps
	@$(MAKE) --no-print-directory modules provider
	@rm -rf $(BUILD)/ab/old; git worktree prune; \
	git worktree add -f --detach $(BUILD)/ab/old $(or $(OLD),HEAD) > /dev/null && \
	$(MAKE) --no-print-directory -C $(BUILD)/ab/old modules KDIR=$(KDIR) > /dev/null || exit 1
	@echo "bench-ab: two VMs, $(or $(OLD),HEAD) (a) against the working tree (b), $(or $(REPS),3) rounds..."
	@rm -f $(BUILD)/vm/ab-vm/shared/bench.txt
	@SROCE_ARG_REPS=$(or $(REPS),3) SROCE_ARG_AB_A=$(abspath $(BUILD))/ab/old/build/modules \
		SROCE_ARG_AB_B=$(abspath $(BUILD))/modules \
		tools/vm/run $(VMARGS) -t $$(( $(or $(REPS),3) * 900 + 600 )) \
		tools/bench/ab-vm.sh > $(BUILD)/bench-ab.tap; \
	rc=$$?; tools/bench/report $(BUILD)/vm/ab-vm/shared/bench.txt $(BUILD)/bench-ab || rc=1; \
	git worktree remove --force $(BUILD)/ab/old; \
	if [ $$rc -ne 0 ]; then grep -v '^ *ok' $(BUILD)/bench-ab.tap | head -40; fi; exit $$rc

# The size sweep: send, write and read bandwidth from 64 B to 1 MiB over
# sroce, rdma_rxe and TCP; MTU=9000 (IB MTU 4096), QPS=4 (perftest -q),
# SIZES=a,b,c, SECS= per row, RPS=1 (receive steering over the CPUs),
# EV=1 (perftest -e, completion events instead of a poll loop; no WRITE).
# Table and build/bench/sweep.svg.
# The default sizes: a variable, or $(or) would take their commas as its own.
SWEEP_SIZES := 64,1024,4096,16384,65536,262144,1048576
bench-sweep: deps
	@$(MAKE) --no-print-directory modules provider
	@echo "bench-sweep: two VMs, sizes 64 B-1 MiB, sroce then rdma_rxe then TCP (15-25 minutes under emulation)..."
	@rm -f $(BUILD)/vm/sweep-vm/shared/bench.txt
	@SROCE_ARG_MTU=$(or $(MTU),1500) SROCE_ARG_QPS=$(or $(QPS),1) SROCE_ARG_RPS=$(or $(RPS),0) \
		SROCE_ARG_SIZES=$(or $(SIZES),$(SWEEP_SIZES)) SROCE_ARG_EV=$(or $(EV),0) \
		SROCE_ARG_SECS=$(or $(SECS),4) \
		tools/vm/run $(VMARGS) -t 7200 tools/bench/sweep-vm.sh > $(BUILD)/bench-sweep.tap; \
	rc=$$?; tools/bench/report $(BUILD)/vm/sweep-vm/shared/bench.txt $(BUILD)/bench-sweep || rc=1; \
	tools/bench/plot $(BUILD)/vm/sweep-vm/shared/bench.txt $(BUILD)/bench/sweep.svg || rc=1; \
	if [ $$rc -ne 0 ]; then grep -v '^ *ok' $(BUILD)/bench-sweep.tap | head -40; fi; exit $$rc

# A profile, not a benchmark: perf in both VMs during a 64 KiB WRITE and a
# 64 B SEND stream, sroce then rdma_rxe; flat profiles in build/profile/,
# and a timeline from tracepoints (build/profile/timeline.txt).  PERF=0:
# the timeline only.  FUNCS=1: only the time per function call of the WRITE
# stream and a READ ping (function_graph, build/profile/functions.txt).
profile: deps
	@$(MAKE) --no-print-directory modules provider
	@echo "profile: two VMs, perf during perftest, sroce then rdma_rxe (about 5 minutes)..."
	@rm -rf $(BUILD)/vm/profile-vm/shared/profile-*.txt \
		$(BUILD)/vm/profile-vm/shared/trace-*.txt \
		$(BUILD)/vm/profile-vm/shared/funcs-*.txt $(BUILD)/profile
	@SROCE_ARG_PROFILE_STACKS="$(STACKS)" SROCE_ARG_PROFILE_PERF=$(or $(PERF),1) \
		SROCE_ARG_PROFILE_FUNCS=$(or $(FUNCS),0) \
		tools/vm/run $(VMARGS) tools/bench/profile-vm.sh > $(BUILD)/profile.tap; \
	rc=$$?; mkdir -p $(BUILD)/profile; \
	cp $(BUILD)/vm/profile-vm/shared/profile-*.txt $(BUILD)/vm/profile-vm/shared/funcs-*.txt \
		$(BUILD)/vm/profile-vm/shared/trace-*.txt $(BUILD)/profile/ 2>/dev/null; \
	for f in $(BUILD)/profile/profile-*.txt; do [ -e "$$f" ] && head -16 "$$f"; done; \
	if [ "$(FUNCS)" = 1 ]; then \
		tools/bench/func-report $(BUILD)/profile/funcs-*.txt | tee $(BUILD)/profile/functions.txt || rc=1; \
	else \
		tools/bench/trace-report $(BUILD)/profile/trace-*.txt | tee $(BUILD)/profile/timeline.txt || rc=1; \
	fi; \
	if [ $$rc -ne 0 ]; then grep -v '^ *ok' $(BUILD)/profile.tap | head -40; fi; exit $$rc

# NVMe-oF over sroce, rdma_rxe and NVMe/TCP: build/bench-nvmeof/bench.{csv,json}.
bench-nvmeof: deps
	@$(MAKE) --no-print-directory modules provider
	@echo "bench-nvmeof: two VMs, fio over sroce, rdma_rxe, NVMe/TCP, $(or $(REPS),3) rounds (6 minutes a round)..."
	@rm -f $(BUILD)/vm/nvmeof-bench/shared/bench.txt
	@SROCE_ARG_REPS=$(or $(REPS),3) SROCE_ARG_MTU=$(or $(MTU),1500) tools/vm/run $(VMARGS) -t $$(( $(or $(REPS),3) * 1200 + 600 )) \
		tools/bench/nvmeof-bench.sh > $(BUILD)/bench-nvmeof.tap; \
	rc=$$?; tools/bench/report $(BUILD)/vm/nvmeof-bench/shared/bench.txt $(BUILD)/bench-nvmeof || rc=1; \
	if [ $$rc -ne 0 ]; then grep -v '^ *ok' $(BUILD)/bench-nvmeof.tap | head -40; fi; exit $$rc

# The long wire fuzzer run (tools/fuzz/fuzz-wire in one VM, an hour at
# most); the short one is tests/vm/fuzz-wire.sh.  SEED= reproduces a run,
# PACKETS= or DURATION= (seconds, default 3000) bound it; the VM reads them
# from build/fuzz-wire.env.
fuzz-wire: deps
	@$(MAKE) --no-print-directory modules provider
	@seed="$(SEED)"; [ -n "$$seed" ] || seed=$$(od -An -N4 -tu4 /dev/urandom | tr -d ' '); \
	printf 'FUZZ_SEED=%s\nFUZZ_PACKETS=%s\nFUZZ_SECONDS=%s\n' "$$seed" \
		"$(PACKETS)" "$(or $(DURATION),3000)" > $(BUILD)/fuzz-wire.env; \
	echo "fuzz-wire: seed $$seed, one VM, up to an hour..."
	@tools/vm/run $(VMARGS) -t 3600 tools/fuzz/fuzz-wire-vm.sh > $(BUILD)/fuzz-wire.tap; \
	rc=$$?; tail -n 60 $(BUILD)/vm/fuzz-wire-vm/vm0/fuzz-wire.txt 2>/dev/null; \
	if [ $$rc -ne 0 ]; then grep -v '^ *ok' $(BUILD)/fuzz-wire.tap | head -40; fi; exit $$rc

# Long runs of the hostile-input tools; make check runs each briefly.
# SEED= reproduces a fuzzer run (default: random, printed).
fuzz-verbs: deps
	@$(MAKE) --no-print-directory modules provider
	@seed="$(SEED)"; [ -n "$$seed" ] || seed=$$(od -An -N4 -tu4 /dev/urandom | tr -d ' '); \
	echo "fuzz-verbs: seed $$seed, $(or $(OPS),200000) operations per thread, 2 threads, one VM"; \
	SROCE_ARG_SEED=$$seed SROCE_ARG_OPS=$(or $(OPS),200000) tools/vm/run $(VMARGS) -t 3600 \
		-o $(BUILD)/vm/fuzz-verbs tests/vm/hostile.sh

soak: deps
	@$(MAKE) --no-print-directory modules provider
	@echo "soak: $(or $(DURATION),1800) s of integrity rounds over netem loss, duplication, reordering, corruption"
	@SROCE_ARG_DURATION=$(or $(DURATION),1800) tools/vm/run $(VMARGS) \
		-t $$(( $(or $(DURATION),1800) + 900 )) -o $(BUILD)/vm/soak-long tests/vm/soak.sh

teardown: deps
	@$(MAKE) --no-print-directory modules provider
	@echo "teardown: $(or $(CYCLES),20) cycles of teardown under load"
	@SROCE_ARG_CYCLES=$(or $(CYCLES),20) tools/vm/run $(VMARGS) \
		-t $$(( $(or $(CYCLES),20) * 600 + 300 )) -o $(BUILD)/vm/teardown-long tests/vm/teardown.sh

# perftest's option matrix on sroce (make check runs a short set).
perftest: deps
	@$(MAKE) --no-print-directory modules provider
	@echo "perftest: every option in the matrix, loopback, one VM (about five minutes)"
	@SROCE_ARG_PERFTEST=full tools/vm/run $(VMARGS) -t 3000 \
		-o $(BUILD)/vm/perftest-full tests/vm/perftest.sh

demo: deps
	@$(MAKE) --no-print-directory modules provider
	@echo "demo: booting two VMs (about a minute under emulation)..."
	@tools/vm/run $(VMARGS) tools/vm/demo.sh > $(BUILD)/demo.tap; \
	rc=$$?; cat $(BUILD)/vm/demo/vm*/demo.txt 2>/dev/null; \
	if [ $$rc -ne 0 ]; then cat $(BUILD)/demo.tap; fi; exit $$rc

# The debug-kernel lane: the same suite on a KASAN/lockdep/kmemleak kernel
# built from Debian's linux-source-6.1 (tools/debug-kernel/, cached).  Our
# kernel code is built for it in a copy of the tree, so both lanes' objects
# never mix.  LANE=kcsan is the same for the KCSAN kernel (check-kcsan).
LANE ?= debug
DEBUG_CACHE = $(shell tools/debug-kernel/build --print $(LANE))
DEBUG_KDIR = $(DEBUG_CACHE)/build
DEBUG_KREL = $(shell cat $(DEBUG_KDIR)/include/config/kernel.release 2>/dev/null)
DEBUG_SRC = $(BUILD)/$(LANE)/src
DEBUG_KODIR = $(BUILD)/$(LANE)/modules
# The lane runs every test but the two-VM RC, NVMe-oF and rxe interop
# suites (rc.sh, nvmeof.sh, interop.sh): under KASAN and lockdep in TCG
# they take longer than CI's budget allows; the engine runs there through
# loopback.sh, objects.sh (kernel data path), cm.sh, faults.sh, NVMe-oF
# through nvmeof-loop.sh.  DEBUG_TESTS="tests/vm/rc.sh ..." runs any set.
# CI runs the tests of tools/debug-kernel/lane that fit its budget.
DEBUG_SLOW := tests/vm/rc.sh tests/vm/nvmeof.sh tests/vm/interop.sh
# rds.sh: RDS's passive connect (rds_ib_laddr_check(), called inside an
# rdma_cm REQ handler) trips lockdep in rdma_cm on any device, rdma_rxe
# alike, and lockdep is off for the rest of that boot (testing.rst).
DEBUG_UPSTREAM := tests/vm/rds.sh
DEBUG_TESTS ?= $(filter-out $(DEBUG_SLOW) $(DEBUG_UPSTREAM),$(wildcard tests/vm/*.sh))
# The KCSAN lane: the hostile-input smoke set and the engine's paths.
KCSAN_TESTS := tests/vm/objects.sh tests/vm/hostile.sh tests/vm/loopback.sh \
	tests/vm/wire.sh tests/vm/fuzz-wire.sh

debug-kernel: deps
	@tools/debug-kernel/build $(LANE)

kcsan-kernel: deps
	@tools/debug-kernel/build kcsan

check-debug: debug-kernel provider
	@rm -rf $(DEBUG_SRC) && mkdir -p $(DEBUG_SRC) $(DEBUG_KODIR)
	@cp -r Kbuild drivers include tests $(DEBUG_SRC)/
	$(MAKE) -C $(DEBUG_KDIR) M=$(DEBUG_SRC) $(if $(filter 1,$(WERROR)),SROCE_WERROR=y) modules
	@find $(DEBUG_SRC) -name '*.ko' -exec cp {} $(DEBUG_KODIR)/ \;
	@echo "check-debug: the $(LANE) lane runs: $(DEBUG_TESTS)"
	@SROCE_VM_TIMEOUT_SCALE=2 tests/run -M $(DEBUG_KODIR) -k $(DEBUG_CACHE)/bzImage \
		-m $(DEBUG_CACHE)/root/lib/modules/$(DEBUG_KREL) $(DEBUG_TESTS)

check-kcsan:
	@$(MAKE) --no-print-directory check-debug LANE=kcsan DEBUG_TESTS="$(KCSAN_TESTS)"

# What make install puts where (make uninstall removes exactly these).
# Only the driver: the test modules (tests/kernel) stay in the tree.
# DESTDIR= stages it all under a directory.
INSTALL_FILES = /lib/modules/$(KREL)/updates/sroce.ko \
	$(LIBDIR)/libibverbs/libsroce-rdmav34.so \
	/etc/libibverbs.d/sroce.driver /usr/share/man/man7/sroce.7

install: modules provider
	install -D -m 0644 drivers/sroce/sroce.ko \
		$(DESTDIR)/lib/modules/$(KREL)/updates/sroce.ko
	install -D -m 0644 $(PROVIDER) $(DESTDIR)$(LIBDIR)/libibverbs/libsroce-rdmav34.so
	install -d $(DESTDIR)/etc/libibverbs.d
	echo "driver sroce" > $(DESTDIR)/etc/libibverbs.d/sroce.driver
	install -D -m 0644 Documentation/sroce.7 $(DESTDIR)/usr/share/man/man7/sroce.7
	@if [ -d $(or $(DESTDIR),/)/lib/modules/$(KREL)/kernel ]; then \
		depmod -a -b $(or $(DESTDIR),/) $(KREL); fi

# Debian packages in build/deb/ (tools/deb/build): sroce-dkms (module
# source for DKMS, sroce(7)) and libsroce-rdmav34 (provider, sroce.driver).
deb: provider
	@tools/deb/build $(BUILD)/deb $(PROVIDER) $(LIBDIR)

# The packages installed, used and purged in a VM that has no sroce of its
# own: DKMS builds the module there, under emulation (10-20 minutes).
check-deb: deb
	@echo "check-deb: one VM, apt install of build/deb/*.deb, DKMS build under emulation..."
	@tools/vm/run -M none -t 2400 tools/deb/vm-install.sh > $(BUILD)/check-deb.tap; \
	rc=$$?; cat $(BUILD)/check-deb.tap; exit $$rc

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALL_FILES))
	@if [ -d $(or $(DESTDIR),/)/lib/modules/$(KREL)/kernel ]; then \
		depmod -a -b $(or $(DESTDIR),/) $(KREL); fi

clean:
	$(MAKE) $(KBUILD_ARGS) clean
	rm -rf $(BUILD)
