# Vltava build and test entry points. `make test` is what CI runs.
GO       ?= go
PKGS     := ./...
UNIT     := ./internal/... ./cmd/... ./connect/... ./streams/... ./examples/...
# A count, not a duration: with a duration, Go 1.26's fuzz coordinator can
# report a spurious "context deadline exceeded" when a worker is starved at
# the deadline (golang/go#75804, fixed in Go 1.27). 100000 inputs take 2-17 s
# per target on a 2-core machine.
FUZZTIME ?= 100000x
STATICCHECK ?= $(shell $(GO) env GOPATH)/bin/staticcheck

.PHONY: all build test deps lint unit fuzz compat cluster connect mirror streams console bench bench-smoke clean

all: build

build:
	$(GO) build -o bin/vltava ./cmd/vltava

## test: everything CI checks — formatting, vet, unit tests with the race
## detector, short fuzz runs, and the real-client compatibility suites.
test: deps lint unit fuzz compat cluster connect mirror streams console bench-smoke

## deps: Debian packages of the real clients the suites drive.
deps:
	bash scripts/install-test-deps.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(STATICCHECK) $(PKGS)

unit:
	$(GO) test -race -count=1 -tags invariants $(UNIT)

## fuzz: a short run of every fuzz target (seed corpora live in testdata/fuzz).
fuzz:
	@set -e; for pkg in $$($(GO) list $(UNIT)); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$t"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

## compat: the real-client suites and the CLI against the built binary.
compat:
	$(GO) test -count=1 -timeout 15m ./test/compat ./test/cli

## cluster: multi-node failure scenarios (3-4 nodes on 127.0.0.1; the
## network-partition test uses network namespaces, which need root).
cluster:
	$(GO) test -count=1 -timeout 25m ./test/cluster

## connect: the Connect suites (standalone and distributed workers against
## real brokers, the REST contract).
connect:
	$(GO) test -count=1 -timeout 15m ./test/connect

## mirror: MirrorMaker between real clusters (and from kfake).
mirror:
	$(GO) test -count=1 -timeout 15m ./test/mirror

## streams: the streams examples as processes against a Vltava broker.
streams:
	$(GO) test -count=1 -timeout 10m ./test/streams

## console: the web console in headless Chromium (Debian's chromium)
## against a Vltava broker; screenshots of every page go to
## $VLTAVA_ARTIFACTS/console (a temporary directory when unset).
console:
	$(GO) test -count=1 -timeout 10m ./test/console

## bench: the side-by-side benchmark (Vltava vs franz-go's kfake) and the
## machine's limits, as a markdown report (see docs/PERFORMANCE.md).
bench:
	$(GO) run ./bench/run -out bench/last-run.md

## bench-smoke: every scenario, tiny and once, so the suite cannot rot.
bench-smoke:
	$(GO) run ./bench/run -smoke
	$(GO) run ./bench/rest -smoke
	$(GO) run ./bench/connect -smoke
	$(GO) run ./bench/security -smoke

clean:
	rm -rf bin
