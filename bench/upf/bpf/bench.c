// SPDX-License-Identifier: GPL-2.0
//
// The XDP programs of `tern bench upf` (package bench/upf):
//
//   xdp_gen   the traffic generator, run with BPF_PROG_RUN in live-frames
//             mode on the sending veth: stamps each frame (session index,
//             sequence number, bpf_ktime_get_ns) and sends it with XDP_TX.
//   xdp_sink  on the receiving veth: counts what arrives, reads the stamp
//             behind the headers (GTP-U parsed when present) and records the
//             one-way latency in a histogram, then drops the frame.
//   xdp_fwd   the bare-xdp reference on the core's veths: rewrites the MACs
//             and bpf_redirect()s to the other veth, nothing else.
//   xdp_fwd_lookup
//             bare-xdp-lookup: xdp_fwd that first finds the frame's session
//             in a hash map, by TEID or UE address.
//   xdp_fwd_steer, xdp_fwd_cpu
//             bare-xdp-cpu: the same forwarder behind a cpumap, on the CPU
//             tern's xdp driver is given (-xdp-cpus).
//   xdp_pass  XDP_PASS: a veth receives frames that its peer sends with
//             XDP_TX/XDP_REDIRECT only when it has an XDP program (its NAPI
//             is off otherwise), so kernel-stack receivers get this one.
//
// Generator and sink share bpf_ktime_get_ns: the same clock on one host.

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define STAMP_MAGIC 0x7465726eU /* "tern" */
#define GTPU_PORT 2152

// Histogram buckets (hist.go keeps the same layout): 1 µs wide below
// LINEAR_US, then SUB buckets per power of two up to 2^MAX_EXP µs.
#define LINEAR_US 2048
#define LINEAR_EXP 11
#define SUB_BITS 6
#define SUB (1 << SUB_BITS)
#define MAX_EXP 31
#define NBUCKETS (LINEAR_US + (MAX_EXP - LINEAR_EXP) * SUB)

// The stamp the generator writes and the sink reads (stamp.go).
struct stamp {
	__u32 magic;
	__u32 session;
	__u64 seq;
	__u64 ts;
};

// ---- generator ----

// Generator configuration (genConfig in gen.go).
struct gen_config {
	__u32 sessions;   // the session index cycles over 0..sessions-1
	__u32 teid_off;   // offset of the GTP-U TEID, 0 = none
	__u32 teid_base;  // TEID of session 0
	__u32 ip_off;     // offset of the IPv4 header whose address varies, 0 = none
	__u32 addr_off;   // 12 (source) or 16 (destination) within it
	__u32 addr_base;  // address of session 0, host order
	__u32 stamp_off;  // offset of struct stamp
	__u32 hdr_words;  // 8-byte words of gen_hdr copied to the frame's start
	__u64 interval;   // ns between frames; 0 = as fast as it can
	__u64 stop;       // bpf_ktime_get_ns after which nothing is sent; 0 = never
	__u32 stride;     // 0: sessions in index order; else frame k goes to session k*stride mod sessions
	__u32 pad;
};

// The frame's headers, written into every frame before the per-frame
// fields: live frames are recycled without being reset, and a frame that
// went up the kernel stack comes back with what the stack wrote into it
// (the next hop's MACs, a decremented TTL).
#define HDR_WORDS 16
struct hdr {
	__u64 w[HDR_WORDS];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hdr);
} gen_hdr SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gen_config);
} gen_cfg SEC(".maps");

// gen_state counts the frames sent: the offered load is read from it, not
// from the repeat count, because an interrupted BPF_PROG_RUN is restarted.
// next is when the next frame is due when paced.
struct gen_state {
	__u64 seq;
	__u64 next;
	__u64 first; // when the first and last frames of this run were sent
	__u64 last;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gen_state);
} gen_state SEC(".maps");

// A paced generator that fell behind catches up with at most this many
// frames back to back.
#define PACE_BURST 32

static __always_inline __u16 csum_fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

static __always_inline void ipv4_csum(struct iphdr *ip)
{
	__u16 *w = (__u16 *)ip;
	__u32 sum = 0;
	ip->check = 0;
#pragma unroll
	for (int i = 0; i < 10; i++)
		sum += w[i];
	ip->check = csum_fold(sum);
}

