# letagents-go developer and CI entry points.
#
#   make dev    run the service locally (go run ./localdev; starts a private
#               PostgreSQL via localdev/embeddedpg when DB_URL is unset)
#   make test   go vet + go test -race against a PostgreSQL that
#               .ci/ensure-postgres finds or starts (what CI runs)
#   make bench  go run ./localdev/bench
#   make scale  go run ./localdev/bench -scale (several poll server
#               processes on one database, a kill, one process ramped;
#               a few minutes; SCALE_FLAGS=-quick for a ~30 s run)
#   make cost   go run ./localdev/costmodel: the MCP server driven through a
#               scripted hour of agent work against the local runner, its
#               requests counted by route and priced on AWS (docs/cost.md;
#               about 8 min; COST_FLAGS=-agents 20 …)
#   make template
#               rewrite template.yaml's routes (the HttpApi's OpenAPI body
#               and the functions' invoke permissions) from
#               shared/api/routes.go (go run ./infra/routegen); run it after
#               adding, changing or removing a route
#   make docs   rewrite the generated tables of docs/*.md (the MCP tools)
#               from the code; docs' tests fail until it has run
#   make deploy-check
#               hold template.yaml to what a first deploy needs, offline
#               (go run ./infra/deploycheck): cfn-lint without errors, the
#               SAM transform, the AWS limits neither checks, and what stops
#               sam deploy --guided (docs/deploy.md); CI runs it
#   make image-poll [POLL_IMAGE=…]
#               build the poll server's container image (functions/poll/
#               Dockerfile, linux/arm64) for template.yaml's PollService;
#               push it to ECR and deploy with PollImageUri set to it
#   make migrate
#               apply the migrations to DB_URL (go run ./functions/migrate);
#               deploys do it through the stack's Migrate resource
#   make dist [VERSION=…]
#               build the letagents command (./mcp/letagents) for every
#               platform of DIST_PLATFORMS into dist/, each binary named
#               letagents-<os>-<arch>[.exe], with dist/SHA256SUMS; the
#               version (default: git describe) is stamped into it
#   make record-clients
#               run the real Claude Code, Codex and Gemini CLI (from npm)
#               against a fake model and record the environment and hook
#               input they give letagents into mcp/identity/testdata/clients
#               (go run ./localdev/clientrec; a minute or two)
#   make compat ANCHOR_DIR=/path/to/built/letagents [ANCHOR_URL=…]
#               compare with the original service (docs/compatibility.md);
#               not part of make test, which needs no copy of the original
#
# The SAM build targets (build-<LogicalId>, used by `sam build` with
# BuildMethod: makefile) live below the developer targets.

.PHONY: dev test bench scale cost template docs deploy-check image-poll migrate compat dist record-clients

dev:
	go run ./localdev

# Fails if ensure-postgres fails: the assignment takes its exit status.
# -timeout 30m: infra builds every function's bootstrap twice (arm64 for
# the template, the host's for the emulator); cold, on a loaded 2-core
# machine, that passes go test's default 10 minutes.
test:
	LETAGENTS_TEST_DB_URL=$$(bash .ci/ensure-postgres) && export LETAGENTS_TEST_DB_URL && go vet ./... && go test -race -count=1 -timeout 30m ./...

bench:
	go run ./localdev/bench

scale:
	go run ./localdev/bench -scale $(SCALE_FLAGS)

cost:
	go run ./localdev/costmodel $(COST_FLAGS)

template:
	go run ./infra/routegen -template template.yaml

docs:
	go test ./docs -count=1 -update

# Needs cfn-lint (pip install cfn-lint), whose Python has the SAM transform.
deploy-check:
	go run ./infra/deploycheck -template template.yaml

# Fargate runs the image on ARM64 (template.yaml's RuntimePlatform), as
# Lambda runs the functions.
POLL_IMAGE ?= letagents-poll:latest
image-poll:
	docker build --platform linux/arm64 -f functions/poll/Dockerfile -t $(POLL_IMAGE) .

