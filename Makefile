# The two commands the README promises, for a fresh Debian 12 machine:
#   make run    install what is needed, build, open the workbench on the demo lab
#   make test   install what is needed, build, run every test
# Both call packaging/install-deps.sh (root or sudo), which is idempotent.

PRESET ?= default
BUILD_DIR := $(if $(filter asan,$(PRESET)),build-asan,build)
JOBS ?= $(shell nproc)
# Disk a full build with its tests takes (packaging/check-disk.sh warns below it).
NEED_GIB := 4

.PHONY: deps configure build run test asan package screenshot screenshots fuzz fuzz-deps clean

deps:
	bash packaging/install-deps.sh

configure: deps
	bash packaging/check-disk.sh $(BUILD_DIR) $(NEED_GIB) || true  # a warning only: a df or du that fails must not stop the build
	cmake --preset $(PRESET)

build: configure
	cmake --build --preset $(PRESET) -j $(JOBS)

# Opens the workbench; without a display it starts a virtual X server for it.
run: build
	bash packaging/run-gui.sh $(BUILD_DIR)/app/crosslab

test: build
	ctest --preset $(PRESET) -j $(JOBS)

asan:
	$(MAKE) test PRESET=asan

package: build
	cd $(BUILD_DIR) && cpack -G DEB

# Every parser of outside input under libFuzzer (clang, ASan + UBSan; build dir build-fuzz):
# each target to 1,000,000 executions or FUZZ_SECONDS (default 900) and a table. Long: run it
# on an idle machine. `make fuzz FUZZ_TARGETS="sse_stream run_events"` runs some.
fuzz-deps: deps
	bash packaging/install-fuzz-deps.sh

fuzz: fuzz-deps
	bash fuzz/run_fuzz.sh $(FUZZ_TARGETS)

# A screenshot of the real window under Xvfb: make screenshot SHOT=docs/screenshot.png
SHOT ?= docs/screenshot.png
screenshot: build
	CROSSLAB_SCREENSHOT=$(SHOT) bash packaging/run-gui.sh $(BUILD_DIR)/app/crosslab

# Every panel of a demo lab under Xvfb at 1024x700 and 1920x1080 into docs/screenshots/.
screenshots: build
	bash packaging/screenshots.sh $(BUILD_DIR)

clean:
	rm -rf build build-asan build-fuzz
