# collprof — top-level build (GNU Make).
#
# Each top-level folder is one stage of the data flow and has one rule here:
#   src/        the NCCL profiler plugin        -> lib/libcollprof.so
#   src/launcher the `collprof` launcher        -> bin/collprof
#   collate/    MPI-free merging and reporting  -> obj/libcollate.a, bin/collprof-collate
#   mpi_wrap/   MPI_Init/MPI_Finalize wrappers  -> lib/libcollprof-mpi.so
#   test/       replay tool, bench, unit tests, TAP scripts (*.t)
#
#   make            build everything into $(BUILD)
#   make check      every test through prove (SAN=address or SAN=thread for
#                   the sanitizer builds, kept apart in build/san-<kind>)
#   make demo       a 4-rank replay of the bundled capture, with reports
#   make bench      CPU cost per event; make gpu: the CUDA test application
#   make install PREFIX=/opt/collprof

SHELL := /bin/bash
PREFIX ?= /usr/local
SAN ?=
BUILD ?= build$(if $(SAN),/san-$(SAN))
B := $(abspath $(BUILD))

CC ?= gcc
ifeq ($(origin CC),default)
CC := gcc
endif
MPICC ?= mpicc
SANFLAGS_address := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
SANFLAGS_thread := -fsanitize=thread
SANFLAGS := $(SANFLAGS_$(SAN))
OPT ?= -O2
CFLAGS_ALL := -std=c11 -Wall -Wextra -Werror $(OPT) -g -fPIC -pthread -D_GNU_SOURCE \
              -Iinclude -Isrc -Icollate $(SANFLAGS) $(CFLAGS)
LDFLAGS_ALL := -pthread $(SANFLAGS) $(LDFLAGS)

# ---- sources ----
PLUGIN_SRC   := $(wildcard src/*.c)
LAUNCH_SRC   := $(wildcard src/launcher/*.c)
COLLATE_SRC  := $(wildcard collate/*.c)
COLLTOOL_SRC := $(wildcard collate/tools/*.c)
MPIWRAP_SRC  := $(wildcard mpi_wrap/*.c)
REPLAY_SRC   := $(wildcard test/replay/*.c)
BENCH_SRC    := $(wildcard test/bench/*.c)
NOOP_SRC     := $(wildcard test/noop/*.c)
FAKECUDA_SRC := $(wildcard test/fakecuda/*.c)
UNIT_SRC     := $(wildcard test/unit/test_*.c)
UNIT_HELP    := $(filter-out $(UNIT_SRC),$(wildcard test/unit/*.c))

obj = $(patsubst %.c,$(B)/obj/%.o,$(1))
PLUGIN_OBJ  := $(call obj,$(PLUGIN_SRC))
COLLATE_OBJ := $(call obj,$(COLLATE_SRC))
MPIWRAP_OBJ := $(call obj,$(MPIWRAP_SRC))
REPLAY_OBJ  := $(call obj,$(REPLAY_SRC))
BENCH_OBJ   := $(call obj,$(BENCH_SRC))
UNITHELP_OBJ:= $(call obj,$(UNIT_HELP))

LIB := $(B)/lib
BIN := $(B)/bin

TARGETS := $(LIB)/libcollprof.so $(LIB)/libnccl-profiler-collprof.so $(B)/obj/libcollprof_core.a
ifneq ($(NOOP_SRC),)
TARGETS += $(LIB)/libnccl-profiler-noop.so
endif
ifneq ($(FAKECUDA_SRC),)
TARGETS += $(LIB)/fakecuda/libcuda.so.1
endif
# the diagnostic wrapper plugin of test/gpu (plain C): test/timed_wrapper.t
TARGETS += $(LIB)/libnccl-profiler-timed.so
ifneq ($(COLLATE_SRC),)
TARGETS += $(B)/obj/libcollate.a $(patsubst collate/tools/%.c,$(BIN)/%,$(COLLTOOL_SRC))
endif
ifneq ($(MPIWRAP_SRC),)
TARGETS += $(LIB)/libcollprof-mpi.so
endif
ifneq ($(LAUNCH_SRC),)
TARGETS += $(BIN)/collprof
endif
ifneq ($(REPLAY_SRC),)
TARGETS += $(BIN)/collprof-replay
endif
ifneq ($(BENCH_SRC),)
TARGETS += $(BIN)/collprof-bench
endif
TARGETS += $(patsubst test/unit/%.c,$(B)/test/%,$(UNIT_SRC))

.PHONY: all check demo bench collbench gpu install deps clean
all: $(TARGETS)

# MPI code is compiled with mpicc; everything else with $(CC).
$(B)/obj/mpi_wrap/%.o $(B)/obj/test/replay/%.o: CC_FOR = $(MPICC)
CC_FOR ?= $(CC)
$(B)/obj/%.o: %.c $(wildcard include/*.h src/*.h collate/*.h mpi_wrap/*.h test/*/*.h)
	@mkdir -p $(dir $@)
	OMPI_CC=$(CC) $(CC_FOR) $(CFLAGS_ALL) -c $< -o $@

$(LIB)/libcollprof.so: $(PLUGIN_OBJ)
	@mkdir -p $(LIB)
	$(CC) -shared -Wl,-soname,libcollprof.so -Wl,-z,now -o $@ $^ $(LDFLAGS_ALL) -lxxhash -ldl

$(LIB)/libnccl-profiler-collprof.so: $(LIB)/libcollprof.so
	ln -sf libcollprof.so $@

