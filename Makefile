# turnlog — `make help` lists the targets.
GO       ?= go
DB       ?= turnlog.db
CONFIG   ?=
ADDR     ?= 127.0.0.1:8080

.PHONY: help run build helper test vet lint fmt bench bench-scale bench-compare api-examples config-docs fuzz clean screenshots

help: ## list the targets
	@grep -E '^[a-z][a-z-]*:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: helper ## build ./turnlog (the sandbox's helper embedded)
	$(GO) build -o turnlog .

helper: ## build the sandbox's helper alone, which turnlog embeds and runs from memory
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags=-s -o sandbox/helperbin/bin/turnlog-helper ./sandbox/helper

run: build ## serve the offline demo app on an embedded SQLite file (no network, no API key)
	./turnlog serve --dev --db $(DB) --addr $(ADDR) $(if $(CONFIG),--config $(CONFIG))

test: vet helper ## gofmt check, go vet, and every test with the race detector (the sandbox's boundary tests and the undo log's again with bubblewrap; the apply's kill -9 test without the detector, which only slows its processes)
	$(GO) test -race -timeout 15m ./...
	TURNLOG_TEST_MECHANISM=bubblewrap $(GO) test -race -timeout 5m ./sandbox ./adapters/tools/workspacetools
	TURNLOG_TEST_MECHANISM=bubblewrap $(GO) test -race -timeout 5m -run 'Revert|Branch|Undo|Files|Records|Recorded' ./pkg/turnlog
	$(GO) test -timeout 10m -run 'TestAKilledApply|TestAKilledRestore' ./sandbox
	TURNLOG_TEST_MECHANISM=bubblewrap $(GO) test -timeout 5m -run 'TestAKilledApply|TestAKilledRestore' ./sandbox

lint: ## staticcheck (pinned; fetched from the Go module proxy)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

vet: ## gofmt and go vet
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt needed"; exit 1; }
	$(GO) vet ./...