SEC("xdp")
int xdp_gen(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u32 k = 0;
	struct gen_config *c = bpf_map_lookup_elem(&gen_cfg, &k);
	struct gen_state *gs = bpf_map_lookup_elem(&gen_state, &k);
	struct hdr *h = bpf_map_lookup_elem(&gen_hdr, &k);
	if (!c || !gs || !h)
		return XDP_ABORTED;
	// A run ends at a time, not after a count: a BPF_PROG_RUN call costs
	// a fixed setup and teardown, so the caller makes one long call and
	// the frames past the stop are dropped unsent (a live frame's
	// XDP_DROP only recycles it).
	__u64 now = bpf_ktime_get_ns();
	if (c->stop && now >= c->stop)
		return XDP_DROP;
	if (c->interval) {
		// Paced: frames not yet due are dropped unsent too, so the
		// program spins on the clock and spaces the frames evenly.
		if (now < gs->next)
			return XDP_DROP;
		__u64 next = gs->next + c->interval;
		if (next + PACE_BURST * c->interval < now)
			next = now;
		gs->next = next;
	}
	__u64 *w = data;
	for (int i = 0; i < HDR_WORDS; i++) {
		if (i >= c->hdr_words || (void *)(w + i + 1) > end)
			break;
		w[i] = h->w[i];
	}
	__u64 seq = __sync_fetch_and_add(&gs->seq, 1);
	if (!gs->first)
		gs->first = now;
	gs->last = now;
	__u32 n = c->sessions ? c->sessions : 1;
	// With a stride coprime to n, k*stride mod n visits every session once
	// per n frames, each far from the last.
	__u32 idx = (c->stride ? seq * c->stride : seq) % n;

	if (c->teid_off) {
		__u32 off = c->teid_off & 0xfff;
		__u32 *t = data + off;
		if ((void *)(t + 1) > end)
			return XDP_ABORTED;
		*t = bpf_htonl(c->teid_base + idx);
	}
	if (c->ip_off) {
		__u32 off = c->ip_off & 0xfff;
		struct iphdr *ip = data + off;
		if ((void *)(ip + 1) > end)
			return XDP_ABORTED;
		__u32 a = bpf_htonl(c->addr_base + idx);
		if (c->addr_off == 16)
			ip->daddr = a;
		else
			ip->saddr = a;
		ipv4_csum(ip);
	}
	__u32 soff = c->stamp_off & 0xfff;
	struct stamp *s = data + soff;
	if ((void *)(s + 1) > end)
		return XDP_ABORTED;
	s->magic = STAMP_MAGIC;
	s->session = idx;
	s->seq = seq;
	s->ts = bpf_ktime_get_ns();
	return XDP_TX;
}

// ---- sink ----

// Per-CPU counters and latency histogram (sinkStats in sink.go).
struct sink_stats {
	__u64 packets;   // stamped frames
	__u64 bytes;     // their frame bytes
	__u64 other;     // frames without a stamp
	__u64 lat_sum;   // ns
	__u64 ipdv_sum;  // |latency - previous latency| summed, ns (RFC 3393)
	__u64 ipdv_n;
	__u64 last_lat;
	__u64 hist[NBUCKETS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sink_stats);
} sink_stats SEC(".maps");

// seen has one bit per session index: which sessions reached the sink.
#define SEEN_WORDS 4096 /* 262,144 sessions */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SEEN_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} seen SEC(".maps");

static __always_inline __u32 bucket(__u64 ns)
{
	__u64 us = ns / 1000;
	if (us < LINEAR_US)
		return us;
	__u32 e = 0;
	__u64 v = us;
	if (v >> 32) { e += 32; v >>= 32; }
	if (v >> 16) { e += 16; v >>= 16; }
	if (v >> 8) { e += 8; v >>= 8; }
	if (v >> 4) { e += 4; v >>= 4; }
	if (v >> 2) { e += 2; v >>= 2; }
	if (v >> 1) { e += 1; }
	if (e >= MAX_EXP)
		return NBUCKETS - 1;
	__u32 sub = (us >> (e - SUB_BITS)) & (SUB - 1);
	return LINEAR_US + (e - LINEAR_EXP) * SUB + sub;
}

SEC("xdp")
int xdp_sink(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u32 k = 0;
	struct sink_stats *st = bpf_map_lookup_elem(&sink_stats, &k);
	if (!st)
		return XDP_DROP;

	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		goto other;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_UDP)
		goto other;
	struct udphdr *udp = (void *)ip + ip->ihl * 4;
	if ((void *)(udp + 1) > end)
		goto other;
	void *p = udp + 1;
	if (udp->dest == bpf_htons(GTPU_PORT)) {
		// GTP-U (TS 29.281 §5.1): 8 bytes, 4 more when E, S or PN is
		// set, then the extension headers: length in 4-byte units, the
		// next type in the last byte.
		__u8 *g = p;
		if ((void *)(g + 12) > end)
			goto other;
		__u32 off = 8;
		if (g[0] & 0x07) {
			__u8 next = g[11];
			off = 12;
			for (int i = 0; i < 4 && next; i++) {
				__u8 *x = p + off;
				if ((void *)(x + 1) > end)
					goto other;
				__u32 len = x[0] * 4;
				if (!len)
					goto other;
				off += len;
				off &= 0xff;
				__u8 *nx = p + off - 1;
				if ((void *)(nx + 1) > end)
					goto other;
				next = *nx;
			}
		}
		struct iphdr *in = p + off;
		if ((void *)(in + 1) > end || in->protocol != IPPROTO_UDP)
			goto other;
		struct udphdr *iu = (void *)in + (in->ihl & 0xf) * 4;
		if ((void *)(iu + 1) > end)
			goto other;
		p = iu + 1;
	}
	struct stamp *s = p;
	if ((void *)(s + 1) > end || s->magic != STAMP_MAGIC)
		goto other;

	__u64 now = bpf_ktime_get_ns();
	__u64 lat = now > s->ts ? now - s->ts : 0;
	st->packets++;
	st->bytes += end - data;
	st->lat_sum += lat;
	if (st->ipdv_n || st->last_lat) {
		st->ipdv_sum += lat > st->last_lat ? lat - st->last_lat : st->last_lat - lat;
		st->ipdv_n++;
	}
	st->last_lat = lat ? lat : 1;
	__u32 b = bucket(lat);
	// Keep the compiler from indexing with a copy of b that skipped the
	// bounds check below (the verifier rejects that).
	asm volatile("" : "+r"(b));
	if (b < NBUCKETS)
		st->hist[b]++;

	__u32 w = s->session / 64;
	__u64 *word = bpf_map_lookup_elem(&seen, &w);
	if (word) {
		__u64 bit = 1ULL << (s->session % 64);
		if (!(*word & bit))
			__sync_fetch_and_or(word, bit);
	}
	return XDP_DROP;
