# daybook — see README.md. `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

GO          ?= go
# The Go release every build, test and tool install uses: the go command takes it
# from the module proxy. go.mod's go line names the same release (a machine's own
# Go ignores that line while GOTOOLCHAIN=local, so it is set here, in .ci/run and
# in .ci/tools).
export GOTOOLCHAIN := go1.27.3
GOBIN       ?= $(shell $(GO) env GOPATH)/bin
# The one place the Lambda Runtime Interface Emulator version is pinned.
RIE_MODULE  := github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie
RIE_VERSION := v0.0.0-20261030222936-bef5c4ba774d
# deadcode (unreachable functions from the mains), pinned by its module's version.
DEADCODE_MODULE  := golang.org/x/tools/cmd/deadcode
DEADCODE_VERSION := v0.52.0
DEADCODE    := $(GOBIN)/deadcode
# The Lambda builds' tags: lambda.norpc leaves out aws-lambda-go's net/rpc server (the provided
# runtimes do not use it); grpcnotrace keeps gRPC (linked through the Iceberg library's Arrow
# Parquet reader, never called) from importing golang.org/x/net/trace and with it text/template,
# whose calls to methods by name stop the linker dropping every unused exported method: without it
# the exporter binary is half as large again. shared/devkit/hostbuild.Tags says the same for the
# tests' builds, and a test holds the two equal.
# The version `daybook --version` and `daybook-dev --version` print, stamped by the linker into
# every build of the CLIs (build and release): git describe (a tag, commits since, the commit,
# -dirty), else the VERSION file of a tree without git. A checkout built with -buildvcs=false (as
# CI builds) records no VCS revision of its own.
VERSION      ?= $(shell git describe --tags --always --dirty 2>/dev/null || cat VERSION 2>/dev/null || echo unknown)
CLI_LDFLAGS  := -X github.com/daybook-dev/daybook/shared/cli.stamped=$(VERSION)
LAMBDA_TAGS  := lambda.norpc,grpcnotrace
LAMBDA_FLAGS := -tags $(LAMBDA_TAGS) -trimpath -ldflags "-s -w"
LOCAL       := .local
# local up writes the manual samples with the local account's own days.
EVENT       ?= $(LOCAL)/events/exporter-manual.json
DAYBOOK     := $(LOCAL)/bin/daybook
DAYBOOK_DEV := $(LOCAL)/bin/daybook-dev

export AWS_LAMBDA_RIE ?= $(GOBIN)/aws-lambda-rie
# The MinIO server the bucket conformance suite and an export test run against
# (a real S3 implementation, which verifies checksums). MinIO tags no semver
# releases: the pin is the pseudo-version `go install github.com/minio/minio@latest`
# resolved to. It is built from source: minutes on 2 cores.
MINIO_MODULE  := github.com/minio/minio
MINIO_VERSION := v0.0.0-20260212201848-7aac2a2c5b7c
export MINIO_SERVER ?= $(GOBIN)/minio
# The Google Cloud Storage emulator the bucket conformance suite and the GCS export tests run
# against (JSON API, in memory), built from its Go module at this version.
FAKE_GCS_MODULE  := github.com/fsouza/fake-gcs-server
FAKE_GCS_VERSION := v1.56.1
export FAKE_GCS_SERVER ?= $(GOBIN)/fake-gcs-server
# Azurite, Azure Blob Storage's emulator, the same for Azure (npm, versions pinned by its
# package-lock.json); npm ci installs it into $(AZURITE_DIR)/node_modules.
AZURITE_DIR   := shared/devkit/azurite/js
AZURITE_STAMP := $(AZURITE_DIR)/node_modules/.installed-package-lock.json
# The vulnerability scan of the built binaries (make vulncheck): govulncheck, and
# the Go vulnerability database as the module golang.org/x/vulndb (its data/osv
# holds one OSV file per entry, which govulncheck reads as a local database), both
# through the module proxy, so the scan needs no other network.
GOVULNCHECK_MODULE  := golang.org/x/vuln/cmd/govulncheck
GOVULNCHECK_VERSION := v1.9.0
GOVULNCHECK         := $(GOBIN)/govulncheck
# gotestsum runs make test's go test and keeps its JSON, from which the ten
# slowest tests are printed at the end of every run.
GOTESTSUM_MODULE  := gotest.tools/gotestsum
GOTESTSUM_VERSION := v1.13.0
GOTESTSUM         := $(GOBIN)/gotestsum
VULNDB_MODULE       := golang.org/x/vulndb
VULNDB_VERSION      := v0.0.0-20261105234957-e22db6528018
VULNDB_DIR          := $(shell $(GO) env GOMODCACHE)/$(VULNDB_MODULE)@$(VULNDB_VERSION)/data/osv
# Python tools pinned for a machine that lacks them; installed into .local/venv.
PY_TOOLS    := moto[server]==5.2.1 aws-sam-translator==1.110.0 cfn-lint==1.51.0
# The JavaScript Parquet reader the tests run with Node (versions pinned by its
# package-lock.json); npm ci installs it into $(JS_READER)/node_modules.
JS_READER   := shared/devkit/parquetreaders/js
JS_STAMP    := $(JS_READER)/node_modules/.installed-package-lock.json
VENV        := $(LOCAL)/venv
# The venv goes on PATH unless it is there unfinished (no .complete: an
# install that failed or was killed); .ci/tools removes such a one.
VENV_BROKEN := $(and $(wildcard $(VENV)/bin),$(if $(wildcard $(VENV)/.complete),,broken))
export PATH := $(if $(VENV_BROKEN),,$(CURDIR)/$(VENV)/bin:)$(PATH)

