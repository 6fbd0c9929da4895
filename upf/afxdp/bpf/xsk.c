// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// xsk_redirect steers the UPF's own traffic on one interface into the
// AF_XDP sockets of package afxdp and passes everything else (ARP, ICMP
// to the host, SSH, other UDP, fragments) to the kernel stack.
//
//   N3 role: IPv4/UDP to the N3 address, destination port 2152 (GTP-U).
//   N6 role: IPv4 whose destination is in a UE pool (LPM trie `pools`).
//
// A socket only receives frames of the (device, queue) it is bound to
// (the kernel's xsk_rcv_check), so the program can only redirect to the
// XSKMAP slot of the receive queue. It still hashes the steering key (the
// TEID uplink, the UE address downlink) into one of NBUCKETS buckets and
// counts per bucket, so user space sees how flows would spread and which
// bucket is hot; `indir` maps buckets to queues for a NIC or software
// steering stage and is not yet applied here (see the package doc).
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define MAX_QUEUES 64
#define NBUCKETS 256
#define GTPU_PORT 2152

enum role { ROLE_N3 = 1, ROLE_N6 = 2 };

struct config {
	__u32 role;
	__u32 n3_addr; // network byte order
};

struct lpm_v4 {
	__u32 prefixlen;
	__u32 addr; // network byte order
};

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 64);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct lpm_v4);
	__type(value, __u32);
} pools SEC(".maps");

// Per-queue counters of frames redirected (index = rx queue) and of
// frames a socket was missing for (index MAX_QUEUES + rx queue).
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2 * MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u64);
} qstats SEC(".maps");

// Frames per steering bucket.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NBUCKETS);
	__type(key, __u32);
	__type(value, __u64);
} buckets SEC(".maps");

// Bucket -> queue indirection table, written from Go.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NBUCKETS);
	__type(key, __u32);
	__type(value, __u32);
} indir SEC(".maps");

static __always_inline void count(void *map, __u32 key)
{
	__u64 *v = bpf_map_lookup_elem(map, &key);
	if (v)
		*v += 1;
}

// A multiplicative hash (Knuth) of the steering key: TEIDs and UE
// addresses are often allocated sequentially, so the low bits alone would
// not mix.
static __always_inline __u32 bucket_of(__u32 key)
{
	return (key * 2654435761u) >> 24; // top 8 bits: NBUCKETS = 256
}

SEC("xdp")
int xsk_redirect(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u32 zero = 0;
	struct config *cfg = bpf_map_lookup_elem(&config, &zero);
	if (!cfg)
		return XDP_PASS;

	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->version != 4 || ip->ihl < 5)
		return XDP_PASS;
	// Fragments go to the kernel, which reassembles them for the
	// driver's fallback socket.
	if (ip->frag_off & bpf_htons(0x3fff))
		return XDP_PASS;

	__u32 key;
	if (cfg->role == ROLE_N3) {
		if (ip->protocol != IPPROTO_UDP || ip->daddr != cfg->n3_addr)
			return XDP_PASS;
		struct udphdr *udp = (void *)ip + ip->ihl * 4;
		if ((void *)(udp + 1) > end || udp->dest != bpf_htons(GTPU_PORT))
			return XDP_PASS;
		__u8 *gtp = (void *)(udp + 1);
		key = 0;
		if ((void *)(gtp + 8) <= end)
			key = bpf_ntohl(*(__u32 *)(gtp + 4)); // TEID
	} else if (cfg->role == ROLE_N6) {
		struct lpm_v4 k = { .prefixlen = 32, .addr = ip->daddr };
		if (!bpf_map_lookup_elem(&pools, &k))
			return XDP_PASS;
		key = bpf_ntohl(ip->daddr);
	} else {
		return XDP_PASS;
	}

	count(&buckets, bucket_of(key));
	__u32 q = ctx->rx_queue_index;
	if (q >= MAX_QUEUES)
		return XDP_PASS;
	if (!bpf_map_lookup_elem(&xsks, &q)) {
		count(&qstats, MAX_QUEUES + q);
		return XDP_PASS;
	}
	count(&qstats, q);
	return bpf_redirect_map(&xsks, q, XDP_PASS);
}

char _license[] SEC("license") = "Dual BSD/GPL";
