# Everyday targets. The Go commands work without make; this file spells out
# the ones a release, the deployment (deploy/) and CI build on.

IMAGE ?= pikit:dev
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
PKG := github.com/pikit-go/pikit/internal/cli
LDFLAGS := -s -w -X $(PKG).Version=$(VERSION) -X $(PKG).Commit=$(COMMIT) -X $(PKG).Date=$(DATE)
PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64

.PHONY: build release image manifests test test-all figures

# A static binary (no cgo), as the image holds it.
build:
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o bin/pikit ./cmd/pikit

# Static binaries for every platform in dist/, named pikit-OS-ARCH, with
# their SHA-256 sums in dist/SHA256SUMS (check with sha256sum -c).
release:
	rm -rf dist && mkdir -p dist
	for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch go build -trimpath -ldflags "$(LDFLAGS)" -o dist/pikit-$$os-$$arch ./cmd/pikit || exit 1; \
	done
	cd dist && sha256sum pikit-* > SHA256SUMS

# The build context is the repository root, not deploy/image: the Dockerfile
# copies the module from there. deploy/image/Dockerfile.dockerignore (not a
# .dockerignore, which docker reads only at the context root) trims it.
image:
	docker build -f deploy/image/Dockerfile --build-arg VERSION=$(VERSION) -t $(IMAGE) .

# The Job as it will be applied (kubectl apply -k deploy/kubernetes/base).
manifests:
	kubectl kustomize deploy/kubernetes/base

# The hermetic tests: nothing installed, no network but loopback.
test:
	go test ./...

# Every suite CI runs: the hermetic tests, the real-software suites
# (PIKIT_REAL=1: agent frameworks, benchmarks, runtimes, a local model,
# Chromium, moto, kubectl, installed on first use) and the wire-format
# conformance module against the official SDKs.
test-all:
	PIKIT_REAL=1 go test -timeout 30m ./...
	cd conformance && go test ./...

# What a first build costs: lines compiled, binary size, cold and warm
# build time and memory.
figures:
	scripts/build-figures
