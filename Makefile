# Thin wrapper over CMake. The README's two commands:
#   make demo   build and run the main job
#   make test   build and run the whole test suite
# Build options pass through: make SIMD=1 BLAS=1 CUDA=1 test
# Other targets: make (build into build/), make install PREFIX=/usr/local,
#   make asan (sanitizer suite), make fuzz (bounded libFuzzer run), make bench,
#   make test-arm64 (cross-compiled for arm64, the suite under qemu-user)

BUILD    ?= build
PREFIX   ?= /usr/local
TYPE     ?= Release
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE    ?= cmake
GEN      := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")

onoff = $(if $(filter 1 ON on yes YES true,$(1)),ON,OFF)
OPTS := -DCMAKE_BUILD_TYPE=$(TYPE) -DCMAKE_INSTALL_PREFIX=$(PREFIX) \
        -DTOPOS_SIMD=$(call onoff,$(SIMD)) -DTOPOS_BLAS=$(call onoff,$(BLAS)) \
        -DTOPOS_CUDA=$(call onoff,$(CUDA)) -DTOPOS_ACCELERATE=$(call onoff,$(ACCELERATE)) \
        -DTOPOS_METAL=$(call onoff,$(METAL))
ifdef BLAS_VENDOR
OPTS += -DTOPOS_BLAS_VENDOR=$(BLAS_VENDOR)
endif

.PHONY: all deps configure build demo test asan fuzz install bench clean test-arm64

all: build

# BLAS=1 needs the CBLAS headers and library (OpenBLAS unless BLAS_VENDOR says otherwise).
DEPS_EXTRA := $(TOPOS_DEPS_EXTRA) $(if $(filter ON,$(call onoff,$(BLAS))),$(if $(filter-out openblas,$(or $(BLAS_VENDOR),openblas)),$(if $(filter blis,$(BLAS_VENDOR)),libblis-dev),libopenblas-dev))

deps:
	@TOPOS_DEPS_EXTRA="$(DEPS_EXTRA)" sh scripts/install-deps.sh

configure: deps
	@$(CMAKE) -S . -B $(BUILD) $(GEN) $(OPTS) >/dev/null

build: configure
	@$(CMAKE) --build $(BUILD) -j $(JOBS)

demo: build
	@sh scripts/demo-data.sh
	@$(BUILD)/bin/topos demo --out $(BUILD)/demo

test: build
	@$(BUILD)/bin/topos_tests

# ASan + UBSan over the whole suite (clang); SHARDS=N as test-arm64's.
asan: deps
	@CC=clang $(CMAKE) -S . -B build-asan $(GEN) -DCMAKE_BUILD_TYPE=Debug -DTOPOS_SANITIZE=ON \
	   -DTOPOS_SIMD=$(call onoff,$(SIMD)) -DTOPOS_BLAS=$(call onoff,$(BLAS)) >/dev/null
	@$(CMAKE) --build build-asan -j $(JOBS)
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 $(SHARD_RUN) build-asan/bin/topos_tests

# The arm64 build (NEON and dotprod kernels) on an x86-64 machine: Debian's
# cross compiler, the whole suite run by qemu-user (its spawned `topos`
# commands too, through TOPOS_TEST_EMULATOR). qemu's default CPU has dotprod.
# SIMD=1 adds the simd backend's NEON gemm kernels. SHARDS=N splits the suite
# into N emulated processes side by side (scripts/test-shards.sh).
ARM64_SYSROOT := /usr/aarch64-linux-gnu
SHARD_RUN := $(if $(SHARDS),sh scripts/test-shards.sh $(SHARDS))
test-arm64:
	@TOPOS_DEPS_EXTRA="gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user" sh scripts/install-deps.sh
	@$(CMAKE) -S . -B build-arm64 $(GEN) -DCMAKE_BUILD_TYPE=Release -DCMAKE_SYSTEM_NAME=Linux \
	   -DCMAKE_SYSTEM_PROCESSOR=aarch64 -DCMAKE_C_COMPILER=aarch64-linux-gnu-gcc \
	   -DTOPOS_SIMD=$(call onoff,$(SIMD)) >/dev/null
	@$(CMAKE) --build build-arm64 -j $(JOBS)
	@TOPOS_TEST_EMULATOR="qemu-aarch64 -L $(ARM64_SYSROOT)" $(SHARD_RUN) qemu-aarch64 -L $(ARM64_SYSROOT) build-arm64/bin/topos_tests

# Bounded libFuzzer run over every target; FUZZ_SECONDS each.
FUZZ_SECONDS ?= 60
fuzz: deps
	@CC=clang $(CMAKE) -S . -B build-fuzz $(GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTOPOS_FUZZ=ON >/dev/null
	@$(CMAKE) --build build-fuzz -j $(JOBS) --target fuzzers
	@sh scripts/run-fuzz.sh build-fuzz $(FUZZ_SECONDS)

bench: build
	@$(BUILD)/bin/topos bench all

install: build
	@$(CMAKE) --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf build build-asan build-fuzz build-arm64
