# keyroute: the two commands a fresh machine needs are `make run` (the main
# job) and `make test` (every test). Both install what they need: Go modules
# through the Go proxy, Pulsar 4.0.8 through Maven (see internal/testbed).
#
# The repository is a Go workspace (go.work) of six modules: the SDK (the
# root: topology, router, producer, consumer), internal (test bed, admin, ingest),
# plugin/kotel, plugin/kzap, examples and e2e. The package pattern `work`
# names every package of every module; .ci/modules checks that each module
# also builds alone.

GO          ?= go
E2E_TIMEOUT ?= 75m
# Fuzzing runs a fixed number of inputs rather than a duration: a
# duration-bounded run can end in a spurious "context deadline exceeded"
# failure when the deadline hits while a worker is busy.
FUZZ_TOPOLOGY ?= 30000x
FUZZ_ROUTER   ?= 200000x

.PHONY: run test check unit fuzz e2e bench bench-omb bench-ir

## run: the main job: the load generator against five local clusters it starts.
run:
	$(GO) run ./examples/loadgen

## test: every test: static checks, unit tests (-race), short fuzz runs, e2e suites.
test: check unit fuzz e2e

check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet work
	$(GO) vet -tags e2e work
	bash .ci/cross
	bash .ci/modules
	python3 router/testdata/check_vectors.py
	python3 router/testdata/check_handover.py

# The allocation tests skip themselves under -race (the race detector
# allocates on its own), so they run once more without it.
unit:
	$(GO) test -race -count=1 work
	$(GO) test -count=1 -run 'Allocs' work

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZ_TOPOLOGY) ./topology/
	$(GO) test -run '^$$' -fuzz '^FuzzRoute$$' -fuzztime $(FUZZ_ROUTER) ./router/

# The e2e suites start real Pulsar clusters; -p 1 runs one suite at a time.
e2e:
	$(GO) test -tags e2e -count=1 -p 1 -timeout $(E2E_TIMEOUT) -v ./e2e/...

## bench: SDK vs raw pulsar-client-go on local clusters (producer and consumer), and the router.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./router/
	$(GO) test -tags e2e -run '^$$' -bench . -timeout 30m ./e2e/bench/

## bench-omb: loadgen's OpenMessaging Benchmark workloads on one vs five local clusters (a few minutes); rewrites BENCH.md.
bench-omb:
	$(GO) run ./examples/loadgen/benchomb -out BENCH.md

## bench-ir: instructions per message in keyroute's own frames (valgrind's cachegrind): a count that does not move with the machine's load; MISSES=1 adds modelled cache misses.
bench-ir:
	bash producer/testdata/bench-ir.sh
