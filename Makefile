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
# The kernel release the module is built for (what the VMs boot).  Debian's
# header trees name a shorter release than the kernel's, so trust the path.
KREL ?= $(strip $(if $(filter /lib/modules/%/build,$(KDIR)),\
	$(patsubst /lib/modules/%/build,%,$(KDIR)),\
	$(shell cat $(KDIR)/include/config/kernel.release 2>/dev/null)))

# Warnings are errors in CI (CI=true), or when asked: make WERROR=1.
ifeq ($(CI),true)
WERROR ?= 1
endif
KBUILD_ARGS := -C $(KDIR) M=$(SRC) $(if $(filter 1,$(WERROR)),SROCE_WERROR=y)

BUILD := $(SRC)/build
KODIR := $(BUILD)/modules
# The VMs boot the kernel the module was built for.
VMARGS := -M $(KODIR) -k /boot/vmlinuz-$(KREL)

# The libibverbs provider (ABI 34, rdma-core 44).
PROVIDER := $(BUILD)/lib/libsroce-rdmav34.so
PROVIDER_CFLAGS := -O2 -g -Wall -Wextra -Wno-unused-parameter \
	-Wno-missing-field-initializers $(if $(filter 1,$(WERROR)),-Werror)
LIBDIR ?= $(shell pkg-config --variable=libdir libibverbs 2>/dev/null || \
	echo /usr/lib/x86_64-linux-gnu)

.PHONY: all modules provider deps lint check demo clean help install \
	debug-kernel check-debug bench bench-nvmeof

all: modules provider

help:
	@echo "make            build sroce.ko against KDIR ($(KDIR))"
	@echo "make deps       install the Debian packages everything needs"
	@echo "make demo       build, boot two VMs, create sroce devices, show them"
	@echo "make check      build + lint + the VM test suite (N passed, N failed)"
	@echo "make lint       sparse (C=1) and checkpatch.pl --strict"
	@echo "make bench      sroce beside rdma_rxe and TCP, two VMs, one boot"
	@echo "make bench-nvmeof  NVMe-oF IOPS/bandwidth: sroce, rdma_rxe, NVMe/TCP"
	@echo "make install    install the module (and run depmod)"
	@echo "make debug-kernel  build the KASAN/lockdep/kmemleak kernel (cached)"
	@echo "make check-debug   the VM suite on the debug kernel"

deps:
	@tools/deps.sh

modules:
	@test -n "$(KDIR)" || { echo "no kernel headers: run 'make deps'"; exit 1; }
	$(MAKE) $(KBUILD_ARGS) modules
	@mkdir -p $(KODIR)
	@find drivers tests -name '*.ko' -exec cp {} $(KODIR)/ \;

provider: $(PROVIDER) $(BUILD)/tests/sroce_objects $(BUILD)/tests/sroce_integrity

# User-space test programs (libibverbs), run inside the VMs.
$(BUILD)/tests/sroce_objects: tests/user/objects.c
	@mkdir -p $(BUILD)/tests
	$(CC) $(PROVIDER_CFLAGS) -o $@ $< -libverbs

$(BUILD)/tests/sroce_integrity: tests/user/integrity.c
	@mkdir -p $(BUILD)/tests
	$(CC) $(PROVIDER_CFLAGS) -o $@ $< -libverbs

$(PROVIDER): tools/lib/sroce.c tools/lib/verbs_provider.h include/uapi/rdma/sroce-abi.h
	@mkdir -p $(BUILD)/lib
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
	@echo "bench: two VMs, sroce then rdma_rxe then TCP (10-20 minutes under emulation)..."
	@rm -f $(BUILD)/vm/bench-vm/shared/bench.txt
	@tools/vm/run $(VMARGS) -t 1500 tools/bench/bench-vm.sh > $(BUILD)/bench.tap; \
	rc=$$?; tools/bench/report $(BUILD)/vm/bench-vm/shared/bench.txt $(BUILD)/bench || rc=1; \
	if [ $$rc -ne 0 ]; then grep -v '^ *ok' $(BUILD)/bench.tap | head -40; fi; exit $$rc

