# flopmeter: two commands.
#   make run    install missing Debian packages, configure, build, run the main job
#   make test   the same set-up, then every test through ctest, the Python package's tests
#               (`python-test`), then the same tests built with AddressSanitizer +
#               UndefinedBehaviorSanitizer (`sanitize`), then each libFuzzer target for
#               FUZZ_CI_TIME seconds from seed FUZZ_CI_SEED (`fuzz`, reproducible)
# Other targets: build, install, clean, check (ctest of BUILD only), sanitize, fuzz (each target
# for FUZZ_TIME seconds; FUZZ_TARGETS="onnx args" picks some; docs/robustness.md), bench,
# wheel (a manylinux wheel of the Python package in dist/, docs/python.md).
BUILD ?= build
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# Debian packages the build and the tests need (dependencies are what this field uses).
PACKAGES = cmake gcc g++ make pkg-config libprotobuf-c-dev protobuf-c-compiler libonnx-dev \
           libcjson-dev libdnnl-dev libcmocka-dev clang libclang-rt-14-dev libonnx-testdata \
           python3-venv
SUDO = $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# The sanitizer suite and the fuzz targets build in their own directories (CUDA off: no kernel
# is run there, and nvcc would double the build time).
SAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_TIME ?= 300
FUZZ_CI_TIME ?= 20
# make test fuzzes from a fixed seed and a fresh corpus (fuzz/run.sh): reproducible anywhere
FUZZ_CI_SEED ?= 1
FUZZ_TARGETS ?=

.PHONY: all deps configure build run test check install clean sanitize fuzz python-test wheel

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

test: check
	$(MAKE) --no-print-directory python-test
	$(MAKE) --no-print-directory sanitize
	FUZZ_SEED=$(FUZZ_CI_SEED) $(MAKE) --no-print-directory fuzz FUZZ_TIME=$(FUZZ_CI_TIME)

check: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	@echo "per-op backend test (tests/test_backend_ops.c): what each backend runs"
	@grep -h '^backend ' $(BUILD)/Testing/Temporary/LastTest.log || true

install: build
	cmake --install $(BUILD)

# The Python package (python/flopmeter) under pytest (tests/python), against the library and CLI
# just built (FLOPMETER_LIB, FLOPMETER_CLI), in a virtual environment of PyPI's PyTorch: made
# when missing, its pins (tools/requirements-test.txt) installed only when one is missing, so a
# second run downloads nothing. No test collected (pytest's exit 5) is a failure.
VENV ?= $(HOME)/.cache/flopmeter/venv
PY_REQS = tools/requirements-test.txt
python-test: build
	@[ -x $(VENV)/bin/python ] || python3 -m venv $(VENV)
	@$(VENV)/bin/python tools/python_pins.py $(PY_REQS) || $(VENV)/bin/pip install -r $(PY_REQS)
	@st=0; FLOPMETER_LIB=$(abspath $(BUILD))/libflopmeter.so FLOPMETER_CLI=$(abspath $(BUILD))/flopmeter \
	  PYTHONPATH=$(CURDIR)/python $(VENV)/bin/python -m pytest tests/python -q -p no:cacheprovider || st=$$?; \
	  if [ $$st -eq 5 ]; then echo "python-test: pytest collected no test"; fi; exit $$st
	sh tests/check_pip_install.sh $(CURDIR)

# A wheel that runs on another Linux: `pip wheel .` bundles libflopmeter and the CLI, linked
# against Debian's oneDNN, protobuf-c and cJSON; `auditwheel repair` copies those (and what they
# need but glibc, libstdc++ and libgcc_s) into the wheel's flopmeter.libs/, points the RPATHs
# there and tags the wheel with the oldest manylinux policy its symbols allow (WHEEL_PLAT:
# auto). tests/check_wheel.sh then installs it into a new virtual environment and counts with
# the system's copies hidden. Not part of `make test`: a second build of the library.
WHEEL_VENV ?= $(HOME)/.cache/flopmeter/wheel-venv
WHEEL_REQS = tools/requirements-wheel.txt
WHEEL_PLAT ?= auto
wheel: deps
	@[ -x $(WHEEL_VENV)/bin/python ] || python3 -m venv $(WHEEL_VENV)
	@$(WHEEL_VENV)/bin/python tools/python_pins.py $(WHEEL_REQS) || $(WHEEL_VENV)/bin/pip install -q -r $(WHEEL_REQS)
	rm -rf dist/raw; rm -f dist/flopmeter-*.whl
	$(WHEEL_VENV)/bin/pip wheel --no-deps -w dist/raw .
	PATH=$(WHEEL_VENV)/bin:$$PATH $(WHEEL_VENV)/bin/auditwheel repair --plat $(WHEEL_PLAT) -w dist dist/raw/flopmeter-*.whl
	rm -rf dist/raw
	sh tests/check_wheel.sh dist/flopmeter-*-manylinux_*.whl

# LeakSanitizer is on (ASan's default on Linux); any UB aborts the test (-fno-sanitize-recover).
sanitize: deps
	cmake -S . -B $(SAN_BUILD) -DFM_SANITIZE='address;undefined' -DCMAKE_BUILD_TYPE=Debug \
	      -DFM_WITH_CUDA=OFF
	cmake --build $(SAN_BUILD) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:check_initialization_order=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(SAN_BUILD) --output-on-failure -j $(JOBS)

# libFuzzer (clang) with ASan + UBSan: replays tests/data/fuzz/regressions, then fuzzes each
# target for FUZZ_TIME seconds from fuzz/corpus and the test fixtures (fuzz/run.sh).
fuzz: deps
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DFM_FUZZ=ON -DFM_SANITIZE='address;undefined' \
	      -DFM_WITH_CUDA=OFF -DFM_WITH_DNNL=OFF -DFM_BUILD_TESTS=OFF
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_all
	sh fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_TIME) $(FUZZ_TARGETS)

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(FUZZ_BUILD)

# The CPU backend against PyTorch (Debian's python3-torch) with the same threads, warm-up and
# steps, and the CPU probe against its theoretical figures; Markdown for bench/RESULTS.md.
.PHONY: bench-cpu
bench-cpu: build
	/usr/bin/python3 bench/cpu_measure.py --flopmeter ./$(BUILD)/flopmeter