.PHONY: help
help: ## list targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  %-22s %s\n",$$1,$$2}'

# --- builds (sam build calls build-<LogicalId> with ARTIFACTS_DIR) --------------
# CATALOG=path names the deployment's dataset catalog (YAML or JSON): each function's build
# checks it and puts it beside the bootstrap as catalog.yaml. Unset, the shipped example is used.
CATALOG ?=
define bundle_catalog
$(if $(CATALOG),$(GO) run ./cmd/daybook catalog show --catalog '$(CATALOG)' >/dev/null && cp '$(CATALOG)' $(ARTIFACTS_DIR)/catalog.yaml)
endef
.PHONY: build-SweeperFunction build-ExporterFunction build-ConsoleFunction
build-SweeperFunction: ## arm64 Lambda bootstrap of the sweeper into $(ARTIFACTS_DIR)
	$(if $(ARTIFACTS_DIR),,$(error ARTIFACTS_DIR is not set: sam build sets it; for host builds use make build))
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/sweeper
	$(bundle_catalog)
build-ExporterFunction: ## arm64 Lambda bootstrap of the exporter into $(ARTIFACTS_DIR)
	$(if $(ARTIFACTS_DIR),,$(error ARTIFACTS_DIR is not set: sam build sets it; for host builds use make build))
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/exporter
	$(bundle_catalog)
build-ConsoleFunction: ## arm64 Lambda bootstrap of the web console into $(ARTIFACTS_DIR) (template parameter DeployConsole)
	$(if $(ARTIFACTS_DIR),,$(error ARTIFACTS_DIR is not set: sam build sets it; for host builds use make build))
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/console
	$(bundle_catalog)

.PHONY: build
build: ## host builds of the bootstraps, the operator CLI (daybook) and the local-development CLI (daybook-dev) into .local/bin
	CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(LOCAL)/bin/SweeperFunction/bootstrap ./functions/sweeper
	CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(LOCAL)/bin/ExporterFunction/bootstrap ./functions/exporter
	CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(LOCAL)/bin/ConsoleFunction/bootstrap ./functions/console
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(CLI_LDFLAGS)" -o $(DAYBOOK) ./cmd/daybook
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(CLI_LDFLAGS)" -o $(DAYBOOK_DEV) ./cmd/daybook-dev

# The operator CLI for the systems customers and operators use; customers need
# only `daybook verify --bucket ...`. One static binary per system in dist/.
RELEASE_PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
.PHONY: release
release: ## static daybook CLI binaries for linux and darwin (amd64, arm64) into dist/ (daybook-<os>-<arch>), with SHA256SUMS
	@mkdir -p dist
	@set -e; for p in $(RELEASE_PLATFORMS); do os=$${p%/*}; arch=$${p#*/}; \
		echo "dist/daybook-$$os-$$arch"; \
		GOOS=$$os GOARCH=$$arch CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(CLI_LDFLAGS)" -o dist/daybook-$$os-$$arch ./cmd/daybook; \
	done
	cd dist && sha256sum daybook-* > SHA256SUMS