migrate:
	go run ./functions/migrate

# What people run on their own machines: Linux, macOS and Windows, on
# Intel/AMD and ARM. mcp/letagents' TestDist holds this list to the docs.
DIST_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
DIST_DIR ?= dist
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

# CGO_ENABLED=0: one static binary per platform, built from any of them.
# sha256sum is GNU's; macOS has shasum.
dist:
	rm -rf '$(DIST_DIR)' && mkdir -p '$(DIST_DIR)'
	set -e; for p in $(DIST_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; ext=; if [ $$os = windows ]; then ext=.exe; fi; \
		echo "dist: letagents-$$os-$$arch$$ext"; \
		GOOS=$$os GOARCH=$$arch CGO_ENABLED=0 go build -trimpath \
			-ldflags '-s -w -X github.com/letagents/letagents-go/mcp/server.Version=$(VERSION)' \
			-o '$(DIST_DIR)'/letagents-$$os-$$arch$$ext ./mcp/letagents; \
	done
	cd '$(DIST_DIR)' && if command -v sha256sum >/dev/null; then sha256sum letagents-*; else shasum -a 256 letagents-*; fi > SHA256SUMS

record-clients:
	go run ./localdev/clientrec -out mcp/identity/testdata/clients

# The command reads its settings from the environment (localdev/compat).
compat:
	ANCHOR_DIR='$(ANCHOR_DIR)' ANCHOR_URL='$(ANCHOR_URL)' go run ./localdev/compat

# --- SAM build targets (build-<LogicalId>) below this line ---
#
# `sam build` runs build-<LogicalId> for each function of template.yaml
# (Metadata: BuildMethod: makefile, CodeUri: .) with ARTIFACTS_DIR set; the
# Lambda runtime provided.al2023 starts the binary named bootstrap.
# infra/template_test.go checks that every function has its target.
#
# LAMBDA_GOARCH is template.yaml's Architectures, what `sam build` must
# build; infra/rie_test.go sets it to the machine's own, to run the
# bootstrap binaries under the Lambda Runtime Interface Emulator here.
LAMBDA_GOARCH ?= arm64

.PHONY: build-RoomsFunction build-MessagesFunction build-PollFunction build-WebFunction build-AuthFunction build-CoordinationFunction build-LivenessFunction build-MigrateFunction

build-RoomsFunction:
	GOOS=linux GOARCH=$(LAMBDA_GOARCH) CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -o $(ARTIFACTS_DIR)/bootstrap ./functions/rooms

build-MessagesFunction:
	GOOS=linux GOARCH=$(LAMBDA_GOARCH) CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -o $(ARTIFACTS_DIR)/bootstrap ./functions/messages

build-PollFunction:
	GOOS=linux GOARCH=$(LAMBDA_GOARCH) CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -o $(ARTIFACTS_DIR)/bootstrap ./functions/poll

build-WebFunction:
	GOOS=linux GOARCH=$(LAMBDA_GOARCH) CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -o $(ARTIFACTS_DIR)/bootstrap ./functions/web

build-AuthFunction:
	GOOS=linux GOARCH=$(LAMBDA_GOARCH) CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -o $(ARTIFACTS_DIR)/bootstrap ./functions/auth

build-CoordinationFunction:
	GOOS=linux GOARCH=$(LAMBDA_GOARCH) CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -o $(ARTIFACTS_DIR)/bootstrap ./functions/coordination

build-LivenessFunction:
	GOOS=linux GOARCH=$(LAMBDA_GOARCH) CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -o $(ARTIFACTS_DIR)/bootstrap ./functions/liveness

build-MigrateFunction:
	GOOS=linux GOARCH=$(LAMBDA_GOARCH) CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -o $(ARTIFACTS_DIR)/bootstrap ./functions/migrate
