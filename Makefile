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

run: build
	./$(BUILD)/flopmeter count resnet50

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

install: build
	cmake --install $(BUILD)

sanitize:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DFM_SANITIZE='address;undefined' -DCMAKE_BUILD_TYPE=Debug"

clean:
	rm -rf $(BUILD) build-asan