# --- tools ---------------------------------------------------------------------
.PHONY: tools demo-tools
demo-tools: store-emulators ## what make demo needs: the runtime emulator (go install), moto/SAM translator/cfn-lint (.local/venv) and the store emulators
	@.ci/tools go "$(AWS_LAMBDA_RIE)" $(RIE_MODULE) $(RIE_VERSION)
	@.ci/tools python $(VENV) $(PY_TOOLS)

tools: demo-tools ## install what is missing or not at its pinned version: demo-tools, the store emulators, deadcode, govulncheck, gotestsum and the MinIO server (go install), the vulnerability database (module proxy), the JS Parquet reader and the fleet tests' dynalite (npm ci), headless Chromium and qemu-user-static (apt-get)
	@.ci/tools go "$(DEADCODE)" $(DEADCODE_MODULE) $(DEADCODE_VERSION) same-go
	@.ci/tools go "$(GOVULNCHECK)" $(GOVULNCHECK_MODULE) $(GOVULNCHECK_VERSION) same-go
	@.ci/tools go "$(GOTESTSUM)" $(GOTESTSUM_MODULE) $(GOTESTSUM_VERSION)
	@.ci/tools vulndb $(VULNDB_MODULE) $(VULNDB_VERSION)
	@.ci/tools go "$(MINIO_SERVER)" $(MINIO_MODULE) $(MINIO_VERSION)
	@.ci/tools chromium
	@.ci/tools qemu
	@if command -v node >/dev/null && cmp -s $(JS_READER)/package-lock.json $(JS_STAMP); then :; else \
	  command -v node >/dev/null && command -v npm >/dev/null || { echo "node or npm is missing: install Node.js 20+ with npm (the Parquet reader tests run hyparquet with it), then run make tools again"; exit 1; }; \
	  echo "installing the JavaScript Parquet reader: npm ci in $(JS_READER)"; \
	  (cd $(JS_READER) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) && cp $(JS_READER)/package-lock.json $(JS_STAMP) || { echo "could not install the JavaScript Parquet reader; run: (cd $(JS_READER) && npm ci)"; exit 1; }; \
	fi

.PHONY: store-emulators
store-emulators: ## fake-gcs-server (go install) and Azurite (npm ci), the GCS and Azure stores the tests and the demo run against
	@.ci/tools go "$(FAKE_GCS_SERVER)" $(FAKE_GCS_MODULE) $(FAKE_GCS_VERSION)
	@if command -v node >/dev/null && cmp -s $(AZURITE_DIR)/package-lock.json $(AZURITE_STAMP); then :; else \
	  command -v node >/dev/null && command -v npm >/dev/null || { echo "node or npm is missing: install Node.js 20+ with npm (Azurite, the Azure Blob Storage emulator, runs on it), then run make tools again"; exit 1; }; \
	  echo "installing Azurite: npm ci in $(AZURITE_DIR)"; \
	  (cd $(AZURITE_DIR) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) && cp $(AZURITE_DIR)/package-lock.json $(AZURITE_STAMP) || { echo "could not install Azurite; run: (cd $(AZURITE_DIR) && npm ci)"; exit 1; }; \
	fi

# --- local AWS -----------------------------------------------------------------
.PHONY: local-up local-down local-drain invoke-sweeper invoke-exporter
local-up: build ## moto on 127.0.0.1, template.yaml deployed, a demo source and the local account; writes .local/env.json
	$(DAYBOOK_DEV) local up --dir $(LOCAL) --template template.yaml

local-drain: build ## feed the jobs the sweeper enqueued to the exporter (runtime emulator) until the queue is empty
	$(DAYBOOK_DEV) local drain --dir $(LOCAL)

local-down: ## stop what local-up started (by pid)
	@if [ -x $(DAYBOOK_DEV) ]; then $(DAYBOOK_DEV) local down --dir $(LOCAL); else $(GO) run ./cmd/daybook-dev local down --dir $(LOCAL); fi

invoke-sweeper: build ## run the sweeper bootstrap once under the runtime emulator (or sam local invoke)
	@$(MAKE) --no-print-directory _invoke FN=SweeperFunction EVENT=events/sweeper-schedule.json

invoke-exporter: build ## run the exporter bootstrap on EVENT=<file>.json (default: .local/events/exporter-manual.json, a re-export of the local account's newest closed day)
	@$(MAKE) --no-print-directory _invoke FN=ExporterFunction EVENT=$(EVENT)

