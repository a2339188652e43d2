# The entry points of the project. `make help` lists them.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

ROOT      := $(abspath .)
# LOCALKUBE_CACHE in the environment (hack/e2e.sh and the suites read it) chooses the
# cache too, so that the images built are the images a suite loads.
CACHE     ?= $(or $(LOCALKUBE_CACHE),$(ROOT)/.cache)
TOOLS_BIN := $(ROOT)/hack/tools/bin
BIN       := $(ROOT)/bin
export PATH := $(TOOLS_BIN):$(CACHE)/k8s/v1.37.2/bin:$(PATH)
export LOCALKUBE_CACHE := $(CACHE)
export CGO_ENABLED ?= 0

# One local Kubernetes runs on a machine at a time: e2e, bench and chaos runs from any
# checkout take this lock (hack/e2e.sh too).
E2E_LOCK ?= /tmp/valkey-operator-e2e.lock

# Every Go module of the workspace; each builds and tests alone (GOWORK=off).
MODULES := valkeyconf api valkey internal cluster-controller node-controller acl-controller tls-controller backup-controller webhooks manager kubectl-valkey images localkube hack/devtools hack/release e2e
# Binaries of the operator, one per controller.
COMPONENTS := cluster-controller node-controller acl-controller tls-controller backup-controller webhooks manager

