# daybook — see README.md. `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

GO          ?= go
GOBIN       ?= $(shell $(GO) env GOPATH)/bin
# The one place the Lambda Runtime Interface Emulator version is pinned.
RIE_MODULE  := github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie
RIE_VERSION := v0.0.0-20261030222936-bef5c4ba774d
LAMBDA_FLAGS := -tags lambda.norpc -trimpath -ldflags "-s -w"
LOCAL       := .local
EVENT       ?= events/exporter-job.json
DAYBOOK     := $(LOCAL)/bin/daybook

export AWS_LAMBDA_RIE ?= $(GOBIN)/aws-lambda-rie
# Python tools pinned for a machine that lacks them; installed into .local/venv.
PY_TOOLS    := moto[server]==5.2.1 aws-sam-translator==1.110.0 cfn-lint==1.51.0
VENV        := $(LOCAL)/venv
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: help
help: ## list targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  %-22s %s\n",$$1,$$2}'

# --- builds (sam build calls build-<LogicalId> with ARTIFACTS_DIR) --------------
.PHONY: build-SweeperFunction build-ExporterFunction
build-SweeperFunction: ## arm64 Lambda bootstrap of the sweeper into $(ARTIFACTS_DIR)
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/sweeper
build-ExporterFunction: ## arm64 Lambda bootstrap of the exporter into $(ARTIFACTS_DIR)
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/exporter

.PHONY: build
build: ## host builds of both bootstraps and the CLI into .local/bin
	CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(LOCAL)/bin/SweeperFunction/bootstrap ./functions/sweeper
	CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(LOCAL)/bin/ExporterFunction/bootstrap ./functions/exporter
	CGO_ENABLED=0 $(GO) build -trimpath -o $(DAYBOOK) ./cmd/daybook

# --- tools ---------------------------------------------------------------------
.PHONY: tools
tools: ## install what is missing: the runtime emulator (go install), moto/SAM translator/cfn-lint (.local/venv)
	@test -x "$(AWS_LAMBDA_RIE)" || { echo "installing aws-lambda-rie $(RIE_VERSION)"; GOBIN=$(GOBIN) $(GO) install $(RIE_MODULE)@$(RIE_VERSION); }
	@if command -v moto_server >/dev/null && command -v cfn-lint >/dev/null && python3 -c 'import samtranslator' 2>/dev/null; then :; else \
	  echo "moto_server, cfn-lint or the SAM translator is missing: installing $(PY_TOOLS) into $(VENV)"; \
	  python3 -m venv $(VENV) && $(VENV)/bin/pip install --quiet $(PY_TOOLS) || { echo "could not install the Python tools; install them with: python3 -m pip install $(PY_TOOLS)"; exit 1; }; \
	fi

# --- local AWS -----------------------------------------------------------------
.PHONY: local-up local-down invoke-sweeper invoke-exporter
local-up: build ## start moto on 127.0.0.1 and deploy template.yaml into it; writes .local/env.json
	$(DAYBOOK) local up --dir $(LOCAL) --template template.yaml

local-down: ## stop what local-up started (by pid)
	@if [ -x $(DAYBOOK) ]; then $(DAYBOOK) local down --dir $(LOCAL); else $(GO) run ./cmd/daybook local down --dir $(LOCAL); fi

invoke-sweeper: build ## run the sweeper bootstrap once under the runtime emulator (or sam local invoke)
	@$(MAKE) --no-print-directory _invoke FN=SweeperFunction EVENT=events/sweeper-schedule.json

invoke-exporter: build ## run the exporter bootstrap on EVENT=events/<file>.json
	@$(MAKE) --no-print-directory _invoke FN=ExporterFunction EVENT=$(EVENT)

.PHONY: _invoke
_invoke:
	@if command -v sam >/dev/null && docker info >/dev/null 2>&1; then \
	  sam build $(FN) >/dev/null && sam local invoke $(FN) --event $(EVENT) --env-vars $(LOCAL)/env.json; \
	else \
	  $(DAYBOOK) local invoke $(FN) --dir $(LOCAL) --event $(EVENT); \
	fi

# --- the demo ------------------------------------------------------------------
.PHONY: demo
demo: tools build ## the whole pipeline on the embedded demo source; files land in .demo/buckets
	$(DAYBOOK) demo --dir .demo --bin $(LOCAL)/bin

# --- checks --------------------------------------------------------------------
.PHONY: test fmt-check vet lint unit bench
test: tools fmt-check vet lint ## everything CI runs: gofmt, vet, cfn-lint, unit and integration tests
	$(GO) test -count=1 -timeout 20m ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

lint: ## cfn-lint the SAM template (errors and warnings fail)
	cfn-lint template.yaml

# The full fault run: SIGKILLed exporters, duplicate deliveries, concurrent sweeps, S3 errors and
# lost responses, then every invariant checked (shared/devkit/chaos). Not part of `make test`, which
# runs only its short version. CHAOS_SEED and CHAOS_KILLS override the defaults.
CHAOS_SEED  ?=
CHAOS_KILLS ?=
.PHONY: chaos
chaos: tools build ## fault-injection run of the whole local pipeline (minutes); prints the faults and the checks
	DAYBOOK_CHAOS=1 DAYBOOK_CHAOS_BIN=$(CURDIR)/$(LOCAL)/bin DAYBOOK_CHAOS_SEED=$(CHAOS_SEED) DAYBOOK_CHAOS_KILLS=$(CHAOS_KILLS) \
	  $(GO) test -count=1 -timeout 60m -run '^TestChaos$$' -v ./shared/devkit/chaos/

bench: ## benchmarks: encoders, xitongsys comparison, multipart writer
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 1x ./shared/encode/ ./bench/parquetcompare/
	$(GO) test -run '^$$' -bench . -benchmem ./shared/upload/

.PHONY: clean
clean: local-down
	rm -rf $(LOCAL) .aws-sam