# sam local invoke runs the bootstrap in a Docker container: --docker-network host lets it reach
# moto on the host's 127.0.0.1 (Linux; with Docker Desktop, put host.docker.internal in place of
# 127.0.0.1 in .local/sam-env.json), and the demo source is copied into the build directory SAM
# mounts at /var/task, where sam-env.json's SOURCE_DSN points.
.PHONY: _invoke
_invoke:
	@if command -v sam >/dev/null && docker info >/dev/null 2>&1; then \
	  sam build $(FN) >/dev/null && cp $(LOCAL)/demo.db .aws-sam/build/$(FN)/demo.db && \
	  sam local invoke $(FN) --event $(EVENT) --env-vars $(LOCAL)/sam-env.json --docker-network host; \
	else \
	  $(DAYBOOK_DEV) local invoke $(FN) --dir $(LOCAL) --event $(EVENT); \
	fi

# --- the demo ------------------------------------------------------------------
.PHONY: demo
demo: demo-tools build ## the whole pipeline on the embedded demo source; files land in .demo/buckets
	$(DAYBOOK_DEV) demo --dir .demo --bin $(LOCAL)/bin

# --- checks --------------------------------------------------------------------
.PHONY: test test-arm64 fmt-check vet lint deadcode unit bench vulncheck
test: tools fmt-check vet lint deadcode vulncheck test-arm64 test-race ## everything CI runs: gofmt, vet, cfn-lint, deadcode, the vulnerability scan, the arm64 run, the race detector on the concurrent encode path, unit and integration tests, and the summary of their IAM policy checks
	rm -rf $(LOCAL)/iamcheck
	$(GOTESTSUM) --format pkgname-and-test-fails --jsonfile $(LOCAL)/test.json -- -count=1 -timeout 20m ./...
	@echo "the ten slowest tests (all: $(GOTESTSUM) tool slowest --jsonfile $(LOCAL)/test.json):"
	@$(GOTESTSUM) tool slowest --jsonfile $(LOCAL)/test.json --threshold 1s | awk '$$2 !~ /\//' | head -10
	$(GO) run ./shared/devkit/iamcheck/iamreport -dir $(LOCAL)/iamcheck -template template.yaml -out $(LOCAL)/iamcheck/report.txt

# The encoder's column workers and helpers, the upload's part goroutines and
# the exporter's read/encode pipeline hand state between goroutines; their
# tests run under the race detector too, which fails a missing hand-off the
# byte comparisons could miss.
test-race: ## the encoder, the upload path and the export pipeline's tests under the race detector
	$(GO) test -count=1 -race ./shared/encode/ ./shared/upload/
	$(GO) test -count=1 -race -run '^TestPipeline' ./functions/exporter/

# The Lambdas ship as linux/arm64 (Graviton); the other tests run on this machine's
# architecture. This runs the encoders', the upload path's, the layout's and the
# manifest's tests as arm64 binaries under qemu-aarch64-static, and one whole export
# of every dataset in three formats to the in-memory bucket, whose files must be
# byte-identical to the ones the same test writes here (checksums compared). Tests
# that link DuckDB (a cgo library) cannot be cross-built and carry the build tag
# !noduckdb; they run in the main pass. The rows per CPU-second it logs under
# emulation are a sanity figure, never a speed. vet ran on this code in make vet.
ARM64_PKGS := ./shared/encode/ ./shared/upload/ ./shared/dataset/ ./shared/layout/ ./shared/manifest/ ./shared/fileformat/
ARM64_SUMS := $(LOCAL)/arm64/export.sums
test-arm64: ## the encoders, the upload path and one whole export as arm64 binaries under qemu (the Lambdas' architecture), files byte-identical to this machine's
	@mkdir -p $(LOCAL)/arm64
	@command -v qemu-aarch64-static >/dev/null || { echo "qemu-aarch64-static is missing: run make tools (Debian package qemu-user-static)"; exit 1; }
	$(GO) test -count=1 -run '^TestExportBytesAcrossArchitectures$$' ./functions/exporter/ -args -sums-out=$(CURDIR)/$(ARM64_SUMS)
	CGO_ENABLED=0 GOARCH=arm64 $(GO) test -count=1 -vet=off -tags noduckdb -exec qemu-aarch64-static $(ARM64_PKGS)
	CGO_ENABLED=0 GOARCH=arm64 $(GO) test -count=1 -vet=off -tags noduckdb -exec qemu-aarch64-static -run '^TestExportBytesAcrossArchitectures$$' -v ./functions/exporter/ -args -sums=$(CURDIR)/$(ARM64_SUMS)

