# loopstat — one plain Makefile for the runtime, the probes, the monitor,
# the tests, the examples and the benchmarks.
#
#   make            build everything into $(BUILD)
#   make test       install missing packages, run every suite, then again
#                   under AddressSanitizer + UndefinedBehaviorSanitizer
#   make demo       install missing packages, start demo workers, show them
#   make bench      run every benchmark (B=name for one)
#   make install    PREFIX=/usr/local DESTDIR=
#
# Sources are found by wildcard, so adding a file never means editing this.

VERSION     := 0.1.0
ABI_SONAME  := 0
PREFIX      ?= /usr/local
DESTDIR     ?=
DOCDIR      ?= $(PREFIX)/share/doc/loopstat
BUILD       ?= build
CC          ?= cc
SAN         ?=
EXTRA_CFLAGS ?=
V           ?=
Q           := $(if $(V),,@)

# `make` alone builds everything: without this the first rule in the file
# (protoc-c's generated code, below) would be the goal.
.DEFAULT_GOAL := all

PKG_LIBS    := liburing libproc2 ncursesw libseccomp
WARN        := -Wall -Wextra -Werror -Wshadow -Wno-missing-field-initializers
# -O1 under the sanitizers, as ASan advises: its compile took a quarter of
# the CPU of -O2's (10 s against 40 s for loopstat), and make test waits for
# it; the suites it runs mostly wait on their children.
CFLAGS      ?= $(if $(filter 1,$(SAN)),-O1 -g,-O2 -g)
ALL_CFLAGS  := -std=gnu11 $(WARN) -D_GNU_SOURCE -fvisibility=hidden -fPIC \
               -DLOOPSTAT_VERSION='"$(VERSION)"' $(CFLAGS) $(EXTRA_CFLAGS)

# Each module sees its own sources and the public headers of the layers
# below it, nothing else: a wrong-way include fails to compile. Tests see
# everything (they test internals); examples only the runtime's API.
# probes/src has a folder per source (shm/, proc/, unwind/...), each with
# its internal headers: a probe finds its own folder's by the quoted
# include's own-directory rule, another folder's not at all. Tests name
# one by its folder ("shm/shm_int.h").
INC_RUNTIME := -Iruntime/include -Iruntime/src
INC_PROBES  := -Iruntime/include -Iprobes/include
INC_MONITOR := -Iruntime/include -Iprobes/include -Imonitor
INC_ALL     := -Iruntime/include -Iruntime/src -Iprobes/include -Iprobes/src -Imonitor -Itests
$(BUILD)/obj/runtime/%.o:  MOD_INC := $(INC_RUNTIME)
$(BUILD)/obj/probes/%.o:   MOD_INC := $(INC_PROBES)
$(BUILD)/obj/monitor/%.o:  MOD_INC := $(INC_MONITOR)
$(BUILD)/obj/examples/%.o: MOD_INC := -Iruntime/include
$(BUILD)/obj/bench/%.o:    MOD_INC := $(INC_ALL)
$(BUILD)/obj/tests/%.o:    MOD_INC := $(INC_ALL)
# The suites' own code unoptimized: it only drives children and asserts,
# and at -O2 (-O1 under the sanitizers) it took 112 s of CPU to compile
# against 64 (120 against 83), CPU that make test's first suites share with
# that compile. What they test is built as shipped. The two files the
# benches link are compiled as the benches are.
$(BUILD)/obj/tests/%.o:    MOD_OPT := -O0
$(BUILD)/obj/tests/support/loop_child.o $(BUILD)/obj/tests/support/flood.o: MOD_OPT :=
ifeq ($(SAN),1)
ALL_CFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
SAN_LDFLAGS := -fsanitize=address,undefined
endif
DEPFLAGS     = -MMD -MP

RT_LIBS     := -luring -lev -lpthread
PROBE_LIBS  := -lproc2 -lseccomp -ldw -lelf -liberty
TUI_LIBS    := -lncursesw -ltinfo
HTTP_LIBS   := -lmicrohttpd
TEST_LIBS   := -lcriterion -ljson-c