# The release: the chart and the operator image are versioned together from VERSION.
VERSION   ?= $(shell cat $(ROOT)/VERSION)
REVISION  ?= $(shell git -C $(ROOT) rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS   := -s -w -X github.com/valkey-operator/valkey-operator/internal/version.Version=$(VERSION) \
	-X github.com/valkey-operator/valkey-operator/internal/version.Revision=$(REVISION)
# The operator image of the local Kubernetes: the one the chart in the repository defaults to.
LOCAL_OPERATOR_IMAGE := docker.io/library/valkey-operator:$(VERSION)
# make image / image-push: where the release image goes, and for which platforms.
IMG       ?= valkey-operator:$(VERSION)
PLATFORMS ?= linux/amd64,linux/arm64
RELEASE   := $(CACHE)/release
# make chart-push: an OCI registry (oci://host/path); HELM_PUSH_FLAGS e.g. --plain-http.
REGISTRY  ?=
HELM_PUSH_FLAGS ?=

# Go programs of the docs, outside every module (hack/devtools/modproxy builds them).
GO_EXAMPLES := docs/examples/goclient

# Shell scripts kept as files that the Go code embeds (shellcheck'd by make lint).
SCRIPTS := $(wildcard node-controller/internal/node/scripts/*.sh localkube/kindnode/files/*.sh)

# Build tags of the test programs that plain builds leave out (e2e suites, benchmarks):
# vet and lint see every file in one pass.
GO_TAGS := e2e,bench

LOCALKUBE := $(BIN)/localkube
comma := ,
NODES ?= 3
SUITE ?=
E2E_PROVIDER ?= local

##@ First steps

.PHONY: demo
demo: deps-demo ## Bring up the local Kubernetes (if none), install the operator, create a sample cluster, wait for Ready, print it
	hack/demo.sh

.PHONY: test
test: ## Everything CI runs: generation check, vet, lint, unit and integration tests, the core e2e suites (each step timed)
	hack/test.sh

##@ Development

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

.PHONY: deps
deps: ## Check, and on Debian 12 as root install, every program make test needs (hack/deps.txt; DEPS=check only checks)
	@hack/deps.sh $(if $(filter kind,$(E2E_PROVIDER)),kind,test)

.PHONY: deps-demo
deps-demo:
	@hack/deps.sh demo

.PHONY: deps-release
deps-release:
	@hack/deps.sh release

.PHONY: deps-kind
deps-kind:
	@hack/deps.sh kind

.PHONY: tools
tools: deps ## Install the Go tools into hack/tools/bin (part of make deps)

.PHONY: generate
generate: deps ## Generate deepcopy, CRDs (config/crd and the chart) and RBAC from the code
	COMPONENTS="$(COMPONENTS)" hack/generate.sh

.PHONY: config-table
config-table: deps-demo deps $(LOCALKUBE) ## Measure the configuration keys of every supported Valkey on its real server (the images' Debian packages) into valkeyconf/measured; make generate renders them
	@dir=$$(mktemp -d) && trap 'rm -rf "$$dir"' EXIT && \
	$(LOCALKUBE) valkey-servers -out "$$dir/servers" > "$$dir/servers.json" && \
	rm -f valkeyconf/measured/valkey-*.json && \
	(cd hack/devtools && GOWORK=off go run ./configtable measure -servers "$$dir/servers.json" -out $(ROOT)/valkeyconf/measured)
	COMPONENTS="$(COMPONENTS)" hack/generate.sh

.PHONY: verify-generate
verify-generate: deps ## Fail when generated files are stale
	COMPONENTS="$(COMPONENTS)" hack/verify-generate.sh

.PHONY: tidy
tidy: ## Write each go.mod's sibling lines and one version of each third-party module (modsync), then go mod tidy in every module, until both agree
	@for pass in 1 2 3 4; do \
		changed=$$(cd hack/devtools && GOWORK=off go run ./cmd/modsync $(ROOT)); \
		if [[ $$pass -gt 1 && -z "$$changed" ]]; then break; fi; \
		echo "$${changed:-modsync: nothing to change}"; \
		for m in $(MODULES); do echo "tidy $$m"; (cd $$m && GOWORK=off go mod tidy) || exit 1; done; \
	done
	cd hack/devtools && GOWORK=off go run ./cmd/modsync -check $(ROOT)

.PHONY: build
build: ## Build every module alone and the operator binaries into bin/
	@for m in $(MODULES); do echo "build $$m"; (cd $$m && GOWORK=off go build ./...); done
	@mkdir -p $(BIN)
	@for c in $(COMPONENTS); do (cd $$c && GOWORK=off go build -trimpath -ldflags='$(LDFLAGS)' -o $(BIN)/$$c .); done
	cd localkube && GOWORK=off go build -o $(LOCALKUBE) ./cmd/localkube

.PHONY: vet
vet: deps ## go vet every module alone
	@for m in $(MODULES); do echo "vet $$m"; (cd $$m && GOWORK=off go vet -tags $(GO_TAGS) ./...); done

.PHONY: lint
lint: deps ## gofmt, the import rules, the go.mod lines (siblings, one version per module), commit subjects, the docs (no dates or hashes, links), the status contract (Secrets read through status, its "read by" column), shellcheck, staticcheck
	@test -z "$$(gofmt -l $(MODULES) $(GO_EXAMPLES))" || { echo "gofmt needed:"; gofmt -l $(MODULES) $(GO_EXAMPLES); exit 1; }
	cd hack/devtools && GOWORK=off go run ./cmd/importcheck $(ROOT)
	cd hack/devtools && GOWORK=off go run ./cmd/modsync -check $(ROOT)
	cd hack/devtools && GOWORK=off go run ./cmd/commitcheck $(ROOT)
	cd hack/devtools && GOWORK=off go run ./cmd/docscheck $(ROOT)
	cd hack/devtools && GOWORK=off go run ./cmd/contractcheck $(ROOT)
	shellcheck hack/*.sh .ci/run $(SCRIPTS)
	@for m in $(MODULES); do echo "staticcheck $$m"; (cd $$m && GOWORK=off $(TOOLS_BIN)/staticcheck -tags $(GO_TAGS) ./...); done

.PHONY: chart-test
chart-test: deps ## helm lint, rendering of every toggle combination, minimal RBAC
	cd e2e && GOWORK=off go test -count=1 ./charttest/

.PHONY: unit
unit: deps local-build ## Unit and integration tests of every module (real Valkey servers and a real API server where needed); JUnit reports of the Ginkgo suites in .cache/junit
	@rm -rf $(CACHE)/junit
	@for m in $(MODULES); do echo "test $$m"; (cd $$m && JUNIT_DIR=$(CACHE)/junit GOWORK=off go test -count=1 ./...); done

##@ Local Kubernetes

$(LOCALKUBE): $(shell find localkube images -name '*.go' -not -name '*_test.go' 2>/dev/null) localkube/go.mod images/go.mod
	@mkdir -p $(BIN)
	cd localkube && GOWORK=off go build -o $(LOCALKUBE) ./cmd/localkube

.PHONY: local-build
local-build: deps-demo $(LOCALKUBE) ## Build the Kubernetes, etcd, CoreDNS and kube-network-policies binaries (cached in .cache)
	$(LOCALKUBE) build

.PHONY: monitoring-build
monitoring-build: deps-demo $(LOCALKUBE) ## Also build the Prometheus Operator and its config reloader (hack/promop, cached in .cache/monitoring) for the e2e monitoring suite
	$(LOCALKUBE) build --monitoring

.PHONY: certmanager-build
certmanager-build: deps-demo $(LOCALKUBE) ## Also build cert-manager's controller, cainjector and webhook (hack/certmanager, cached in .cache/certmanager) for the e2e suites that use cert-manager
	$(LOCALKUBE) build --certmanager

.PHONY: operator-binaries
operator-binaries:
	@mkdir -p $(BIN)/operator
	@for c in $(COMPONENTS); do \
		if ! compgen -G "$$c/*.go" >/dev/null; then echo "operator-binaries: skip $$c (no Go files yet)"; continue; fi; \
		(cd $$c && GOWORK=off go build -trimpath -ldflags='$(LDFLAGS)' -o $(BIN)/operator/$$c .); done

.PHONY: images
images: deps-demo $(LOCALKUBE) operator-binaries ## Build the images without Docker (Valkey 8.0/8.1/9.1, exporter, pause, operator, the kube-network-policies agent, and the versitygw S3 server once make deps installed it; IMAGES_FLAGS=--impostor adds docker.io/valkey/valkey:impostor, Redis under the name valkey-server); load them into a running local cluster
	$(LOCALKUBE) images --operator-binaries $(BIN)/operator --operator-image $(LOCAL_OPERATOR_IMAGE) \
		$(if $(wildcard $(TOOLS_BIN)/versitygw),--s3-binary $(TOOLS_BIN)/versitygw) $(IMAGES_FLAGS)

.PHONY: local-up
local-up: deps-demo local-build images ## Start the local Kubernetes (NODES=3); reports a running one, cleans leftovers
	$(LOCALKUBE) up --nodes $(NODES)

.PHONY: local-down
local-down: $(LOCALKUBE) ## Stop the local Kubernetes and remove everything it made on the machine
	$(LOCALKUBE) down

.PHONY: local-status
local-status: $(LOCALKUBE) ## Show whether the local Kubernetes runs
	$(LOCALKUBE) status

##@ Release

.PHONY: release-binaries
release-binaries: deps-demo ## Cross-compile every component for PLATFORMS into bin/release/<os>-<arch>/
	@for p in $(subst $(comma), ,$(PLATFORMS)); do os=$${p%/*}; arch=$${p#*/}; \
		echo "release-binaries: $$os/$$arch"; mkdir -p $(BIN)/release/$$os-$$arch; \
		for c in $(COMPONENTS); do (cd $$c && GOWORK=off CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch \
			go build -trimpath -ldflags='$(LDFLAGS)' -o $(BIN)/release/$$os-$$arch/$$c .) || exit 1; done; done

.PHONY: image
image: deps-release release-binaries ## Build the operator image for PLATFORMS as an OCI layout in .cache/release/image (IMG names it at push)
	hack/release-smoke.sh $(BIN)/release "$(PLATFORMS)" $(VERSION) $(COMPONENTS)
	cd hack/release && GOWORK=off go run . image --bins $(BIN)/release --platforms $(PLATFORMS) \
		--version $(VERSION) --revision $(REVISION) --out $(RELEASE)/image

.PHONY: image-push
image-push: image ## Push the operator image to IMG=<registry>/<repository>:<tag> (credentials: the docker config file; INSECURE=1 for plain HTTP)
	cd hack/release && GOWORK=off go run . push --layout $(RELEASE)/image --img $(IMG) $(if $(INSECURE),--insecure)

.PHONY: module-tags
module-tags: ## Tag HEAD for the release's Go modules: v$(VERSION) and <module>/v$(VERSION) for each of MODULES (git push origin --tags publishes them)
	@test "$(VERSION)" = "$$(cat VERSION)" || { echo "module-tags: the go.mod files follow the VERSION file ($$(cat VERSION)): change it and run make tidy"; exit 1; }
	cd hack/devtools && GOWORK=off go run ./cmd/modsync -check $(ROOT)
	git tag v$(VERSION)
	@for m in $(MODULES); do echo "git tag $$m/v$(VERSION)"; git tag $$m/v$(VERSION); done

.PHONY: chart-package
chart-package: deps-demo ## Package the chart (VERSION, default image IMG's repository) into .cache/release/
	cd hack/release && GOWORK=off go run . chart --chart $(ROOT)/charts/valkey-operator --version $(VERSION) \
		--img $(IMG) --out $(RELEASE)/chart
	helm package $(RELEASE)/chart/valkey-operator --destination $(RELEASE)

.PHONY: chart-push
chart-push: chart-package ## Push the chart package to REGISTRY=oci://<registry>/<path> (HELM_PUSH_FLAGS for --plain-http or --ca-file)
	@test -n "$(REGISTRY)" || { echo "chart-push: set REGISTRY=oci://<registry>/<path>"; exit 2; }
	cd hack/release && GOWORK=off go run . check-chart-registry --img $(IMG) --registry $(REGISTRY)
	helm push $(RELEASE)/valkey-operator-$(VERSION).tgz $(REGISTRY) $(HELM_PUSH_FLAGS)

##@ kubectl plugin

PLUGIN_LDFLAGS := -s -w -X github.com/valkey-operator/valkey-operator/kubectl-valkey/internal/plugin.Version=$(VERSION)

.PHONY: kubectl-plugin
kubectl-plugin: ## Build the kubectl plugin into bin/kubectl-valkey (put it on PATH: kubectl valkey --help)
	@mkdir -p $(BIN)
	cd kubectl-valkey && GOWORK=off go build -trimpath -ldflags='$(PLUGIN_LDFLAGS)' -o $(BIN)/kubectl-valkey .

.PHONY: kubectl-plugin-package
kubectl-plugin-package: ## Package the kubectl plugin for PLATFORMS as krew archives and the krew manifest valkey.yaml in .cache/release/kubectl-valkey/
	hack/krew-package.sh $(RELEASE)/kubectl-valkey $(VERSION) $(PLATFORMS)

##@ Docker and kind (machines with Docker)

KIND_CLUSTER ?= kind

.PHONY: docker-build
docker-build: deps-kind images ## Load the images into the local Docker engine (built without Docker by make images)
	@for f in $$($(LOCALKUBE) images-list); do docker load -i "$$f"; done

.PHONY: kind-image
kind-image: deps-kind local-build images ## Build the kind node image (Kubernetes v1.37.2, no registry: localkube/kindnode) into .cache/kind; load it into Docker
	$(LOCALKUBE) kind-image

.PHONY: kind-load
kind-load: deps-kind images ## Load the images into the kind cluster KIND_CLUSTER (default kind)
	@for f in $$($(LOCALKUBE) images-list); do kind load image-archive --name $(KIND_CLUSTER) "$$f"; done

##@ End-to-end

.PHONY: e2e
e2e: deps ## Run the e2e suites (SUITE=<label> for one) on E2E_PROVIDER=local|kind
	hack/e2e.sh "$(SUITE)"

.PHONY: e2e-repeat
e2e-repeat: deps ## Run one suite N times in a row (SUITE=heal N=10; E2E_REPEAT_LOAD=cpu, E2E_SLOW_API=bloat), each run reported
	@test -n "$(SUITE)" || { echo "e2e-repeat: set SUITE=<suite> (and N, default 10)"; exit 2; }
	hack/e2e-repeat.sh "$(SUITE)" "$(or $(N),10)"

.PHONY: e2e-ci
e2e-ci: deps ## The e2e suites that fit CI (see docs/testing.md)
	hack/e2e.sh ci

.PHONY: bench
bench: deps local-build images ## Measure the operator on the local Kubernetes: one table of medians (BENCH_REPS=3, BENCH_ONLY=items), also in bench/results.json
	cd e2e && flock $(E2E_LOCK) env GOWORK=off go test -tags bench -count=1 -v -timeout $${BENCH_TIMEOUT:-90m} ./bench/

.PHONY: bench-fleet-standin
bench-fleet-standin: deps local-build operator-binaries ## Item 9 of make bench at up to 1000 members without a local Kubernetes: a real API server, the operator's binaries, stand-in kubelet (BENCH_FLEET=100,200,500,1000); table in bench/fleet-standin.json
	cd e2e && STANDIN_BIN=$(BIN)/operator GOWORK=off go test -tags bench -count=1 -v -timeout $${BENCH_TIMEOUT:-4h} -run TestFleetStandin ./standin/

.PHONY: chaos
chaos: deps local-build images ## Scale and roll a 3x1 cluster under writes while faults hit it (CHAOS_DURATION=5m, CHAOS_MAX_FAULTS=12); fails unless it converges
	cd e2e && flock $(E2E_LOCK) env GOWORK=off go test -tags bench -count=1 -v -timeout $${CHAOS_TIMEOUT:-45m} ./chaos/