# Every function in the programs' packages is reachable from a main: code only
# tests call belongs in a _test.go file or a test-support package.
deadcode: ## fail with the list of functions no main reaches (golang.org/x/tools/cmd/deadcode)
	@test -x $(DEADCODE) || { echo "$(DEADCODE) is missing: run make tools"; exit 1; }
	@out=$$($(DEADCODE) ./functions/... ./cmd/...) || { echo "$$out"; exit 1; }; \
	if [ -n "$$out" ]; then echo "unreachable from any main (deadcode ./functions/... ./cmd/...):"; echo "$$out"; exit 1; fi

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

lint: ## cfn-lint the SAM template (errors and warnings fail)
	cfn-lint template.yaml

# Fails on any known vulnerability in a function the binaries call (symbol level);
# the log names every entry found, called or not.
vulncheck: build ## scan the built bootstraps and CLI for known vulnerabilities (govulncheck on the binaries, local database; run make tools first)
	@.ci/tools vulncheck "$(GOVULNCHECK)" "$(VULNDB_DIR)" $(LOCAL)/bin/SweeperFunction/bootstrap $(LOCAL)/bin/ExporterFunction/bootstrap $(LOCAL)/bin/ConsoleFunction/bootstrap $(DAYBOOK)

# The fleet benchmark's local DynamoDB (dynalite, pinned in bench/fleet/package-lock.json),
# installed with npm into bench/fleet/node_modules (git-ignored).
FLEET_DYNALITE := bench/fleet/node_modules/.installed
$(FLEET_DYNALITE): bench/fleet/package.json bench/fleet/package-lock.json
	@command -v npm >/dev/null || { echo "npm is missing: install Node.js 20+ with npm (the fleet benchmark runs dynalite with it)"; exit 1; }
	npm ci --prefix bench/fleet --no-audit --no-fund --loglevel=error
	@touch $@
# make test needs it too: the fleet page's cost test runs on dynalite.
tools: $(FLEET_DYNALITE)

# The full fault run: SIGKILLed exporters, duplicate deliveries, concurrent sweeps, S3 errors and
# lost responses, then every invariant checked (shared/devkit/chaos). Not part of `make test`, which
# runs only its short versions (one of them with the big day in slices). CHAOS_SEED, CHAOS_KILLS and
# CHAOS_SLICE_ROWS (the big day is exported in slices above it; 0: none) override the defaults.
CHAOS_SEED  ?=
CHAOS_KILLS ?=
CHAOS_SLICE_ROWS ?=
.PHONY: chaos
chaos: tools build ## fault-injection run of the whole local pipeline (minutes); prints the faults and the checks
	DAYBOOK_CHAOS=1 DAYBOOK_CHAOS_BIN=$(CURDIR)/$(LOCAL)/bin DAYBOOK_CHAOS_SEED=$(CHAOS_SEED) DAYBOOK_CHAOS_KILLS=$(CHAOS_KILLS) DAYBOOK_CHAOS_SLICE_ROWS=$(CHAOS_SLICE_ROWS) \
	  $(GO) test -count=1 -timeout 60m -run '^TestChaos$$' -v ./shared/devkit/chaos/

# FLEET_BENCH_SIZES=100,1000 runs the fleet benchmark on fewer accounts.
bench: $(FLEET_DYNALITE) store-emulators ## benchmarks: encoders, xitongsys comparison, bytes and encoder CPU vs DuckDB (tables), export from PostgreSQL vs raw read + DuckDB, largest day per run and peak RSS (table; DAYBOOK_BENCH_10M=1 adds a 10M-row day; DAYBOOK_BENCH_CPUPROFILE / DAYBOOK_BENCH_MEMPROFILE=<dir> write profiles), export to each store (MinIO, fake-gcs-server, Azurite) as ratios to S3 (table), multipart writer, fleet sweep cost (dynalite); see docs/performance.md
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 1x ./shared/encode/ ./bench/parquetcompare/
	$(GO) test -run '^$$' -bench ExportPostgres -benchtime 1x -timeout 60m ./functions/exporter/
	$(GO) test -run '^$$' -bench ExportStores -benchtime 1x -timeout 30m ./functions/exporter/
	$(GO) test -run '^$$' -bench . -benchmem ./shared/upload/
	$(GO) test -run '^$$' -bench Fleet -benchtime 1x -timeout 90m ./functions/sweeper/

.PHONY: clean
clean: local-down
	rm -rf $(LOCAL) .aws-sam
