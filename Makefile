# tern: build, demo, tests and benchmarks. Every target installs what it
# needs on a fresh Debian 12 machine (Go is expected on PATH; see README).

GO      ?= go
BIN     := bin/tern
# The commit `tern --version` prints; go build stamps it too where it can
# read .git (not with GOFLAGS=-buildvcs=false, nor in a container build).
COMMIT  ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)
LDFLAGS := -X main.commit=$(COMMIT)
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all bpf build demo up test test-short fuzz bench vet fmt deps tools clean

all: build

## deps: Go modules (pinned in go.mod/go.sum)
deps:
	$(GO) mod download

## tools: Debian packages the tests use (tshark decodes our captures; iproute2 builds namespaces;
## ping, curl and iperf3 drive traffic through the 5G sessions in the lab; PostgreSQL's server
## binaries, which the store tests start a throwaway server from; clang and libbpf's headers,
## which rebuild the XDP programs: `make bpf`, and the tests that check the committed objects).
## Installed only when missing; skipped quietly when apt is unavailable. apt waits up to two
## minutes for the dpkg lock (a fresh VM's unattended upgrades hold it) instead of giving up.
APT_WAIT := -o DPkg::Lock::Timeout=120
tools:
	@missing=""; \
	command -v tshark >/dev/null 2>&1 || missing="$$missing tshark"; \
	command -v ip >/dev/null 2>&1 || missing="$$missing iproute2"; \
	command -v iperf3 >/dev/null 2>&1 || missing="$$missing iperf3"; \
	command -v ping >/dev/null 2>&1 || missing="$$missing iputils-ping"; \
	command -v curl >/dev/null 2>&1 || missing="$$missing curl"; \
	command -v clang >/dev/null 2>&1 || missing="$$missing clang"; \
	[ -f /usr/include/bpf/bpf_helpers.h ] || missing="$$missing libbpf-dev"; \
	[ -f /usr/include/usrsctp.h ] || missing="$$missing libusrsctp-dev"; \
	{ command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; } || missing="$$missing postgresql"; \
	if [ -n "$$missing" ]; then \
	  if command -v apt-get >/dev/null 2>&1 && { [ "$$(id -u)" = 0 ] || command -v sudo >/dev/null 2>&1; }; then \
	    echo "installing:$$missing"; \
	    $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get $(APT_WAIT) update -qq >/dev/null && \
	    echo "wireshark-common wireshark-common/install-setuid boolean false" | $(SUDO) debconf-set-selections && \
	    $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get $(APT_WAIT) install -y -qq $$missing >/dev/null || \
	    echo "warning: could not install$$missing; tests that need them will skip"; \
	  else echo "warning: cannot install$$missing; tests that need them will skip"; fi; \
	fi

## bpf: rebuild the BPF objects (the C under */bpf/) that the XDP data paths load; bpf2go writes
## them next to their packages and they are committed, so a build needs no clang.
bpf: deps tools
	$(GO) generate -run bpf2go ./...

build: deps
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/tern

## demo: a core and a simulated RAN doing real procedures, with a report.
demo: build
	./$(BIN) demo

up: build
	./$(BIN) up

## test: the whole suite (unit, protocol vectors, end-to-end). Root-only tests skip without root.
## internal/cmd/testsummary runs go test -json: plain go test's output, then the tests that
## skipped and why; the exit status is go test's.
TESTSUMMARY := $(GO) run ./internal/cmd/testsummary -go $(GO) --
test: deps tools
	$(GO) vet ./...
	$(TESTSUMMARY) -count=1 -timeout 15m ./...

test-short: deps
	$(TESTSUMMARY) -short -count=1 ./...

## fuzz: run every fuzz target briefly (FUZZTIME per target).
FUZZTIME ?= 10s
fuzz: deps
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

## bench: the registration benchmark (docs/benchmarks.md has the others).
bench: build
	./$(BIN) bench register --ues 1000 --concurrency 64 --json bench-register.json

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
