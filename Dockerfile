# syntax=docker/dockerfile:1
# The sidecar image: a static binary on distroless, non-root.
#   docker build --build-arg VERSION=$(git describe --tags --always) -t agentsidecar .
# Ports: 7480 API (binds 127.0.0.1 by default: the pod's own containers),
#        9464 ops (/metrics, /healthz, /readyz, /openapi.json).

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath \
      -ldflags "-s -w -X github.com/agentsidecar/agentsidecar/sidecar.Version=${VERSION}" \
      -o /out/sidecar ./cmd/sidecar

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/sidecar /usr/local/bin/sidecar
USER 65532:65532
EXPOSE 7480 9464
ENTRYPOINT ["/usr/local/bin/sidecar"]
