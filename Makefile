# letagents-go developer and CI entry points.
#
#   make dev    run the service locally (go run ./localdev; starts a private
#               PostgreSQL via localdev/embeddedpg when DB_URL is unset)
#   make test   go vet + go test -race against a PostgreSQL that
#               .ci/ensure-postgres finds or starts (what CI runs)
#   make bench  go run ./localdev/bench
#
# The SAM build targets (build-<LogicalId>, used by `sam build` with
# BuildMethod: makefile) live below the developer targets.

.PHONY: dev test bench

dev:
	go run ./localdev

# Fails if ensure-postgres fails: the assignment takes its exit status.
test:
	LETAGENTS_TEST_DB_URL=$$(bash .ci/ensure-postgres) && export LETAGENTS_TEST_DB_URL && go vet ./... && go test -race -count=1 ./...

bench:
	go run ./localdev/bench

# --- SAM build targets (build-<LogicalId>) below this line ---
