# tern: the 5G core in a container.
#   docker build -t tern .
#   docker run --rm --cap-add NET_ADMIN --device /dev/net/tun -e TERN_N3_IP=$(hostname -I | cut -d' ' -f1) \
#       -p 38412:38412/sctp -p 9899:9899/udp -p 2152:2152/udp -v tern-data:/var/lib/tern tern
# (TERN_N3_IP: the host's address the gNBs reach N3 at; deploy/README.md.)
# The build stage needs no .git: the commit comes in as a build argument
# (docker build --build-arg COMMIT=$(git rev-parse --short=12 HEAD) .).

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
COPY third_party ./third_party
RUN go mod download
COPY . .
ARG COMMIT=unknown
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "-s -w -X main.commit=${COMMIT}" -o /out/tern ./cmd/tern

FROM debian:bookworm-slim
# iproute2: the UPF's N6 TUN routes; ca-certificates for nothing tern needs
# today, so left out. hostname (for the entrypoint) is in the base image.
RUN apt-get update && apt-get install -y --no-install-recommends iproute2 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/tern /usr/local/bin/tern
COPY deploy/docker/entrypoint.sh /usr/local/bin/tern-entrypoint
COPY deploy/docker/tern.yaml.in /usr/share/tern/tern.yaml.in
VOLUME /var/lib/tern
# N2: NGAP over SCTP (kernel SCTP where the host has it) and SCTP over UDP
# (RFC 6951); N3: GTP-U; N4: PFCP.
EXPOSE 38412/sctp 9899/udp 2152/udp 8805/udp
ENTRYPOINT ["tern-entrypoint"]
CMD ["up"]
