# Vltava build and test entry points. `make test` is what CI runs.
GO       ?= go
PKGS     := ./...
UNIT     := ./internal/... ./cmd/...
FUZZTIME ?= 10s

.PHONY: all build test deps lint unit fuzz compat bench bench-smoke clean

all: build

build:
	$(GO) build -o bin/vltava ./cmd/vltava

## test: everything CI checks — formatting, vet, unit tests with the race
## detector, short fuzz runs, and the real-client compatibility suites.
test: deps lint unit fuzz compat bench-smoke

## deps: Debian packages of the real clients the suites drive.
deps:
	bash scripts/install-test-deps.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

unit:
	$(GO) test -race -count=1 $(UNIT)

## fuzz: a short run of every fuzz target (seed corpora live in testdata/fuzz).
fuzz:
	@set -e; for pkg in $$($(GO) list $(UNIT)); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$t"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

compat:
	$(GO) test -count=1 -timeout 15m ./test/...

## bench: the side-by-side benchmark (Vltava vs franz-go's kfake) and the
## machine's limits, as a markdown report (see docs/PERFORMANCE.md).
bench:
	$(GO) run ./bench/run -out bench/last-run.md

## bench-smoke: every scenario, tiny and once, so the suite cannot rot.
bench-smoke:
	$(GO) run ./bench/run -smoke

clean:
	rm -rf bin