bench: helper ## the benchmarks: engine step, storage, rebuild, what budget checks add to a step, replaying a log of 10,000 sessions against a config, appends/s (SQLite and PostgreSQL), engine step and HTTP turns/s by store and nodes, branch, history read, HTTP turns, sandbox overhead (by step) and the apply beside cp -a, the undo log (recording overhead, a revert beside cp -a, bytes per edit), the policy's decisions, context build and token counting, HTTP and command tools, cancel latency, the inspector's session page, serve's resident memory, turns under hostile clients
	$(GO) test -run '^$$' -bench 'EngineStep|Rebuild|BudgetCheck' -benchtime 1x -p 1 -timeout 30m ./fsm ./adapters/stores/sqlite
	$(GO) test -run '^$$' -bench 'AppendConcurrent' -benchtime 20000x -timeout 30m ./adapters/stores/sqlite
	$(GO) test -run '^$$' -bench 'AppendVsRawInsert' -benchtime 20000x -timeout 30m ./adapters/stores/sqlite
	$(GO) test -run '^$$' -bench 'AppendConcurrent' -benchtime 5000x -timeout 30m ./adapters/stores/postgres # with TURNLOG_TEST_POSTGRES set (.ci/start-postgres); skipped without
	$(GO) test -run '^$$' -bench 'StoreEngineSteps' -benchtime 1x -p 1 -timeout 30m ./adapters/stores/sqlite ./adapters/stores/postgres
	$(GO) test -run '^$$' -bench 'HTTPTurnsByNodes' -benchtime 600x -timeout 30m ./pkg/turnlog # the PostgreSQL runs with TURNLOG_TEST_POSTGRES set
	$(GO) test -run '^$$' -bench 'HTTPTurnsOverDelay' -benchtime 300x -timeout 30m ./pkg/turnlog # PostgreSQL through a delay line of 0, 0.5 and 1 ms each way, beside SQLite
	$(GO) test -run '^$$' -bench 'ReplayAll' -benchtime 1x -timeout 30m ./pkg/turnlog # turnlog replay --db over 10,000 sessions, beside one worker
	$(GO) test -run '^$$' -bench 'AppendVsRawInsert' -benchtime 10000x -timeout 30m ./adapters/stores/postgres # appends/s beside plain autocommitted INSERTs
	$(GO) test -run '^$$' -bench 'Branch|HistoryRead|ApprovalRoundTrip|EnqueueStart' -benchtime 200x -timeout 30m ./fsm
	$(GO) test -run '^$$' -bench 'HTTPTurn|HTTPApprovalRoundTrip|IdempotentReplay' -benchtime 300x -timeout 30m ./httpapi
	$(GO) test -run '^$$' -bench 'Canonicalize' -benchmem ./events
	$(GO) test -run '^$$' -bench 'SandboxOverhead' -benchtime 50x -timeout 30m ./sandbox
	$(GO) test -run '^$$' -bench 'Apply' -benchtime 4x -timeout 60m ./sandbox # 100,000 files on this disk: minutes
	$(GO) test -run '^$$' -bench 'RevertVsCopy' -benchtime 4x -timeout 30m ./sandbox # the undo log: a revert of 1,000 files beside cp -a
	$(GO) test -run '^$$' -bench 'RecordingOverhead' -benchtime 4x -timeout 30m ./adapters/tools/workspacetools # sed -i over 10,000 files, recorded and not
	$(GO) test -run '^$$' -bench 'UndoBytesOfLineEdits' -benchtime 1x -timeout 30m ./pkg/turnlog # what 100 one-line edits of a 1 MB file store
	$(GO) test -run '^$$' -bench 'PolicyDecision' -benchtime 2000x ./policy # a 20-word command's decision, p50, and the whole table
	$(GO) test -run '^$$' -bench 'ContextBuild|TokenCount' ./contextmgr
	$(GO) test -run '^$$' -bench 'HTTPToolOverhead' -benchtime 5000x ./adapters/tools/httptool
	$(GO) test -run '^$$' -bench 'SessionPage' -benchtime 50x ./inspector
	$(GO) test -run '^$$' -bench 'CommandToolVsBash' -benchtime 50x ./adapters/tools/commandtool
	$(GO) test -run '^$$' -bench 'CancelLatency' -benchtime 10x ./systemtest
	$(GO) test -run '^$$' -bench 'ServeMemory' -benchtime 1x ./systemtest
	$(GO) test -run '^$$' -bench 'TurnsUnderAttack' -benchtime 1x ./systemtest # 50 clients' turns/s and p99 under nesting, slow-body and idle attacks, as ratios

bench-scale: ## at scale: a database of 1M events over 10k sessions beside one of 10 sessions, in one run (a few GB of disk in TMPDIR, minutes; TURNLOG_SCALE_SESSIONS sets the size)
	$(GO) test -run '^$$' -bench 'AtScale' -benchtime 1x -timeout 60m ./pkg/turnlog

bench-compare: ## the in-run ratio benchmarks of BASE (a revision) and of the work tree, alternately, 6 runs each, through benchstat: fails on a figure worse by > 5 % at p < 0.05
	bash scripts/bench-compare.sh $(BASE)

api-examples: ## run every curl example of docs/api.md against a running server (make run)
	bash scripts/api-examples.sh

config-docs: helper ## write docs/config.md's reference again from config/agent.schema.json
	bash scripts/config-docs.sh

fuzz: ## fuzz canonical JSON for a minute
	$(GO) test -run '^$$' -fuzz FuzzCanonicalize -fuzztime 60s ./events

clean: ## remove the binary and the demo database
	rm -f turnlog $(DB) $(DB)-wal $(DB)-shm

screenshots: ## the inspector's pages in Chromium, as the PNGs docs/inspector.md shows (docs/img/)
	mkdir -p docs/img
	TURNLOG_SCREENSHOTS=$(CURDIR)/docs/img $(GO) test -run 'TestScreenshots' -count=1 ./inspector
