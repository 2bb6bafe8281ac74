# flopmeter: two commands.
#   make run    install missing Debian packages, configure, build, run the main job
#   make test   the same set-up, then every test through ctest
# Other targets: build, install, clean, sanitize (ASan+UBSan test suite), bench, fuzz.
BUILD ?= build
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# Debian packages the build and the tests need (dependencies are what this field uses).
PACKAGES = cmake gcc g++ make pkg-config libprotobuf-c-dev protobuf-c-compiler libonnx-dev \
           libcjson-dev libdnnl-dev libcmocka-dev
SUDO = $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps configure build run test install clean sanitize

all: build

# Installs only what is missing (no apt-get run when everything is there).
deps:
	@missing=""; for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

configure: deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The main job: count ResNet-50, place it on a roofline and predict its training time. The
# device is the A100 SXM 80GB: the most common training GPU in published benchmarks, and one
# with TF32 tensor cores, so PyTorch's default (TF32 convolutions, FP32 matmuls) shows two
# ceilings at once. Batch 64 and ImageNet-1k (1,281,167 images, 90 epochs) as in the classic
# ResNet-50 training recipe.
RUN_DEVICE ?= a100
run: build
	./$(BUILD)/flopmeter count resnet50
	@echo
	./$(BUILD)/flopmeter roofline resnet50 --device $(RUN_DEVICE) --batch 64 --precision torch-default --summary
	@echo
	./$(BUILD)/flopmeter predict resnet50 --device $(RUN_DEVICE) --batch 64 --precision torch-default --summary \
	    --dataset-size 1281167 --epochs 90

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

install: build
	cmake --install $(BUILD)

sanitize:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DFM_SANITIZE='address;undefined' -DCMAKE_BUILD_TYPE=Debug"

clean:
	rm -rf $(BUILD) build-asan

# The CPU backend against PyTorch (Debian's python3-torch) with the same threads, warm-up and
# steps, and the CPU probe against its theoretical figures; Markdown for bench/RESULTS.md.
.PHONY: bench-cpu
bench-cpu: build
	/usr/bin/python3 bench/cpu_measure.py --flopmeter ./$(BUILD)/flopmeter
