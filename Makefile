# docjobs: `make run` starts the service on the embedded default (SQLite + local files);
# `make test` runs every test. Both install what they need first.
SHELL := /bin/bash
GO    ?= go
BIN   := $(CURDIR)/bin
export PATH := $(BIN):$(PATH)

TOOLS := $(BIN)/buf $(BIN)/protoc-gen-go $(BIN)/protoc-gen-go-grpc $(BIN)/protoc-gen-grpc-gateway $(BIN)/protoc-gen-openapi

.PHONY: all deps deps-test tools generate check-generate build test test-go test-openapi run clean

all: build

# The Go of go.mod (fetched from the module proxy when the machine's is
# missing or older) and the system packages the pipeline runs as processes;
# a no-op when present.
deps:
	@./scripts/go-toolchain.sh
	@./scripts/deps.sh

# deps plus what only the tests run (node and npm, for the independent
# webhook and OpenAPI checks): `make run` does not install them.
deps-test:
	@./scripts/go-toolchain.sh
	@./scripts/deps.sh --test

$(TOOLS): tools/go.mod tools/go.sum
	cd tools && GOBIN=$(BIN) $(GO) install tool

tools: $(TOOLS)

# openapi-fold merges the responses an openapi.v3.operation annotation
# adds to those gnostic derives (gnostic appends them as keys of the same
# name); see scripts/openapi-fold.
generate: tools
	rm -rf gen/docjobs
	buf generate --path proto/docjobs
	$(GO) run ./scripts/openapi-fold gen/openapi/openapi.yaml
	buf lint

# CI fails when the committed generated code is stale.
check-generate: generate
	@git diff --exit-code -- gen || (echo "gen/ is stale: run make generate and commit" >&2; exit 1)
	@test -z "$$(git status --porcelain -- gen)" || (git status --porcelain -- gen; echo "gen/ has untracked changes" >&2; exit 1)

build:
	$(GO) build -o $(BIN)/docjobs ./cmd/docjobs

test: deps-test build
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 8m ./...
	# The chunker's single-goroutine tests take smaller inputs under -race
	# (raceOr); this run gives them their full sizes.
	$(GO) test -count=1 ./internal/chunk/
	$(MAKE) test-openapi

# The published OpenAPI is validated by an independent implementation.
test-openapi:
	@./scripts/openapi-lint.sh gen/openapi/openapi.yaml

run: deps build
	$(BIN)/docjobs serve

clean:
	rm -rf $(BIN) data