RT_SRC      := $(wildcard runtime/src/*.c)
RT_ASM      := $(wildcard runtime/src/*.S)
PROBE_SRC   := $(wildcard probes/src/*/*.c)
MON_SRC     := $(wildcard monitor/*.c monitor/*/*.c)
TEST_SRC    := $(wildcard tests/test_*.c)
TSUP_SRC    := $(wildcard tests/support/*.c)
EX_SRC      := $(wildcard examples/*.c)
BENCH_SRC   := $(wildcard bench/*.c)

RT_OBJ      := $(RT_SRC:%.c=$(BUILD)/obj/%.o) $(RT_ASM:%.S=$(BUILD)/obj/%.o)
PROBE_OBJ   := $(PROBE_SRC:%.c=$(BUILD)/obj/%.o)
MON_OBJ     := $(MON_SRC:%.c=$(BUILD)/obj/%.o)
TSUP_OBJ    := $(TSUP_SRC:%.c=$(BUILD)/obj/%.o)

# profile --format pprof: protoc-c generates the C code of the shipped
# profile.proto into the build directory; it links with protobuf-c and zlib.
PPROF_PROTO := monitor/profile/pprof/profile.proto
PPROF_GEN   := $(BUILD)/gen/profile/pprof/profile.pb-c
PPROF_OBJ   := $(BUILD)/obj/gen/profile/pprof/profile.pb-c.o
PPROF_LIBS  := -lprotobuf-c -lz
MON_OBJ     += $(PPROF_OBJ)
$(PPROF_GEN).c $(PPROF_GEN).h &: $(PPROF_PROTO)
	@mkdir -p $(BUILD)/gen
	@$(if $(Q),echo "  PROTOC  $(PPROF_GEN).c")
	$(Q)protoc-c --proto_path=monitor --c_out=$(BUILD)/gen $(PPROF_PROTO)
$(PPROF_OBJ): $(PPROF_GEN).c $(PPROF_GEN).h
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -I$(BUILD)/gen $(DEPFLAGS) -c $< -o $@
$(BUILD)/obj/monitor/profile/profile_out_pprof.o: $(PPROF_GEN).h
$(BUILD)/obj/monitor/profile/profile_out_pprof.o: MOD_INC := $(INC_MONITOR) -I$(BUILD)/gen

# The bpf source (probes/bpf/*.bpf.c, probes/src/bpf/): built where
# clang, bpftool, libbpf-dev and the running kernel's BTF are present, on
# x86-64 (the programs name its syscall numbers and registers). vmlinux.h
# is generated from that BTF at build time, each program compiled with
# clang -target bpf and embedded in a skeleton (bpftool gen skeleton), so
# nothing but libbpf is needed at run time. Elsewhere probe_bpf_* report
# "unavailable: built without bpf (...)" and everything else builds as before.
BPF_CLANG   ?= clang
BPFTOOL     ?= $(firstword $(shell command -v bpftool 2>/dev/null) $(wildcard /usr/sbin/bpftool /sbin/bpftool))
BTF_VMLINUX ?= /sys/kernel/btf/vmlinux
BPF_MISSING := $(strip $(if $(shell command -v $(BPF_CLANG) 2>/dev/null),,clang) $(if $(BPFTOOL),,bpftool) \
               $(if $(wildcard /usr/include/bpf/libbpf.h),,libbpf-dev) $(if $(wildcard $(BTF_VMLINUX)),,$(BTF_VMLINUX)) \
               $(if $(filter x86_64,$(shell uname -m)),,x86-64))
BPF_GEN     := $(BUILD)/gen/bpf
BPF_SRC     := $(wildcard probes/bpf/*.bpf.c)
BPF_SKELS   := $(BPF_SRC:probes/bpf/%.bpf.c=$(BPF_GEN)/%.skel.h)
BPF_USER_OBJ := $(filter $(BUILD)/obj/probes/src/bpf/%,$(PROBE_OBJ))
ifeq ($(BPF_MISSING),)
PROBE_LIBS  += -lbpf
$(BPF_USER_OBJ): MOD_INC := $(INC_PROBES) -Iprobes/bpf -I$(BPF_GEN) -DLOOPSTAT_BPF=1
$(BPF_USER_OBJ): $(BPF_SKELS)
else
$(BPF_USER_OBJ): MOD_INC := $(INC_PROBES) -Iprobes/bpf -DLOOPSTAT_BPF_MISSING='"$(BPF_MISSING)"'
endif
$(BPF_GEN)/vmlinux.h:
	@mkdir -p $(@D)
	@$(if $(Q),echo "  BTF     $@")
	$(Q)$(BPFTOOL) btf dump file $(BTF_VMLINUX) format c > $@.tmp && mv $@.tmp $@
$(BPF_GEN)/%.bpf.o: probes/bpf/%.bpf.c probes/bpf/loopstat_bpf.h $(BPF_GEN)/vmlinux.h
	@$(if $(Q),echo "  BPF     $@")
	$(Q)$(BPF_CLANG) -O2 -g -target bpf -D__TARGET_ARCH_x86 -Wall -Werror -I$(BPF_GEN) -Iprobes/bpf -c $< -o $@
$(BPF_GEN)/%.skel.h: $(BPF_GEN)/%.bpf.o
	@$(if $(Q),echo "  SKEL    $@")
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst .,_,$*)_bpf > $@.tmp && mv $@.tmp $@

LIBFL_A     := $(BUILD)/libfiberloop.a
LIBFL_SO    := $(BUILD)/libfiberloop.so.$(ABI_SONAME)
LIBPROBES_A := $(BUILD)/libprobes.a
LOOPSTAT    := $(BUILD)/loopstat
TESTS       := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
EXAMPLES    := $(EX_SRC:examples/%.c=$(BUILD)/examples/%)
BENCHES     := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
PCFILE      := $(BUILD)/fiberloop.pc

# keep objects that only pattern rules name, so re-runs do not rebuild them
.SECONDARY:

.PHONY: all deps test-deps test-pkgs test solo-tests check check-tests check-asan check-layers demo bench install clean tests examples benches

# $(LOOPSTAT) only once monitor/ has sources: a branch without them still builds.
all: $(LIBFL_A) $(LIBFL_SO) $(PCFILE) $(LIBPROBES_A) $(if $(MON_SRC),$(LOOPSTAT)) examples

# deps: what building needs (make demo uses nothing more, so it needs no
# network but Debian's); test-deps: that and what the suites run against,
# the pinned speedscope schema from npm among them.
deps:
	@sh scripts/deps.sh build

test-deps: test-pkgs
	@sh scripts/speedscope-schema.sh $(BUILD)/npm >/dev/null

test-pkgs:
	@sh scripts/deps.sh test

tests: $(TESTS)
examples: $(EXAMPLES)
benches: $(BENCHES)

# `make test`: deps first (not as a prerequisite of the objects, so that
# `make -j` never compiles before packages exist), then both builds.
# Both builds always run; the last line totals them. The speedscope schema
# installs from npm beside the build (12 s of network; a suite that needs
# it waits on the script's lock).
# The suites that run alone go first, once they are built, while the
# other suites, the Go/tokio/Netty programs and the sanitizer build
# compile idly beside them, and then the sanitizer build's UNIT_TESTS run
# idly too (in-process only: an idle compile's load). Then the plain
# build's parallel suites (they mostly wait, five at a time: 127 s of CPU
# in 314 s of their summed wall time four at a time, ci34), the
# sanitizer build's, four at a time (run beside the plain ones, eight
# suites at once, three of theirs failed on time bounds; run idly beside
# the sanitizer's solo suites, their own children waited for a CPU, and
# an idle Go server read limit cpu), the timed suites, alone, and last
# the sanitizer build's solo suites, two at a time (alone, they only keep
# clear of the parallel suites' children). Each phase prints when it ended
# ("[phase] NAME ended at T s", from the start); "(beside them)" marks
# the idle work's own ends.
test: test-pkgs
	@rc=0; t0=$$(date +%s); phase() { echo "[phase] $$1 ended at $$(($$(date +%s) - t0)) s"; }; \
	prio=$$(sh scripts/idle-prio.sh); echo "[phase] the background compile runs under: $$prio"; \
	mkdir -p $(BUILD); sh scripts/speedscope-schema.sh $(BUILD)/npm >$(BUILD)/.npm.log 2>&1 & \
	sh scripts/check-layers.sh || rc=1; sh scripts/check-subjects.sh || rc=1; mkdir -p $(BUILD)/asan; \
	rm -f $(BUILD)/.test-tally* $(BUILD)/asan/.test-tally*; \
	$(MAKE) --no-print-directory -j$$(nproc) solo-tests CHECK_SET=untimed || rc=1; \
	{ $$prio $(MAKE) --no-print-directory -j$$(nproc) tests >$(BUILD)/.tests.log 2>&1 && phase "(beside them) suites' build"; } & bgt=$$!; \
	rm -f $(BUILD)/.unidled; idle() { test -e $(BUILD)/.unidled || echo $$prio; }; \
	( $$(idle) $(MAKE) --no-print-directory -j$$(nproc) programs >$(BUILD)/.programs.log 2>&1 || { cat $(BUILD)/.programs.log; exit 1; }; \
	  $$(idle) $(MAKE) --no-print-directory -j$$(nproc) all check-tests BUILD=$(BUILD)/asan SAN=1 CHECK_SET=untimed \
	    >$(BUILD)/asan/.build.log 2>&1 || { cat $(BUILD)/asan/.build.log; exit 1; }; phase "(beside them) sanitizer build"; \
	  $$(idle) $(MAKE) --no-print-directory check BUILD=$(BUILD)/asan SAN=1 CHECK_SET=untimed ONLY=unit PAR=2 \
	    >$(BUILD)/asan/.unit.log 2>&1; r=$$?; phase "(beside them) sanitizer unit suites"; exit $$r ) & bg=$$!; \
	$(MAKE) --no-print-directory -j$$(nproc) check CHECK_SET=untimed ONLY=solo || rc=1; phase "solo suites"; \
	touch $(BUILD)/.unidled; sh scripts/unidle.sh $$bgt; wait $$bgt || { rc=1; cat $(BUILD)/.tests.log; }; \
	sh scripts/unidle.sh $$bg; wait $$bg || rc=1; cat $(BUILD)/asan/.unit.log 2>/dev/null; \
	phase "programs, sanitizer build and unit suites"; \
	$(MAKE) --no-print-directory check CHECK_SET=untimed ONLY=par+unit PAR=5 || rc=1; phase "parallel suites"; \
	$(MAKE) --no-print-directory check BUILD=$(BUILD)/asan SAN=1 CHECK_SET=untimed ONLY=par PAR=4 || rc=1; \
	phase "sanitizer parallel suites"; \
	$(MAKE) --no-print-directory -j$$(nproc) check CHECK_SET=timed || rc=1; phase timed; \
	$(MAKE) --no-print-directory check BUILD=$(BUILD)/asan SAN=1 CHECK_SET=untimed ONLY=solo SOLO_PAR=2 || rc=1; \
	phase "sanitizer solo suites"; \
	cat $(BUILD)/.test-tally* $(BUILD)/asan/.test-tally* 2>/dev/null | \
	  awk '{ p += $$1; f += $$2 } END { printf "all builds: %d passed, %d failed\n", p, f + 0 }'; \
	exit $$rc

# The background compile runs under scripts/idle-prio.sh's choice:
# SCHED_IDLE where chrt exists (a nice-19 compile kept the suites' workers
# waiting 10-18 % of the time for a CPU after each wake-up, which the
# sampled shares rightly count as running; an idle-class one yields at
# once), but nice 10 beside niced CPU work at the start, where an
# idle-class compile got no CPU at all: beside two nice-19 CPU hogs, the
# sanitizer build ended at 770 s against 250 on a quiet machine. Once the
# first build's suites are over, scripts/unidle.sh puts what is left of
# that compile back in the normal class (the timed suites wait for it),
# and the steps of it not yet started start there too ($(BUILD)/.unidled).

# TIMED_TESTS judge timing or shares of real loads: they run alone, in the
# plain build only, once the sanitizer compile is over (test_diff_profile:
# beside that compile test_diff read two duty cycles 10 points apart as
# 8.3). test_backend_sysctl sets a host-wide sysctl that refuses every
# io_uring: only here does nothing run beside it (in the parallel phase
# another suite's fl_run failed with EPERM). test_profile_cmd judges
# fibers' shares and their longest runs to 3 points and 75 ms: beside the
# idle compile it missed by 3.4 points (ci49) and read a 30-ms run as 85
# (ci55), never in ten runs alone.
TIMED_TESTS = $(filter %/test_accuracy %/test_check_ci %/test_limit_quota %/test_shm_flood %/test_pools %/test_schedulers %/test_bpf \
                %/test_diff %/test_diff_profile %/test_profile_agree %/test_backend_sysctl %/test_profile_cmd,$(TESTS))
# Under the sanitizers (make test's second build) run the suites whose code
# nothing else runs there. Of those that run alone (SOLO_TESTS, below:
# shares or timing, which the sanitizers only distort), SAN_SOLO_TESTS: the
# sampler's life cycle of workers, stall capture, the loop's poll told from
# others, the bpf source, the fd and memory budgets, a loop saturated from
# its start, the sweep's fair cap, a loop on a reused pid, the flight
# recorder (flight: its ring is written from two threads). The others'
# code runs there through suites that run beside others: the sampler's and
# list's in every list of test_list_json, test_list_golden,
# test_model_build, test_discover and test_roles
# (accuracy, list_workers, sampler_unchanged, sample_batch,
# probe_schedstat, precision, sampler_shortcut, loop_poll_cli, pools,
# pool_stable; lag and lag_resolution with test_lag_rule); check's in
# test_check_report, test_check_verdict, test_check_fleet,
# test_check_exit and test_exit_table (check_cmd, check_usage, check_ci,
# check_verdicts);
# profile's in test_profile_formats, test_profile_hostile,
# test_profile_unwind and test_profile_merge (profile_cmd, profile_oncpu,
# profile_agree; stacks_names with test_probe_perfmap); the runtime's in
# test_fiber, test_backend and test_ops_* (sched, interleave, ops_time,
# stats, shm_quiet, stall); serve's in test_serve (serve_flood); export's
# in test_export_deliver, test_export_options, test_export_seconds and
# test_export_spool (export_cmd); the Go, tokio and Netty rows in
# test_sched_rows (probe_rt, schedulers); diff's in test_diff_hostile
# (diff, diff_profile); limits in test_probe_cgroup and test_limit_rules
# (limit_quota); many segments in test_shm_owners (shm_flood); the bpf
# source's events in test_bpf_source (bpf_events). Not yet run there: the
# bpf source's stall events and blocked time (bpf_stall, bpf_blocked):
# under ASan the unwinder's 5-ms symbol budget per capture runs out before
# a stall's functions are named; and /metrics' series budget
# (serve_budget), whose memory, once a flood ends, ASan's own allocator
# keeps (87 MB of 135 against a 23-MB baseline); stalls by stack
# (stall_groups), whose code runs there through test_stall_capture and
# test_recording_limits: its loops built with ASan unwind through the
# interceptors' frames as other stacks. Of the
# parallel suites, PLAIN_ONLY_TESTS run a real Prometheus, carbon under
# cron or the dashboard under tmux, whose code runs there through
# test_serve, the export suites above and test_tui_draw: they only wait
# longer under the sanitizers; and serve's flight recorder, whose code runs
# there through test_flight and test_serve, and whose stall's stack would
# be named through ASan's interceptors (as stall_groups, above).
SAN_SOLO_TESTS = test_sampler test_stall_capture test_probe_loop test_bpf_source test_fd_budget test_unwind_budget \
                 test_saturated test_worker_fair test_pid_reuse test_flight
PLAIN_ONLY_TESTS = $(filter %/test_serve_prometheus %/test_export_carbon %/test_export_cron %/test_tui_tmux \
                     %/test_serve_flight,$(TESTS)) \
                   $(addprefix $(BUILD)/tests/,$(filter-out $(SAN_SOLO_TESTS),$(SOLO_TESTS)))
# The long truth run of real Go, tokio and Netty servers at three loads
# (2.5 min, and load-sensitive) runs in `make check`, not in make test,
# whose short versions are test_probe_rt and test_sched_rows.
TRUTH_TESTS = $(filter %/test_schedulers,$(TESTS))
# Suites of the Go, tokio and Netty programs (tests/programs): make test
# runs them with the timed ones, once the programs are built beside the
# first build's suites.
RT_TESTS = $(filter %/test_probe_rt %/test_sched_rows,$(TESTS))
CHECK_TESTS = $(if $(filter untimed,$(CHECK_SET)),$(filter-out $(TIMED_TESTS) $(TRUTH_TESTS) $(if $(SAN),$(PLAIN_ONLY_TESTS),$(RT_TESTS)),$(TESTS)),$(if $(filter timed,$(CHECK_SET)),$(filter-out $(TRUTH_TESTS),$(TIMED_TESTS) $(RT_TESTS)),$(TESTS)))

# Suites that measure shares of real workers' time or timing itself run
# alone; the rest PAR at a time (scripts/run-tests.sh): they mostly wait on
# the children they sample and assert nothing about speed.
SOLO_TESTS = test_accuracy test_shm_flood test_precision test_list_workers test_sampler test_sampler_shortcut test_sampler_unchanged \
             test_check_verdicts test_check_cmd test_check_usage test_loop_poll_cli test_probe_loop test_stall \
             test_profile_cmd test_ops_time test_sched test_sample_batch test_shm_quiet test_probe_schedstat \
             test_interleave test_stats test_check_ci test_limit_quota test_pools test_pool_stable test_lag test_stall_capture \
             test_profile_oncpu test_schedulers test_probe_rt test_profile_agree test_stacks_names test_bpf test_bpf_source \
             test_unwind_budget test_serve_flood test_export_cmd test_fd_budget test_diff test_diff_profile \
             test_lag_resolution test_saturated test_bpf_stall test_bpf_blocked test_bpf_events test_bpf_cost \
             test_worker_fair test_serve_budget test_serve_prometheus test_pid_reuse test_flight test_stall_groups \
             test_backend_sysctl

# Suites that run in their own process alone: no child, no thread of
# theirs, nothing timed. make test runs the sanitizer build's beside the
# first build's solo suites (an idle compile's load); the rest of that
# build's parallel suites start children and threads, which beside the
# solo suites read a 221-ms stall for a 200-ms burn and kept a flood's
# memory past its bound (1 run in 4 each), so they wait for those to end.
UNIT_TESTS = test_docs_abi test_escape test_export_docs test_export_name test_export_seconds test_json test_lag_rule \
             test_limit_rules test_list_golden test_metric_docs test_model test_model_build test_ops_huge test_ops_net \
             test_probe_cgroup test_probe_net test_probe_service test_profile_split test_profile_tree test_replay \
             test_runqueue test_textsafe test_tui_docs test_uring_poll test_check_expr test_check_fleet \
             test_check_series test_check_verdict test_estimate test_export_spool

# Four at a time (make test's sanitizer build too), PAR=N
# to change it: their suites mostly wait (plain: 53 s
# against 60 for three and 73 for two; the sanitizers' 86 such suites took
# 268 s of CPU in 1,035 s of their summed wall time, 262 s of wall four at
# a time against 392 two at a time, on a machine shared with other work).
# The suites CHECK_SET runs (all by default, and then with
# LOOPSTAT_TRUTH=full: test_accuracy's whole matrix, not make test's
# diagonal): the sanitizer build of `make test` compiles none of the timed
# or plain-only ones it never runs.
check-tests: $(CHECK_TESTS)
PAR ?= 4
SOLO_PAR ?= 1
# ONLY=solo builds only the suites it runs: make test compiles the others
# beside them.
SOLO_BINS = $(filter $(addprefix $(BUILD)/tests/,$(SOLO_TESTS)),$(CHECK_TESTS))
solo-tests: all $(SOLO_BINS)
check: all $(if $(SAN),check-tests,$(if $(filter solo,$(ONLY)),$(SOLO_BINS),tests))
	@$(if $(CHECK_SET),,LOOPSTAT_TRUTH=full) TALLY=$(CHECK_SET)$(if $(ONLY),-$(ONLY)) ONLY=$(ONLY) SOLO="$(SOLO_TESTS)" UNIT="$(UNIT_TESTS)" \
	  PAR=$(PAR) SOLO_PAR=$(SOLO_PAR) sh scripts/run-tests.sh $(BUILD) $(CHECK_TESTS)

# The layers' include rules (docs/design.md): a wrong-way include fails;
# and commit subjects of at most 72 characters.
check-layers:
	@sh scripts/check-layers.sh
	@sh scripts/check-subjects.sh

demo: deps
	@$(MAKE) --no-print-directory -j$$(nproc) all
	@sh scripts/demo.sh $(BUILD)

bench: test-deps
	@$(MAKE) --no-print-directory -j$$(nproc) all benches
	@sh scripts/run-bench.sh $(BUILD) $(B)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(MOD_OPT) $(MOD_INC) $(DEPFLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.S
	@mkdir -p $(@D)
	@$(if $(Q),echo "  AS      $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(MOD_INC) $(DEPFLAGS) -c $< -o $@

$(LIBFL_A): $(RT_OBJ)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(LIBFL_SO): $(RT_OBJ) runtime/fiberloop.map
	@mkdir -p $(@D)
	$(Q)$(CC) -shared -Wl,-soname,libfiberloop.so.$(ABI_SONAME) \
	      -Wl,--version-script=runtime/fiberloop.map $(SAN_LDFLAGS) -o $@ $(RT_OBJ) $(RT_LIBS)
	$(Q)ln -sf libfiberloop.so.$(ABI_SONAME) $(BUILD)/libfiberloop.so

$(PCFILE): runtime/fiberloop.pc.in Makefile
	@mkdir -p $(@D)
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

$(LIBPROBES_A): $(PROBE_OBJ)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

# loopstat calls no fl_ function: it links the probes and what they need.
$(LOOPSTAT): $(MON_OBJ) $(LIBPROBES_A)
	$(Q)$(CC) $(SAN_LDFLAGS) -o $@ $(MON_OBJ) $(LIBPROBES_A) $(PROBE_LIBS) -luring $(TUI_LIBS) $(HTTP_LIBS) -ljson-c $(PPROF_LIBS) -lpthread -lm

# Tests link the monitor's objects too (all but main.o), so views and the
# model are testable in-process: from archives, each test only the objects
# it uses (linked whole, every test carried all of them: 58 s of make
# test's plain build went to the tests, most of it linking).
MON_LIB_OBJ := $(filter-out $(BUILD)/obj/monitor/main.o,$(MON_OBJ))
TEST_LIB_A  := $(BUILD)/libtestsupport.a $(BUILD)/libmonitor.a
# LeakSanitizer's suppressions hook: called by nothing, so linked as an object
TEST_LSAN   := $(BUILD)/obj/tests/support/lsan.o

$(BUILD)/libtestsupport.a: $(filter-out $(TEST_LSAN),$(TSUP_OBJ))
$(BUILD)/libmonitor.a: $(MON_LIB_OBJ)
$(TEST_LIB_A):
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(TEST_LSAN) $(TEST_LIB_A) $(LIBPROBES_A) $(LIBFL_A)
	@mkdir -p $(@D)
	$(Q)$(CC) $(SAN_LDFLAGS) -o $@ $< $(TEST_LSAN) -Wl,--start-group $(TEST_LIB_A) $(LIBPROBES_A) $(LIBFL_A) -Wl,--end-group \
	      $(TEST_LIBS) $(PROBE_LIBS) $(TUI_LIBS) $(HTTP_LIBS) $(PPROF_LIBS) $(RT_LIBS) -lm

$(BUILD)/examples/%: $(BUILD)/obj/examples/%.o $(LIBFL_A)
	@mkdir -p $(@D)
	$(Q)$(CC) $(SAN_LDFLAGS) -o $@ $< $(LIBFL_A) $(RT_LIBS) -lm

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(LIBPROBES_A) $(LIBFL_A)
	@mkdir -p $(@D)
	$(Q)$(CC) $(SAN_LDFLAGS) -o $@ $< $(LIBPROBES_A) $(LIBFL_A) $(PROBE_LIBS) $(RT_LIBS) -lm

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include
	install -m 0755 $(LOOPSTAT) $(DESTDIR)$(PREFIX)/bin/loopstat
	install -m 0644 $(LIBFL_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 0755 $(LIBFL_SO) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libfiberloop.so.$(ABI_SONAME) $(DESTDIR)$(PREFIX)/lib/libfiberloop.so
	install -m 0644 $(PCFILE) $(DESTDIR)$(PREFIX)/lib/pkgconfig/
	install -m 0644 runtime/include/*.h $(DESTDIR)$(PREFIX)/include/
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(DOCDIR)
	sed 's|docs/\([a-z-]*\.md\)|$(DOCDIR)/\1|g' docs/loopstat.1 > $(DESTDIR)$(PREFIX)/share/man/man1/loopstat.1
	chmod 0644 $(DESTDIR)$(PREFIX)/share/man/man1/loopstat.1
	install -m 0644 docs/*.md $(DESTDIR)$(DOCDIR)/
	$(if $(DESTDIR),,[ "$$(id -u)" -ne 0 ] || ldconfig)

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# bench/idle_truth samples with the model-like sampler of
# tests/support/loop_child.c (shared with tests/test_probe_loop.c).
$(BUILD)/bench/idle_truth: $(BUILD)/obj/bench/idle_truth.o $(BUILD)/obj/tests/support/loop_child.o $(LIBPROBES_A) $(LIBFL_A)
	@mkdir -p $(@D)
	$(Q)$(CC) $(SAN_LDFLAGS) -o $@ $(filter %.o,$^) $(LIBPROBES_A) $(LIBFL_A) $(PROBE_LIBS) $(RT_LIBS) -lm

# bench/serve_flood floods serve with tests/support/flood.c (shared with tests/test_serve_flood.c).
$(BUILD)/bench/serve_flood: $(BUILD)/obj/bench/serve_flood.o $(BUILD)/obj/tests/support/flood.o $(LIBPROBES_A) $(LIBFL_A)
	@mkdir -p $(@D)
	$(Q)$(CC) $(SAN_LDFLAGS) -o $@ $(filter %.o,$^) $(LIBPROBES_A) $(LIBFL_A) $(PROBE_LIBS) $(RT_LIBS) -lm

# bench/check_coverage measures the monitor's own estimator, from its archive
# (it once built the estimator's files into itself, and stopped linking when
# the model began to call the evaluator).
$(BUILD)/bench/check_coverage: $(BUILD)/obj/bench/check_coverage.o $(BUILD)/libmonitor.a $(LIBPROBES_A) $(LIBFL_A)
	@mkdir -p $(@D)
	$(Q)$(CC) $(SAN_LDFLAGS) -o $@ $< -Wl,--start-group $(BUILD)/libmonitor.a $(LIBPROBES_A) $(LIBFL_A) -Wl,--end-group \
	  $(PROBE_LIBS) $(TUI_LIBS) $(HTTP_LIBS) $(PPROF_LIBS) $(RT_LIBS) -ljson-c -lm

# bench/probe_fleet and bench/pool_cost time the monitor's own sampler too (their headline figures).
$(BUILD)/bench/pool_cost: $(BUILD)/obj/bench/pool_cost.o $(MON_LIB_OBJ) $(LIBPROBES_A) $(LIBFL_A)
	@mkdir -p $(@D)
	$(Q)$(CC) $(SAN_LDFLAGS) -o $@ $< $(MON_LIB_OBJ) $(LIBPROBES_A) $(LIBFL_A) $(PROBE_LIBS) $(TUI_LIBS) -ljson-c \
	      $(HTTP_LIBS) $(PPROF_LIBS) $(RT_LIBS) -lm

$(BUILD)/bench/probe_fleet: $(BUILD)/obj/bench/probe_fleet.o $(MON_LIB_OBJ) $(LIBPROBES_A) $(LIBFL_A)
	@mkdir -p $(@D)
	$(Q)$(CC) $(SAN_LDFLAGS) -o $@ $< $(MON_LIB_OBJ) $(LIBPROBES_A) $(LIBFL_A) $(PROBE_LIBS) $(TUI_LIBS) -ljson-c \
	      $(HTTP_LIBS) $(PPROF_LIBS) $(RT_LIBS) -lm

# ---- make fuzz: libFuzzer harnesses (fuzz/fuzz_*.c), not part of make test --
# Each harness links the probes' sources built with clang's fuzzer, ASan and
# UBSan, then runs FUZZ_SECONDS on its own corpus (kept under $(FUZZ_BUILD)),
# seeded from fuzz/seeds/<name>/. `make fuzz F=fuzz_shm` runs one. The
# harnesses' own stderr (the readers' messages, one per input) is closed:
# libFuzzer and the sanitizers report through a copy of it.
# Needs clang-14 and libclang-rt-14-dev (sudo apt-get install -y clang-14 libclang-rt-14-dev).
FUZZ_CC      ?= clang-14
FUZZ_SECONDS ?= 30
FUZZ_BUILD   := $(BUILD)/fuzz
FUZZ_SRC     := $(wildcard fuzz/fuzz_*.c)
FUZZ_BINS    := $(FUZZ_SRC:fuzz/%.c=$(FUZZ_BUILD)/%)
FUZZ_CFLAGS  := -std=gnu11 -g -O1 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-missing-field-initializers \
                -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
                -Iruntime/include -Iprobes/include -Iprobes/bpf -Ifuzz

.PHONY: fuzz fuzz-build
fuzz-build:
	@command -v $(FUZZ_CC) >/dev/null 2>&1 || { echo "make fuzz needs $(FUZZ_CC): sudo apt-get install -y clang-14 libclang-rt-14-dev" >&2; exit 1; }
	@$(MAKE) -s --no-print-directory $(FUZZ_BINS)

fuzz: fuzz-build
	@for f in $(if $(F),$(FUZZ_BUILD)/$(F),$(FUZZ_BINS)); do \
	  n=$$(basename $$f); mkdir -p $(FUZZ_BUILD)/corpus/$$n; \
	  echo "  FUZZ    $$n ($(FUZZ_SECONDS) s)"; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 -close_fd_mask=2 $(FUZZ_BUILD)/corpus/$$n fuzz/seeds/$$n \
	    > $(FUZZ_BUILD)/$$n.log 2>&1; rc=$$?; \
	  grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb|ERROR|SUMMARY' $(FUZZ_BUILD)/$$n.log; \
	  [ $$rc -eq 0 ] || { echo "$$n failed: see $(FUZZ_BUILD)/$$n.log" >&2; exit 1; }; \
	done

$(FUZZ_BUILD)/%: fuzz/%.c fuzz/fuzz.h $(PROBE_SRC) $(wildcard probes/include/*.h probes/src/*/*.h)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  FUZZCC  $@")
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(PROBE_SRC) $(PROBE_LIBS) -luring