$(B)/obj/libcollprof_core.a: $(PLUGIN_OBJ)
	rm -f $@ && ar rcs $@ $^

$(B)/obj/libcollate.a: $(COLLATE_OBJ)
	rm -f $@ && ar rcs $@ $^

$(LIB)/libnccl-profiler-noop.so: $(call obj,$(NOOP_SRC))
	@mkdir -p $(LIB)
	$(CC) -shared -o $@ $^ $(LDFLAGS_ALL)

# A stand-in CUDA driver for the launch timer's CPU tests (test/launch_timer.t).
$(LIB)/fakecuda/libcuda.so.1: $(call obj,$(FAKECUDA_SRC))
	@mkdir -p $(LIB)/fakecuda
	$(CC) -shared -Wl,-soname,libcuda.so.1 -o $@ $^ $(LDFLAGS_ALL)

$(LIB)/libcollprof-mpi.so: $(MPIWRAP_OBJ) $(B)/obj/libcollate.a $(LIB)/libcollprof.so
	OMPI_CC=$(CC) $(MPICC) -shared -Wl,-soname,libcollprof-mpi.so -o $@ $(MPIWRAP_OBJ) \
	  $(B)/obj/libcollate.a -L$(LIB) -Wl,-rpath,'$$ORIGIN' -lcollprof -ljansson -lxxhash -lm $(LDFLAGS_ALL)

$(BIN)/%: $(B)/obj/collate/tools/%.o $(B)/obj/libcollate.a
	@mkdir -p $(BIN)
	$(CC) -o $@ $< $(B)/obj/libcollate.a -ljansson -lxxhash -lm $(LDFLAGS_ALL)

$(BIN)/collprof: $(call obj,$(LAUNCH_SRC))
	@mkdir -p $(BIN)
	$(CC) -o $@ $^ $(LDFLAGS_ALL)

$(BIN)/collprof-replay: $(REPLAY_OBJ)
	@mkdir -p $(BIN)
	OMPI_CC=$(CC) $(MPICC) -o $@ $^ -ljansson -ldl $(LDFLAGS_ALL)

$(BIN)/collprof-bench: $(BENCH_OBJ)
	@mkdir -p $(BIN)
	$(CC) -o $@ $^ -ldl -lm $(LDFLAGS_ALL)

$(B)/test/%: $(B)/obj/test/unit/%.o $(UNITHELP_OBJ) $(B)/obj/libcollprof_core.a $(if $(COLLATE_SRC),$(B)/obj/libcollate.a)
	@mkdir -p $(B)/test
	$(CC) -o $@ $< $(UNITHELP_OBJ) $(B)/obj/libcollprof_core.a $(if $(COLLATE_SRC),$(B)/obj/libcollate.a -ljansson) -lxxhash -ldl -lm $(LDFLAGS_ALL)

# Collation benchmark (figures, not a test; mpi_wrap/bench/collbench.c): make collbench
collbench: $(B)/obj/mpi_wrap/tree_collate.o $(B)/obj/libcollate.a
	@mkdir -p $(BIN)
	OMPI_CC=$(CC) $(MPICC) $(CFLAGS_ALL) -Impi_wrap -o $(BIN)/collprof-collbench mpi_wrap/bench/collbench.c $^ -ljansson -lxxhash -lm $(LDFLAGS_ALL)

-include test/gpu/gpu.mk

# ---- the two README commands ----
deps:
	@bash share/install-deps.sh

# A failing check's lines and their first diagnostics are gathered by
# test/tap.sh into $(B)/check-failures.log and repeated at the end, where
# a CI log's tail shows them (prove prints only the failing numbers).
check: deps
	@$(MAKE) --no-print-directory all
	@rm -f $(B)/check-failures.log
	COLLPROF_BUILD=$(B) SAN=$(SAN) COLLPROF_FAIL_LOG=$(abspath $(B))/check-failures.log prove $(PROVE_FLAGS) test/*.t || \
	  { echo "== failed checks ($(B)/check-failures.log)"; head -n 80 $(B)/check-failures.log 2>/dev/null; exit 1; }

demo: deps
	@$(MAKE) --no-print-directory all
	@COLLPROF_BUILD=$(B) bash share/demo.sh

bench: all collbench
	@COLLPROF_BUILD=$(B) $(BIN)/collprof-bench
	@COLLPROF_BUILD=$(B) bash mpi_wrap/bench/collbench.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include \
	  $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man7
	install -m 755 $(LIB)/libcollprof.so $(DESTDIR)$(PREFIX)/lib/
	ln -sf libcollprof.so $(DESTDIR)$(PREFIX)/lib/libnccl-profiler-collprof.so
	if [ -e $(LIB)/libcollprof-mpi.so ]; then install -m 755 $(LIB)/libcollprof-mpi.so $(DESTDIR)$(PREFIX)/lib/; fi
	for f in $(BIN)/*; do install -m 755 $$f $(DESTDIR)$(PREFIX)/bin/; done
	install -m 644 include/collprof.h $(DESTDIR)$(PREFIX)/include/
	for f in man/*.1; do [ -e $$f ] && install -m 644 $$f $(DESTDIR)$(PREFIX)/share/man/man1/; done; true
	for f in man/*.7; do [ -e $$f ] && install -m 644 $$f $(DESTDIR)$(PREFIX)/share/man/man7/; done; true
	install -d $(DESTDIR)$(PREFIX)/share/doc/collprof
	install -m 644 README.md share/doc/*.md $(DESTDIR)$(PREFIX)/share/doc/collprof/

clean:
	rm -rf build
