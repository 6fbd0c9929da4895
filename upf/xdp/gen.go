package xdp

// The BPF object and its Go bindings (upf_bpfel.go, upf_bpfel.o) are
// generated from bpf/upf.c and committed, so that a build needs no clang;
// `make bpf` regenerates them.
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -target bpfel -type sess -type index_entry -type rule -type pdr_act -type qer_ref -type config -type port -type ifinfo -type bucket -type usage -type flow_key -type flow_val -type nexthop -type kdst -type ifmac upf bpf/upf.c -- -I/usr/include/x86_64-linux-gnu -O2 -g -Wall -Werror -mcpu=v3

// The digest of the C the committed object was built from; TestObjectFresh
// fails when bpf/upf.c changes without `make bpf` (the trailing bpf2go is
// sh's $0: it lets `go generate -run bpf2go` select this line too).
//go:generate sh -c "sha256sum bpf/upf.c | cut -c1-64 > bpf/upf.c.sha256" bpf2go
