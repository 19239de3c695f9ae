# gpu.mk — `make gpu`: the CUDA test application build/bin/collprof-gpu-app
# (test/gpu/*.cu), included by the top Makefile.  Built only when nvcc and
# nccl.h are found (CUDA_HOME, default /usr/local/cuda; NCCL_HOME, default
# CUDA_HOME); otherwise `make gpu` says why and succeeds.  Hopper: sm_90.
CUDA_HOME ?= /usr/local/cuda
NCCL_HOME ?= $(CUDA_HOME)
NVCC ?= $(CUDA_HOME)/bin/nvcc
GPU_SRC := $(wildcard test/gpu/*.cu)
GPU_APP := $(BIN)/collprof-gpu-app
GPU_OK := $(and $(wildcard $(NVCC)),$(wildcard $(NCCL_HOME)/include/nccl.h))
GPU_MPI_CFLAGS := $(shell $(MPICC) --showme:compile 2>/dev/null)
GPU_MPI_LIBS := $(shell $(MPICC) --showme:link 2>/dev/null)

ifneq ($(GPU_OK),)
gpu: $(GPU_APP)
$(GPU_APP): $(GPU_SRC) test/gpu/gpu_app.h
	@mkdir -p $(BIN)
	$(NVCC) -O2 -std=c++17 -gencode=arch=compute_90,code=sm_90 -Xcompiler -Wall,-Werror \
	  -I$(NCCL_HOME)/include $(GPU_MPI_CFLAGS) -o $@ $(GPU_SRC) \
	  -L$(NCCL_HOME)/lib64 -L$(NCCL_HOME)/lib -lnccl -lcudart $(GPU_MPI_LIBS) -lpthread
else
gpu:
	@echo "make gpu: no $(NVCC) or no $(NCCL_HOME)/include/nccl.h: collprof-gpu-app not built"
endif

# The mask-flipping diagnostic plugin (plain C, no CUDA needed to build it).
gpu: $(LIB)/libnccl-profiler-flip.so
$(LIB)/libnccl-profiler-flip.so: test/gpu/flip_plugin.c include/nccl_profiler_abi.h
	@mkdir -p $(LIB)
	$(CC) $(CFLAGS_ALL) -shared -o $@ $< $(LDFLAGS_ALL)

# The timing wrapper plugin (timed_plugin.c: what each callback of another
# plugin costs on NCCL's own threads; plain C, so `make all` builds it too,
# for test/timed_wrapper.t).
gpu: $(LIB)/libnccl-profiler-timed.so
$(LIB)/libnccl-profiler-timed.so: test/gpu/timed_plugin.c include/nccl_profiler_abi.h
	@mkdir -p $(LIB)
	$(CC) $(CFLAGS_ALL) -shared -o $@ $< -ldl -lpthread $(LDFLAGS_ALL)