# NVMe-oF over sroce, rdma_rxe and NVMe/TCP: build/bench-nvmeof/bench.{csv,json}.
bench-nvmeof: deps
	@$(MAKE) --no-print-directory modules provider
	@echo "bench-nvmeof: two VMs, fio over sroce, rdma_rxe, NVMe/TCP (about 10 minutes)..."
	@rm -f $(BUILD)/vm/nvmeof-bench/shared/bench.txt
	@tools/vm/run $(VMARGS) -t 1800 tools/bench/nvmeof-bench.sh > $(BUILD)/bench-nvmeof.tap; \
	rc=$$?; tools/bench/report $(BUILD)/vm/nvmeof-bench/shared/bench.txt $(BUILD)/bench-nvmeof || rc=1; \
	if [ $$rc -ne 0 ]; then grep -v '^ *ok' $(BUILD)/bench-nvmeof.tap | head -40; fi; exit $$rc

demo: deps
	@$(MAKE) --no-print-directory modules provider
	@echo "demo: booting two VMs (about a minute under emulation)..."
	@tools/vm/run $(VMARGS) tests/vm/demo.sh > $(BUILD)/demo.tap; \
	rc=$$?; cat $(BUILD)/vm/demo/vm*/demo.txt 2>/dev/null; \
	if [ $$rc -ne 0 ]; then cat $(BUILD)/demo.tap; fi; exit $$rc

# The debug-kernel lane: the same suite on a KASAN/lockdep/kmemleak kernel
# built from Debian's linux-source-6.1 (tools/debug-kernel/, cached).  Our
# kernel code is built for it in a copy of the tree, so both lanes' objects
# never mix.
DEBUG_CACHE = $(shell tools/debug-kernel/build --print)
DEBUG_KDIR = $(DEBUG_CACHE)/build
DEBUG_KREL = $(shell cat $(DEBUG_KDIR)/include/config/kernel.release 2>/dev/null)
DEBUG_SRC := $(BUILD)/debug/src
DEBUG_KODIR := $(BUILD)/debug/modules
# The lane runs every test but the two-VM RC, NVMe-oF and rxe interop
# suites (rc.sh, nvmeof.sh, interop.sh): under KASAN and lockdep in TCG
# they take longer than CI's budget allows; the engine runs there through
# loopback.sh, objects.sh (kernel data path), cm.sh, faults.sh, NVMe-oF
# through nvmeof-loop.sh.  DEBUG_TESTS="tests/vm/rc.sh ..." runs any set.
DEBUG_SLOW := tests/vm/rc.sh tests/vm/nvmeof.sh tests/vm/interop.sh
DEBUG_TESTS ?= $(filter-out $(DEBUG_SLOW) %lib.sh tests/vm/demo.sh,$(wildcard tests/vm/*.sh))

debug-kernel: deps
	@tools/debug-kernel/build

check-debug: debug-kernel provider
	@rm -rf $(DEBUG_SRC) && mkdir -p $(DEBUG_SRC) $(DEBUG_KODIR)
	@cp -r Kbuild drivers include tests $(DEBUG_SRC)/
	$(MAKE) -C $(DEBUG_KDIR) M=$(DEBUG_SRC) $(if $(filter 1,$(WERROR)),SROCE_WERROR=y) modules
	@find $(DEBUG_SRC) -name '*.ko' -exec cp {} $(DEBUG_KODIR)/ \;
	@echo "check-debug: the debug lane runs: $(DEBUG_TESTS)"
	@SROCE_VM_TIMEOUT_SCALE=2 tests/run -M $(DEBUG_KODIR) -k $(DEBUG_CACHE)/bzImage \
		-m $(DEBUG_CACHE)/root/lib/modules/$(DEBUG_KREL) $(DEBUG_TESTS)

install: modules provider
	$(MAKE) $(KBUILD_ARGS) modules_install
	depmod -a $(KREL)
	install -D -m 0644 $(PROVIDER) $(DESTDIR)$(LIBDIR)/libibverbs/libsroce-rdmav34.so
	install -d $(DESTDIR)/etc/libibverbs.d
	echo "driver sroce" > $(DESTDIR)/etc/libibverbs.d/sroce.driver

clean:
	$(MAKE) $(KBUILD_ARGS) clean
	rm -rf $(BUILD)