other:
	st->other++;
	return XDP_DROP;
}

// ---- bare-xdp forwarder ----

struct fwd_port {
	__u32 out_ifindex;
	__u8 src[ETH_ALEN];
	__u8 dst[ETH_ALEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32); // ingress ifindex
	__type(value, struct fwd_port);
} fwd_ports SEC(".maps");

// fwd_to sends the frame (eth at its start) to f's next hop.
static __always_inline int fwd_to(struct ethhdr *eth, struct fwd_port *f)
{
	__builtin_memcpy(eth->h_source, f->src, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, f->dst, ETH_ALEN);
	return bpf_redirect(f->out_ifindex, 0);
}

SEC("xdp")
int xdp_fwd(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u32 in = ctx->ingress_ifindex;
	struct fwd_port *f = bpf_map_lookup_elem(&fwd_ports, &in);
	struct ethhdr *eth = data;
	if (!f || (void *)(eth + 1) > end)
		return XDP_PASS;
	return fwd_to(eth, f);
}

// ---- bare-xdp-lookup: the bare forwarder that finds a session first ----
//
// The floor of any UPF that keeps its sessions in BPF hash maps: each
// frame's session is looked up by its key (the TEID of a G-PDU uplink, the
// destination address downlink) among as many entries as the run has
// sessions, and the entry gives the frame's next hop. The maps are the
// kind upf/xdp keeps the sessions its index cannot hold in (hash, elements
// allocated as they are added); the entry holds the next hop alone, less
// than a UPF's session, so the lookup's cost is the least it can be.

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1); // the run's most sessions, set by the loader
	__type(key, __u32);     // TEID, host order
	__type(value, struct fwd_port);
} fwd_teids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1);
	__type(key, __u32); // UE address, network order
	__type(value, struct fwd_port);
} fwd_ues SEC(".maps");

SEC("xdp")
int xdp_fwd_lookup(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5)
		return XDP_PASS;
	struct fwd_port *f;
	struct udphdr *udp = (void *)(ip + 1);
	__u8 *g = (void *)(udp + 1);
	if (ip->protocol == IPPROTO_UDP && (void *)(g + 8) <= end && udp->dest == bpf_htons(2152)) {
		__u32 teid = ((__u32)g[4] << 24) | ((__u32)g[5] << 16) | ((__u32)g[6] << 8) | g[7];
		f = bpf_map_lookup_elem(&fwd_teids, &teid);
	} else {
		f = bpf_map_lookup_elem(&fwd_ues, &ip->daddr);
	}
	if (!f)
		return XDP_PASS;
	return fwd_to(eth, f);
}

// ---- bare-xdp-cpu: the bare-xdp forwarder on another CPU ----
//
// The reference for tern's xdp driver with upf.xdpCPUs: xdp_fwd_steer on
// the core's veths hands every frame through a cpumap to the CPU in
// fwd_cpu, whose cpumap thread runs xdp_fwd_cpu, the bare forwarder. The
// same path as the steered UPF (receiving CPU, cpumap queue, kthread on a
// CPU of its own), without the UPF's work.

struct {
	__uint(type, BPF_MAP_TYPE_CPUMAP);
	__uint(max_entries, 1); // possible CPUs, set by the loader
	__type(key, __u32);
	__type(value, struct bpf_cpumap_val);
} fwd_cpus SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} fwd_cpu SEC(".maps");

SEC("xdp")
int xdp_fwd_steer(struct xdp_md *ctx)
{
	__u32 zero = 0;
	__u32 *cpu = bpf_map_lookup_elem(&fwd_cpu, &zero);
	if (!cpu)
		return XDP_PASS;
	return bpf_redirect_map(&fwd_cpus, *cpu, 0);
}

SEC("xdp/cpumap")
int xdp_fwd_cpu(struct xdp_md *ctx)
{
	return xdp_fwd(ctx);
}

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