# The recording reader's harness also takes the monitor's sources (all but
# main, which libFuzzer brings): report's and top --replay's readers.
FUZZ_MON_SRC := $(filter-out monitor/main.c,$(MON_SRC))
$(FUZZ_BUILD)/fuzz_recording: fuzz/fuzz_recording.c fuzz/fuzz.h $(PROBE_SRC) $(FUZZ_MON_SRC) $(PPROF_GEN).c \
		$(wildcard probes/include/*.h probes/src/*/*.h monitor/*.h monitor/*/*.h)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  FUZZCC  $@")
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -Imonitor -I$(BUILD)/gen -o $@ $< $(PROBE_SRC) $(FUZZ_MON_SRC) $(PPROF_GEN).c \
	  $(PROBE_LIBS) -luring $(TUI_LIBS) $(HTTP_LIBS) -ljson-c $(PPROF_LIBS) -lpthread -lm

# ---- tests/programs: real pooled runtimes the scheduler tests measure -------
# Built offline from Debian's packages, each only when its toolchain is
# installed (the suites skip, naming what is missing, otherwise): a Go server
# with and without symbols, a tokio server from /usr/share/cargo/registry
# (tests/programs/tokioserver/.cargo/config.toml; Debian's rustc, not a
# rustup one on PATH), a Netty server against /usr/share/java's jars.
PROG_DIR   := $(BUILD)/programs
GO_BIN     := $(shell command -v go 2>/dev/null)
CARGO_BIN  := $(shell test -x /usr/bin/cargo && test -x /usr/bin/rustc && test -d /usr/share/cargo/registry/tokio-1.24.2 && echo /usr/bin/cargo)
JAVAC_BIN  := $(shell test -f /usr/share/java/netty-transport.jar && command -v javac 2>/dev/null)
NETTY_CP   := $(subst $(eval) ,:,$(foreach j,common buffer transport codec handler resolver,/usr/share/java/netty-$(j).jar))
PROGRAMS   := $(if $(GO_BIN),$(PROG_DIR)/goserver $(PROG_DIR)/goserver-stripped) \
              $(if $(CARGO_BIN),$(PROG_DIR)/tokioserver) $(if $(JAVAC_BIN),$(PROG_DIR)/netty/NettyServer.class $(PROG_DIR)/netty/FjpLoad.class)
