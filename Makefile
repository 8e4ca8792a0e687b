# Everyday targets. The Go commands work without make; this file only
# spells out the ones the deployment (deploy/) builds on.

IMAGE ?= pikit:dev
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/pikit-go/pikit/internal/cli.Version=$(VERSION)

.PHONY: build image manifests test

# A static binary (no cgo), as the image holds it.
build:
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o bin/pikit ./cmd/pikit

# The build context is the repository root, not deploy/image: the Dockerfile
# copies the module from there. deploy/image/Dockerfile.dockerignore (not a
# .dockerignore, which docker reads only at the context root) trims it.
image:
	docker build -f deploy/image/Dockerfile --build-arg VERSION=$(VERSION) -t $(IMAGE) .

# The Job as it will be applied (kubectl apply -k deploy/kubernetes/base).
manifests:
	kubectl kustomize deploy/kubernetes/base

test:
	go test ./...