.PHONY: programs
programs: $(PROGRAMS)
# once, by the plain build: the sanitizer build's suites find them there
# (tests/support/rt_child.c), and tokio is not compiled twice. `make check`
# builds them; make test, beside its first suites (above).
check: $(if $(SAN)$(filter untimed,$(CHECK_SET)),,$(PROGRAMS))

$(PROG_DIR)/goserver: tests/programs/goserver/main.go tests/programs/goserver/go.mod
	@mkdir -p $(@D)
	$(Q)cd tests/programs/goserver && GOFLAGS=-mod=mod GOCACHE=$(abspath $(PROG_DIR))/gocache $(GO_BIN) build -o $(abspath $@) .
$(PROG_DIR)/goserver-stripped: tests/programs/goserver/main.go tests/programs/goserver/go.mod
	@mkdir -p $(@D)
	$(Q)cd tests/programs/goserver && GOFLAGS=-mod=mod GOCACHE=$(abspath $(PROG_DIR))/gocache $(GO_BIN) build -ldflags='-s -w' -o $(abspath $@) .
$(PROG_DIR)/tokioserver: tests/programs/tokioserver/src/main.rs tests/programs/tokioserver/Cargo.toml tests/programs/tokioserver/.cargo/config.toml
	@mkdir -p $(@D)
	$(Q)cd tests/programs/tokioserver && RUSTC=/usr/bin/rustc CARGO_HOME=$(abspath $(PROG_DIR))/cargo-home \
	  $(CARGO_BIN) build -q --release --target-dir $(abspath $(PROG_DIR))/cargo && cp $(abspath $(PROG_DIR))/cargo/release/tokioserver $(abspath $@)
$(PROG_DIR)/netty/%.class: tests/programs/nettyserver/%.java
	@mkdir -p $(@D)
	$(Q)$(JAVAC_BIN) -nowarn -d $(@D) -cp '$(NETTY_CP)' $<
