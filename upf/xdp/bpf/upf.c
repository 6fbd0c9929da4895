// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// tern UPF XDP fast path: the common case of the user plane executed in
// the kernel. upf_n3 decapsulates uplink G-PDUs towards N6; upf_n6
// encapsulates downlink IP packets towards the gNB. Everything the
// programs do not understand, or cannot do exactly as the host path
// (package upf/upfu) would, is XDP_PASSed to the kernel stack, where the
// host path handles it: the programs fail closed. See upf/xdp/xdp.go.
//
// Every decoder bounds-checks against data_end before it reads (the
// verifier enforces it); offsets computed from packet bytes are bounded
// explicitly first.

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define AF_INET 2
#define GTPU_PORT 2152

// Sizes shared with the Go side (xdp.go: maxRules, maxPDRs, ...).
#define MAX_RULES 8  // classifier rules per TEID / UE address
#define MAX_PDRS 4   // distinct PDRs those rules lead to
#define MAX_QERS 2   // QERs per PDR
#define MAX_URRS 2   // URRs per PDR
#define MAX_PORTS 16 // N6 ports (network instances)
#define MAX_EXT 4    // GTP-U extension headers walked
#define MAX_GTP_OFF 128 // longest GTP-U header handled (bytes)
#define MAX_KDSTS 16 // destinations the next-hop cache is not used for

#define NO_MATCH 0xff

// Rule flags.
#define RF_QFI 1
#define RF_PROTO 2

// PDR actions, compiled by the Go side from the FAR (TS 29.244 §5.2.3).
enum action {
	ACT_PASS = 0, // hand to the host path (buffer, N9, unknown N6, ...)
	ACT_DROP = 1, // FAR drop: counted drop
	ACT_N6 = 2,   // uplink: decapsulate and send to an N6 port
	ACT_GTP = 3,  // downlink: encapsulate towards the gNB
};

// Statistics, by reason. Mirrored by statNames in xdp.go.
enum stat {
	ST_FWD_UL,
	ST_FWD_DL,
	ST_PASS_NOT_IP,      // not Ethernet/IPv4
	ST_PASS_MAC,         // not addressed to the interface's MAC
	ST_PASS_IP_OPTS,     // outer or inner IPv4 with options, or a bad header
	ST_PASS_FRAG,        // IPv4 fragment
	ST_PASS_NOT_GTP,     // not UDP/2152 to the N3 address
	ST_PASS_GTP_MSG,     // GTP-U other than a G-PDU (echo, error ind., end marker)
	ST_PASS_GTP_EXT,     // extension header the program does not walk
	ST_PASS_UNKNOWN_TEID,
	ST_PASS_NO_SESSION,  // downlink: no session for the destination
	ST_PASS_INNER,       // inner packet not plain IPv4 or malformed
	ST_PASS_NO_PDR,
	ST_PASS_FAR,         // FAR action the fast path leaves to the host
	ST_PASS_FIB,         // next hop not resolved (no neighbour, other port, ...)
	ST_PASS_MTU,
	ST_PASS_TTL,
	ST_PASS_OTHER,
	ST_DROP_MALFORMED,   // malformed GTP-U
	ST_DROP_FAR,
	ST_DROP_GATE,
	ST_DROP_MBR,
	ST_FLOW_HIT,
	ST_FLOW_MISS,
	ST_MAX,
};

// One classifier rule: the PDI of a PDR (TS 29.244 §5.2.1) reduced to
// what the program evaluates. Prefix values are pre-masked; mask 0 and
// the port range 0-65535 match everything.
struct rule {
	__be32 src, src_mask;
	__be32 dst, dst_mask;
	__be32 ue, ue_mask; // uplink: the UE IP address IE on the inner source
	__u16 sport_lo, sport_hi;
	__u16 dport_lo, dport_hi;
	__u8 flags;
	__u8 qfi, proto;
	__u8 tos, tos_mask;
	__u8 pdr; // index into sess.pdrs
	__u8 pad[2];
};

struct qer_ref {
	__u32 bucket; // MBR bucket slot + 1; 0: no MBR in this direction
	__u8 open;    // gate open in this direction
	__u8 pad[3];
};

// A PDR with its FAR, QERs and URRs resolved for one direction.
struct pdr_act {
	__u16 pdr_id;
	__u8 action;
	__u8 port;      // ACT_N6: N6 port index
	__u32 teid;     // ACT_GTP: outer TEID
	__be32 peer;    // ACT_GTP: gNB address
	__be16 peer_port;
	__u8 qfi;       // ACT_GTP: QFI for the DL PDU Session Container
	__u8 nqer;
	__u8 nurr;
	__u8 pad;
	__u16 hop;      // ACT_GTP: the gNB's peer_slot index; 0: none
	struct qer_ref qer[MAX_QERS];
	__u32 urr[MAX_URRS]; // URR slots
};

// The rules of one session for one key (a TEID or the UE address).
//
// Laid out for the common session, one rule leading to one PDR: the
// header, the first PDR and the first rule open the entry and share its
// first two cache lines, so neither the rule scan nor its result waits for
// a further miss. At 100,000 sessions most entries are in no cache.
// pdr_at finds a PDR by index.
struct sess {
	__u32 gen;     // changes with every Install: flow cache entries expire
	__u8 nrules;
	__u8 sdf;      // rules look into the inner 5-tuple: consult the flow cache
	__u8 pad[2];
	struct pdr_act pdr0;                // PDR 0
	struct rule rules[MAX_RULES];
	struct pdr_act pdrs[MAX_PDRS - 1]; // PDRs 1..
};

// pdr_at is PDR idx of s, or 0 for no PDR (NO_MATCH, or out of range).
static __always_inline struct pdr_act *pdr_at(struct sess *s, __u32 idx)
{
	if (idx == 0)
		return &s->pdr0;
	if (idx >= MAX_PDRS)
		return 0;
	return &s->pdrs[idx - 1];
}

// kdst is a prefix of destinations the kernel routes itself (see config).
struct kdst {
	__be32 addr, mask;
};

// ifmac is an interface and its Ethernet address.
struct ifmac {
	__u32 ifindex;
	__u8 mac[6];
	__u8 pad[2];
};

struct config {
	__be32 n3_addr;
	__u32 n3_ifindex;
	__u8 n3_mac[6]; // the N3 interface's: no ifaces lookup per uplink packet
	__u8 pad[2];
	__u32 max_inner; // downlink: the longest inner packet that fits N3
	__u32 nkdst;
	// Uplink destinations for which a port's gateway is not the next hop
	// whatever the configuration says: the UE pools (a UE-to-UE packet
	// goes back down through the host path) and the UPF's own addresses.
	// They take the FIB lookup, which finds the kernel's own route.
	struct kdst kdst[MAX_KDSTS];
	// The interfaces downlink arrives on (the N6 ports', N3 when it is
	// one) with their addresses: scanning these few costs less than the
	// ifaces hash lookup, a fifth of the downlink program's time.
	__u32 nn6if;
	struct ifmac n6if[MAX_PORTS];
};

// nexthop is where packets to an address (an N6 gateway, a gNB) leave, as
// the kernel's route and neighbour tables said when user space last looked
// (package nexthop refreshes it every second). It saves the FIB lookups,
// the largest cost of a packet. An address not in the map takes the FIB
// lookup, which passes the packet up when its neighbour is unresolved.
struct nexthop {
	__u32 ifindex;
	__u32 mtu;
	__u8 dmac[6];
	__u8 smac[6];
};

struct port {
	__u32 ifindex;
	__be32 gw;  // 0: none, route on the inner destination
	__u32 hop;  // the gateway's next hop: port_hops slot + 1; 0: none yet
};

struct ifinfo {
	__u8 mac[6];
	__u8 n3, n6;
};

// GCRA state of one MBR (rules.TokenBucket, the same algorithm).
struct bucket {
	__u64 tat;         // theoretical arrival time, ns (bpf_ktime_get_ns)
	__u64 ns_per_byte; // 1e9/rate in 1/65536 ns
	__u64 burst_ns;
};

struct usage {
	__u64 ul_pkts, ul_bytes, dl_pkts, dl_bytes;
};

struct flow_key {
	__u8 dir, proto, qfi, tos;
	__u32 id; // TEID (uplink) or UE address (downlink)
	__be32 src, dst;
	__be16 sport, dport;
};

struct flow_val {
	__u32 gen;
	__u32 idx; // PDR index, NO_MATCH
};

// The session index: a session whose key (TEID, UE address) has one
// rule that looks at no more than the UE address and the QFI, leading to
// one PDR, nearly every session, has an entry at a place its key names,
// teid_index[teid & index_mask] and ue_index[ue & index_mask] (ue in host
// order): one array access and one cache line, where the hash maps below
// cost two or three misses (the bucket head, the element; at 100,000
// sessions visited in no order every one a miss). Sessions the index
// cannot hold (more rules or PDRs, SDF filters, a key whose place another
// key holds) are in the hash maps, which the programs consult when the
// index has no entry for the key.
//
// The loader writes the index through a mapping of it, never while a
// program may read the entry: an entry is published by storing its key
// last, and a published entry is never written again; to change or
// remove it, the loader stores key 0 (the change going to the hash map
// first), and writes the place again only after every program run that
// may have read the old key has ended (xdp.go: sessionIndex). The key is
// read before the rest, and x86 keeps loads in order.
struct index_entry {
	__u32 key;          // the TEID, the UE address (as in the packet); 0: none
	__be32 ue, ue_mask; // the rule: uplink, the UE IP address on the inner source
	__u8 flags, qfi;    // the rule: RF_QFI, and the QFI
	__u8 pad[6];
	struct pdr_act pdr;
};

_Static_assert(sizeof(struct index_entry) == 64, "index_entry is a cache line");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 131072);
	__type(key, __u32);
	__type(value, struct index_entry);
} teid_index SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 131072);
	__type(key, __u32);
	__type(value, struct index_entry);
} ue_index SEC(".maps");

// index_mask is the index's size - 1, a power of two (the loader sets it).
volatile const __u32 index_mask = 0;

// Capacities are set by the loader before the maps are created.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 131072);
	__type(key, __u32);
	__type(value, struct sess);
} teids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 131072);
	__type(key, __be32);
	__type(value, struct sess);
} ues SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 262144);
	__type(key, __u32);
	__type(value, struct bucket);
} buckets SEC(".maps");

// clock: the monotonic time (bpf_ktime_get_ns) as a BPF timer stores it
// every CLOCK_TICK_NS, read by qos with one load. A clock helper is a
// call into the kernel, and on a kernel with return-stack mitigations
// (SRSO "safe RET" on the AMD hosts these benches ran on) a call and its
// returns cost some 10-15 ns a packet in the path, about half of what the
// programs added to a bare forwarder; the stored time costs a load. It
// is never ahead of the true time, so it can only judge a bucket more
// strictly (an "over the rate" answer is checked again with
// bpf_ktime_get_ns), and an idle bucket restarts at most one tick early:
// at most a tick's worth of bytes (1 ms) above the burst UPF-C
// configures. Until upf_clock_start has armed the timer now is 0, and qos
// reads the clock itself.
#define CLOCK_TICK_NS 1000000
#define CLOCK_MONOTONIC 1

struct clock {
	__u64 now;
	struct bpf_timer timer;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct clock);
} clock SEC(".maps");

// urrs: the URR counters, each CPU's in a region of its own: CPU c counts
// slot s at c * urr_slots + s. One array, not a per-CPU one: a per-CPU
// array's element is reached through a table of pointers, a second cache
// and TLB miss when the session's state is in no cache (100,000 sessions
// visited in no order: some 40-100 ns a packet). Each CPU writes only its
// region, so the counts need no atomics; user space reads them through
// the mapping (BPF_F_MMAPABLE), with no system call.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 262144); // urr_slots times the possible CPUs
	__type(key, __u32);
	__type(value, struct usage);
} urrs SEC(".maps");

// urr_slots is the URR slots per CPU (the loader sets it).
volatile const __u32 urr_slots = 1;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ST_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct flow_key);
	__type(value, struct flow_val);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct config);
} cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_PORTS);
	__type(key, __u32);
	__type(value, struct port);
} ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __be32);
	__type(value, struct nexthop);
} nexthops SEC(".maps");

// port_hops holds the next hop of each port's gateway, two slots per port
// (port i: 2i and 2i+1), so that the uplink finds it with an array index
// rather than a nexthops hash lookup (a sixth of the uplink program's
// time). The loader writes the slot not in use, points the port at it,
// then waits until no program still reads the old slot before it may
// write that one: a program never reads a slot being written
// (xdp.go: hopSlots). The nexthops map stays for what has no slot.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2 * MAX_PORTS);
	__type(key, __u32);
	__type(value, struct nexthop);
} port_hops SEC(".maps");

// The same for the gNBs of the downlink: a PDR names its gNB by an index
// (pdr_act.hop, given once per address and kept), whose peer_slot entry
// is the peer_hops slot + 1 in use (slots 2i and 2i+1 for index i).
#define MAX_PEERS 4096 // xdp.go: maxPeers

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_PEERS);
	__type(key, __u32);
	__type(value, __u32);
} peer_slot SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2 * MAX_PEERS);
	__type(key, __u32);
	__type(value, struct nexthop);
} peer_hops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, struct ifinfo);
} ifaces SEC(".maps");

// indexed is the index entry for key at place i, or 0.
static __always_inline struct index_entry *indexed(void *index, __u32 key, __u32 i)
{
	i &= index_mask;
	struct index_entry *e = bpf_map_lookup_elem(index, &i);
	if (!e || *(volatile __u32 *)&e->key != key)
		return 0;
	// The entry's other fields are read after its key, not hoisted above
	// it by the compiler (the CPU keeps loads in order on x86).
	asm volatile("" ::: "memory");
	return e;
}

// A session's rules for one key: an index entry, or else a hash map's.
struct found {
	struct index_entry *x;
	struct sess *s;
};

static __always_inline int find_teid(__u32 teid, struct found *f)
{
	f->x = indexed(&teid_index, teid, teid);
	f->s = f->x ? 0 : bpf_map_lookup_elem(&teids, &teid);
	return f->x || f->s;
}

static __always_inline int find_ue(__be32 ue, struct found *f)
{
	f->x = indexed(&ue_index, ue, bpf_ntohl(ue));
	f->s = f->x ? 0 : bpf_map_lookup_elem(&ues, &ue);
	return f->x || f->s;
}

static __always_inline void count(__u32 reason)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &reason);
	if (v)
		(*v)++;
}

static __always_inline int pass(__u32 reason)
{
	count(reason);
	return XDP_PASS;
}

static __always_inline int drop(__u32 reason)
{
	count(reason);
	return XDP_DROP;
}

static __always_inline __u16 csum_fold(__u32 s)
{
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)~s;
}

// ip_ok: a 20-byte IPv4 header with a correct checksum (the kernel's
// ip_rcv drops a bad one, so the host path would never forward it).
static __always_inline int ip_csum_ok(struct iphdr *ip)
{
	__u16 *w = (__u16 *)ip;
	__u32 s = 0;
#pragma unroll
	for (int i = 0; i < 10; i++)
		s += w[i];
	return csum_fold(s) == 0;
}

static __always_inline __u16 ip_csum(struct iphdr *ip)
{
	__u16 *w = (__u16 *)ip;
	__u32 s = 0;
#pragma unroll
	for (int i = 0; i < 10; i++)
		s += w[i];
	return csum_fold(s);
}

// ip_decrease_ttl as the kernel's forwarding path does it (RFC 1624).
static __always_inline void dec_ttl(struct iphdr *ip)
{
	__u32 c = ip->check;
	c += bpf_htons(0x0100);
	ip->check = (__u16)(c + (c >= 0xffff));
	ip->ttl--;
}

static __always_inline int mac_eq(const __u8 *a, const __u8 *b)
{
	return *(const __u32 *)a == *(const __u32 *)b &&
	       *(const __u16 *)(a + 4) == *(const __u16 *)(b + 4);
}

// The inner packet's fields the rules match.
struct pkt {
	__be32 src, dst;
	__u16 sport, dport; // host order
	__u8 proto, tos, qfi, pad;
};

static __always_inline int rule_match(const struct rule *r, const struct pkt *p)
{
	if ((p->src & r->src_mask) != r->src || (p->dst & r->dst_mask) != r->dst ||
	    (p->src & r->ue_mask) != r->ue)
		return 0;
	if (p->sport < r->sport_lo || p->sport > r->sport_hi ||
	    p->dport < r->dport_lo || p->dport > r->dport_hi)
		return 0;
	if ((r->flags & RF_PROTO) && p->proto != r->proto)
		return 0;
	if ((r->flags & RF_QFI) && p->qfi != r->qfi)
		return 0;
	if ((p->tos & r->tos_mask) != r->tos)
		return 0;
	return 1;
}

// classify returns the PDR index of the first rule that matches (the
// rules are in precedence order, TS 29.244 §5.2.1), or NO_MATCH. The flow
// cache (the first level of a two-level lookup) remembers the answer per
// inner 5-tuple for sessions whose rules look at it; its entries carry
// the session generation, so an Install invalidates them.
static __always_inline __u32 classify(struct sess *s, struct pkt *p, __u8 dir, __u32 id)
{
	struct flow_key k = {};
	if (s->sdf) {
		k.dir = dir;
		k.proto = p->proto;
		k.qfi = p->qfi;
		k.tos = p->tos;
		k.id = id;
		k.src = p->src;
		k.dst = p->dst;
		k.sport = p->sport;
		k.dport = p->dport;
		struct flow_val *v = bpf_map_lookup_elem(&flows, &k);
		if (v && v->gen == s->gen) {
			count(ST_FLOW_HIT);
			return v->idx;
		}
		count(ST_FLOW_MISS);
	}
	__u32 idx = NO_MATCH;
	for (int i = 0; i < MAX_RULES; i++) {
		if (i >= s->nrules)
			break;
		if (rule_match(&s->rules[i], p)) {
			idx = s->rules[i].pdr;
			break;
		}
	}
	if (s->sdf) {
		struct flow_val v = {.gen = s->gen, .idx = idx};
		bpf_map_update_elem(&flows, &k, &v, BPF_ANY);
	}
	return idx;
}

// match is the PDR whose rule matches p first, or 0: an index entry's one
// rule, or classify over a hash map entry's.
static __always_inline struct pdr_act *match(struct found *f, struct pkt *p, __u8 dir, __u32 id)
{
	if (f->x) {
		struct index_entry *x = f->x;
		if ((p->src & x->ue_mask) != x->ue || ((x->flags & RF_QFI) && p->qfi != x->qfi))
			return 0;
		return &x->pdr;
	}
	if (!f->s) // find_* said one is set; the verifier needs it shown
		return 0;
	return pdr_at(f->s, classify(f->s, p, dir, id));
}

// stored_now is the clock map's time, or the clock's own while the timer
// is not running.
static __always_inline __u64 stored_now(void)
{
	__u32 zero = 0;
	struct clock *c = bpf_map_lookup_elem(&clock, &zero);
	__u64 now = c ? *(volatile __u64 *)&c->now : 0;
	return now ? now : bpf_ktime_get_ns();
}

// mbr_allow is rules.TokenBucket.Allow: the generic cell rate algorithm
// with a compare-and-swap on the theoretical arrival time, lock-free as in
// Go. Under contention from other CPUs a packet tries a few times and then
// counts as over the rate: the conservative answer.
static __always_inline int mbr_allow(__u32 slot, __u32 n, __u64 now)
{
	struct bucket *b = bpf_map_lookup_elem(&buckets, &slot);
	if (!b)
		return 0;
	__u64 inc = ((__u64)n * b->ns_per_byte) >> 16;
#pragma unroll
	for (int i = 0; i < 4; i++) {
		__u64 old = *(volatile __u64 *)&b->tat;
		__u64 next = (old > now ? old : now) + inc;
		if (next - now > b->burst_ns)
			return 0;
		if (__sync_val_compare_and_swap(&b->tat, old, next) == old)
			return 1;
	}
	return 0;
}

// qos applies the PDR's QERs in order, gate then MBR each, as upfu's qos
// does (TS 29.244 §5.2.1, §5.4.2). Returns 0 or the drop reason.
//
// The clock: a packet is first judged with the stored time (the clock
// map: the same monotonic time, up to a tick old), and only one that time
// would drop with bpf_ktime_get_ns. A stored-time "allowed" is always right
// while the bucket has packets waiting (the stored time is earlier, so the
// test is stricter); when the bucket was idle it may start up to one tick
// earlier than the precise clock would, which grants at most a tick's
// worth of bytes (1 ms) more than the burst UPF-C configures (a tenth of a
// second's worth, upfc).
static __always_inline __u32 qos(struct pdr_act *a, __u32 n)
{
	__u64 stored = 0;
#pragma unroll
	for (int i = 0; i < MAX_QERS; i++) {
		if (i >= a->nqer)
			break;
		if (!a->qer[i].open)
			return ST_DROP_GATE;
		if (a->qer[i].bucket) {
			if (!stored)
				stored = stored_now();
			__u32 slot = a->qer[i].bucket - 1;
			if (!mbr_allow(slot, n, stored) && !mbr_allow(slot, n, bpf_ktime_get_ns()))
				return ST_DROP_MBR;
		}
	}
	return 0;
}

static __always_inline void usage_add(struct pdr_act *a, __u32 n, int dl)
{
	__u32 base = bpf_get_smp_processor_id() * urr_slots;
#pragma unroll
	for (int i = 0; i < MAX_URRS; i++) {
		if (i >= a->nurr)
			break;
		__u32 slot = base + a->urr[i];
		struct usage *u = bpf_map_lookup_elem(&urrs, &slot);
		if (!u)
			continue;
		if (dl) {
			u->dl_pkts++;
			u->dl_bytes += n;
		} else {
			u->ul_pkts++;
			u->ul_bytes += n;
		}
	}
}

// inner_parse reads the inner IPv4 packet at ip (n bytes available in the
// tunnel / frame): plain IPv4 without options, a good header checksum,
// total length within the bytes there, TTL left to forward. Fills p and
// returns the IP total length, or 0 with *why set.
static __always_inline __u32 inner_parse(struct iphdr *ip, void *end, __u32 avail, struct pkt *p, __u32 *why)
{
	if ((void *)(ip + 1) > end) {
		*why = ST_PASS_INNER;
		return 0;
	}
	if (ip->version != 4 || ip->ihl != 5) {
		*why = ST_PASS_INNER;
		return 0;
	}
	__u32 tot = bpf_ntohs(ip->tot_len);
	if (tot < sizeof(*ip) || tot > avail || !ip_csum_ok(ip)) {
		*why = ST_PASS_INNER;
		return 0;
	}
	if (ip->ttl <= 1) {
		// The kernel answers with ICMP Time Exceeded.
		*why = ST_PASS_TTL;
		return 0;
	}
	p->src = ip->saddr;
	p->dst = ip->daddr;
	p->proto = ip->protocol;
	p->tos = ip->tos;
	p->sport = p->dport = 0;
	// Only the first fragment carries the transport header (as upfu's
	// innerIP: later fragments match with ports 0).
	if ((ip->frag_off & bpf_htons(0x1fff)) == 0 &&
	    (p->proto == IPPROTO_TCP || p->proto == IPPROTO_UDP || p->proto == IPPROTO_SCTP) &&
	    tot >= sizeof(*ip) + 4) {
		__be16 *ports = (void *)(ip + 1);
		if ((void *)(ports + 2) > end) {
			*why = ST_PASS_INNER;
			return 0;
		}
		p->sport = bpf_ntohs(ports[0]);
		p->dport = bpf_ntohs(ports[1]);
	}
	return tot;
}

// fib resolves the next hop of a packet to dst as the kernel's routing
// would forward it, and its MACs in f, and requires it to leave through
// ifindex: the lookup is the host path's (the main routing tables, as for
// a packet the UPF writes to its TUN device or sends from its GTP-U
// socket), so a destination the kernel routes elsewhere (a local address,
// another UE's pool behind a TUN device, another interface) is left to
// the kernel. Anything but success (no neighbour yet, MTU, forwarding off)
// passes too; the kernel resolves ARP, so later packets take the fast path.
static __always_inline int fib(struct xdp_md *ctx, struct bpf_fib_lookup *f, __be32 src, __be32 dst,
			       __u32 ifindex, __u16 tot_len, __u32 flags)
{
	__builtin_memset(f, 0, sizeof(*f));
	f->family = AF_INET;
	f->ipv4_src = src;
	f->ipv4_dst = dst;
	f->ifindex = ifindex; // as if received there: the input lookup needs a device
	f->tot_len = tot_len;
	long rc = bpf_fib_lookup(ctx, f, sizeof(*f), flags);
	if (rc == BPF_FIB_LKUP_RET_FRAG_NEEDED)
		return ST_PASS_MTU;
	if (rc != BPF_FIB_LKUP_RET_SUCCESS || f->ifindex != ifindex)
		return ST_PASS_FIB;
	return 0;
}

// kernel_dst reports whether dst is one of the destinations the cached
// next hop of a port must not be used for (struct config).
static __always_inline int kernel_dst(struct config *c, __be32 dst)
{
#pragma unroll
	for (int i = 0; i < MAX_KDSTS; i++) {
		if (i >= c->nkdst)
			break;
		if ((dst & c->kdst[i].mask) == c->kdst[i].addr)
			return 1;
	}
	return 0;
}

// use_hop fills f from nh if it leaves through ifindex; 0 when there is
// no such next hop.
static __always_inline int use_hop(struct bpf_fib_lookup *f, struct nexthop *nh, __u32 ifindex)
{
	if (!nh || nh->ifindex != ifindex)
		return 0;
	f->ifindex = nh->ifindex;
	f->mtu_result = nh->mtu;
	__builtin_memcpy(f->dmac, nh->dmac, ETH_ALEN);
	__builtin_memcpy(f->smac, nh->smac, ETH_ALEN);
	return 1;
}

// cached_hop: the next hop of dst from the nexthops map.
static __always_inline int cached_hop(struct bpf_fib_lookup *f, __be32 dst, __u32 ifindex)
{
	return use_hop(f, bpf_map_lookup_elem(&nexthops, &dst), ifindex);
}

// slot_hop: the next hop in slot slot-1 of slots (0: none).
static __always_inline int slot_hop(struct bpf_fib_lookup *f, void *slots, __u32 slot, __u32 ifindex)
{
	if (!slot)
		return 0;
	slot--;
	return use_hop(f, bpf_map_lookup_elem(slots, &slot), ifindex);
}

// port_hop: the port's gateway from its own slot.
static __always_inline int port_hop(struct bpf_fib_lookup *f, struct port *pt)
{
	return slot_hop(f, &port_hops, *(volatile __u32 *)&pt->hop, pt->ifindex);
}

// peer_hop: the gNB of a downlink PDR from its slot.
static __always_inline int peer_hop(struct bpf_fib_lookup *f, __u32 id, __u32 ifindex)
{
	if (!id)
		return 0;
	__u32 *slot = bpf_map_lookup_elem(&peer_slot, &id);
	if (!slot)
		return 0;
	return slot_hop(f, &peer_hops, *(volatile __u32 *)slot, ifindex);
}

// ---------------------------------------------------------------- uplink

// n3: Ethernet / IPv4 / UDP 2152 / GTP-U G-PDU (TS 29.281 §5) from the
// gNB, decapsulated to N6. A frame that is not GTP-U for the N3 address
// returns minus the pass reason, not counted yet: on an interface that is
// N3 and N6 at once it is downlink.
static __always_inline int n3(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u32 zero = 0;

	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return -ST_PASS_NOT_IP;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end)
		return -ST_PASS_NOT_IP;
	struct config *c = bpf_map_lookup_elem(&cfg, &zero);
	if (!c)
		return pass(ST_PASS_OTHER);
	if (ip->version != 4 || ip->protocol != IPPROTO_UDP || ip->daddr != c->n3_addr)
		return -ST_PASS_NOT_GTP;
	if (ip->ihl != 5)
		return pass(ST_PASS_IP_OPTS);
	if (ip->frag_off & bpf_htons(0x3fff)) // MF or an offset: the kernel reassembles
		return pass(ST_PASS_FRAG);
	struct udphdr *udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > end)
		return -ST_PASS_NOT_GTP;
	if (udp->dest != bpf_htons(GTPU_PORT))
		return -ST_PASS_NOT_GTP;
	__u32 iptot = bpf_ntohs(ip->tot_len);
	__u32 ulen = bpf_ntohs(udp->len);
	if (iptot < sizeof(*ip) + sizeof(*udp) || (void *)ip + iptot > end ||
	    ulen < sizeof(*udp) || ulen > iptot - sizeof(*ip) || !ip_csum_ok(ip))
		return pass(ST_PASS_IP_OPTS); // the kernel judges a bad outer header
	__u32 ifindex = ctx->ingress_ifindex;
	if (ifindex == c->n3_ifindex) {
		if (!mac_eq(eth->h_dest, c->n3_mac))
			return pass(ST_PASS_MAC);
	} else {
		struct ifinfo *ifi = bpf_map_lookup_elem(&ifaces, &ifindex);
		if (!ifi || !mac_eq(eth->h_dest, ifi->mac))
			return pass(ST_PASS_MAC);
	}

	// TS 29.281 §5.1: version 1, PT 1; flags E, S, PN; type; length of
	// what follows the mandatory 8 octets; TEID.
	__u8 *g = (void *)(udp + 1);
	__u32 glen_max = ulen - sizeof(*udp);
	if (glen_max < 8 || (void *)(g + 8) > end)
		return drop(ST_DROP_MALFORMED);
	__u8 flags = g[0];
	if ((flags & 0xf0) != 0x30)
		return pass(ST_PASS_GTP_MSG); // not GTPv1-U: the host path decides
	if (g[1] != 255)
		return pass(ST_PASS_GTP_MSG); // echo, error indication, end marker: host path
	__u32 glen = 8 + (((__u32)g[2] << 8) | g[3]);
	if (glen > glen_max)
		return drop(ST_DROP_MALFORMED);
	__u32 teid = ((__u32)g[4] << 24) | ((__u32)g[5] << 16) | ((__u32)g[6] << 8) | g[7];

	__u32 off = 8;
	__u8 qfi = 0;
	if (flags & 0x07) {
		// The optional 4 octets are there if any of E, S, PN is set.
		if (glen < 12 || (void *)(g + 12) > end)
			return drop(ST_DROP_MALFORMED);
		__u8 next = (flags & 0x04) ? g[11] : 0;
		off = 12;
		for (int i = 0; i < MAX_EXT; i++) {
			if (next == 0)
				break;
			if (off >= glen)
				return drop(ST_DROP_MALFORMED);
			if (off > MAX_GTP_OFF)
				return pass(ST_PASS_GTP_EXT);
			__u8 *e = g + off;
			if ((void *)(e + 1) > end)
				return drop(ST_DROP_MALFORMED);
			// §5.2.1: length in 4-octet units, including the length
			// and next-type octets.
			__u32 n = (__u32)e[0] * 4;
			if (n == 0 || off + n > glen)
				return drop(ST_DROP_MALFORMED);
			if (next == 0x85) {
				// TS 38.415 §5.5.2.2 UL PDU SESSION INFORMATION: PDU
				// type in the high nibble, QFI in the low 6 bits.
				if (n < 4 || (void *)(e + 3) > end)
					return drop(ST_DROP_MALFORMED);
				if ((e[1] >> 4) != 1)
					return pass(ST_PASS_GTP_EXT); // not UL: leave it
				qfi = e[2] & 0x3f;
			} else if (next == 0x40) {
				if (n < 4)
					return drop(ST_DROP_MALFORMED);
			} else if ((next & 0x80) && next != 0x81 && next != 0x82 && next != 0x84 && next != 0xc0) {
				// Comprehension required and unknown (§5.2.1).
				return pass(ST_PASS_GTP_EXT);
			}
			__u8 *nx = e + n - 1;
			if ((void *)(nx + 1) > end)
				return drop(ST_DROP_MALFORMED);
			next = *nx;
			off += n;
		}
		if (next != 0)
			return pass(ST_PASS_GTP_EXT);
		if (off > glen)
			return drop(ST_DROP_MALFORMED);
	}
	if (off > MAX_GTP_OFF)
		return pass(ST_PASS_GTP_EXT);
	if (teid == 0)
		return pass(ST_PASS_UNKNOWN_TEID);
	struct found fs;
	if (!find_teid(teid, &fs))
		return pass(ST_PASS_UNKNOWN_TEID);

	struct pkt p = {.qfi = qfi};
	__u32 why = 0;
	struct iphdr *in = (void *)(g + off);
	__u32 n = inner_parse(in, end, glen - off, &p, &why);
	if (!n)
		return pass(why);
	struct pdr_act *a = match(&fs, &p, 0, teid);
	if (!a)
		return pass(ST_PASS_NO_PDR);
	if (a->action == ACT_DROP)
		return drop(ST_DROP_FAR);
	if (a->action != ACT_N6 || a->port >= MAX_PORTS)
		return pass(ST_PASS_FAR);
	__u32 pi = a->port;
	struct port *pt = bpf_map_lookup_elem(&ports, &pi);
	if (!pt || !pt->ifindex)
		return pass(ST_PASS_FAR);

	// The route of the inner destination decides, as on the host path;
	// with a gateway configured for the port, it is the next hop.
	struct bpf_fib_lookup f;
	__u32 r = 0;
	if (pt->gw && !kernel_dst(c, p.dst) && (port_hop(&f, pt) || cached_hop(&f, pt->gw, pt->ifindex))) {
		// The operator's gateway is the next hop of the data network.
		if (n > f.mtu_result)
			return pass(ST_PASS_MTU);
	} else {
		r = fib(ctx, &f, p.src, p.dst, pt->ifindex, n, pt->gw ? BPF_FIB_LOOKUP_SKIP_NEIGH : 0);
		if (!r && pt->gw)
			r = fib(ctx, &f, p.src, pt->gw, pt->ifindex, n, 0);
		if (r)
			return pass(r);
	}
	// Make room first: nothing is counted or changed (but link padding)
	// for a packet that then passes.
	__u32 hdr = (__u32)((void *)in - data) - sizeof(struct ethhdr);
	__u32 frame = (__u32)(end - data);
	__u32 want = sizeof(struct ethhdr) + hdr + n;
	if (frame > want && bpf_xdp_adjust_tail(ctx, -(int)(frame - want)))
		return pass(ST_PASS_OTHER);
	if (bpf_xdp_adjust_head(ctx, (int)hdr))
		return pass(ST_PASS_OTHER);
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	in = (void *)(eth + 1);
	if ((void *)(in + 1) > end)
		return XDP_ABORTED;
	r = qos(a, n);
	if (r)
		return drop(r);
	usage_add(a, n, 0);

	// Decapsulated: the inner packet, TTL decreased as the host path's
	// kernel forwarding does, behind a new Ethernet header.
	dec_ttl(in);
	__builtin_memcpy(eth->h_dest, f.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, f.smac, ETH_ALEN);
	eth->h_proto = bpf_htons(ETH_P_IP);
	count(ST_FWD_UL);
	return bpf_redirect(f.ifindex, 0);
}

// -------------------------------------------------------------- downlink

#define ENCAP_LEN (sizeof(struct iphdr) + sizeof(struct udphdr) + 16)

// n6_mac_ok: the frame is addressed to the downlink interface it arrived
// on (anything else is the host's, as the kernel would see it).
static __always_inline int n6_mac_ok(struct config *c, __u32 ifindex, const __u8 *dst)
{
#pragma unroll
	for (int i = 0; i < MAX_PORTS; i++) {
		if (i >= c->nn6if)
			break;
		if (c->n6if[i].ifindex == ifindex)
			return mac_eq(dst, c->n6if[i].mac);
	}
	return 0;
}

// n6: an IPv4 packet for a UE, encapsulated in GTP-U with a PDU Session
// Container (DL PDU SESSION INFORMATION, TS 38.415 §5.5.2.1) as
// gtpu.PutGPDUHeader writes it, and sent to the gNB.
static __always_inline int n6(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u32 zero = 0;

	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return pass(ST_PASS_NOT_IP);
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end)
		return pass(ST_PASS_NOT_IP);
	struct found fs;
	if (!find_ue(ip->daddr, &fs))
		return pass(ST_PASS_NO_SESSION);
	if (ip->ihl != 5 || ip->version != 4)
		return pass(ST_PASS_IP_OPTS);
	if (ip->frag_off & bpf_htons(0x3fff))
		return pass(ST_PASS_FRAG);
	struct config *c = bpf_map_lookup_elem(&cfg, &zero);
	if (!c)
		return pass(ST_PASS_OTHER);
	if (!n6_mac_ok(c, ctx->ingress_ifindex, eth->h_dest))
		return pass(ST_PASS_MAC);

	struct pkt p = {};
	__u32 why = 0;
	__u32 n = inner_parse(ip, end, (__u32)(end - (void *)ip), &p, &why);
	if (!n)
		return pass(why == ST_PASS_INNER ? ST_PASS_IP_OPTS : why);
	if (n > c->max_inner)
		return pass(ST_PASS_MTU);
	struct pdr_act *a = match(&fs, &p, 1, p.dst);
	if (!a)
		return pass(ST_PASS_NO_PDR);
	if (a->action == ACT_DROP)
		return drop(ST_DROP_FAR);
	if (a->action != ACT_GTP)
		return pass(ST_PASS_FAR); // buffering (paging, handover) and the rest: host path

	struct bpf_fib_lookup f;
	__u32 r = 0;
	if (peer_hop(&f, a->hop, c->n3_ifindex) || cached_hop(&f, a->peer, c->n3_ifindex)) {
		if (n + ENCAP_LEN > f.mtu_result)
			return pass(ST_PASS_MTU);
	} else {
		r = fib(ctx, &f, c->n3_addr, a->peer, c->n3_ifindex, n + ENCAP_LEN, 0);
		if (r)
			return pass(r);
	}
	__u32 teid = a->teid;
	__be32 peer = a->peer;
	__be16 pport = a->peer_port;
	__u8 qfi = a->qfi & 0x3f;
	__be32 saddr = c->n3_addr;

	// Make room first: nothing is counted or changed (but link padding)
	// for a packet that then passes.
	__u32 frame = (__u32)(end - data);
	__u32 want = sizeof(struct ethhdr) + n;
	if (frame > want && bpf_xdp_adjust_tail(ctx, -(int)(frame - want)))
		return pass(ST_PASS_OTHER);
	if (bpf_xdp_adjust_head(ctx, -(int)ENCAP_LEN))
		return pass(ST_PASS_OTHER);
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	struct iphdr *o = (void *)(eth + 1);
	struct udphdr *u = (void *)(o + 1);
	__u8 *g = (void *)(u + 1);
	ip = (void *)(g + 16);
	if ((void *)(ip + 1) > end)
		return XDP_ABORTED;
	r = qos(a, n);
	if (r)
		return drop(r);
	usage_add(a, n, 1);
	dec_ttl(ip);

	__builtin_memcpy(eth->h_dest, f.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, f.smac, ETH_ALEN);
	eth->h_proto = bpf_htons(ETH_P_IP);

	// Outer IPv4 as the host path's UDP socket sends it: DF, TTL 64.
	o->version = 4;
	o->ihl = 5;
	o->tos = 0;
	o->tot_len = bpf_htons(n + ENCAP_LEN);
	o->id = 0;
	o->frag_off = bpf_htons(0x4000);
	o->ttl = 64;
	o->protocol = IPPROTO_UDP;
	o->check = 0;
	o->saddr = saddr;
	o->daddr = peer;
	o->check = ip_csum(o);

	u->source = bpf_htons(GTPU_PORT);
	u->dest = pport;
	u->len = bpf_htons(n + 8 + 16);
	u->check = 0; // optional over IPv4 (RFC 768)

	// gtpu.PutGPDUHeader: E flag, G-PDU, length, TEID, no sequence,
	// next extension 0x85 of one 4-octet unit: DL PDU type 0, QFI.
	__u32 glen = n + 8;
	g[0] = 0x34;
	g[1] = 255;
	g[2] = glen >> 8;
	g[3] = glen;
	g[4] = teid >> 24;
	g[5] = teid >> 16;
	g[6] = teid >> 8;
	g[7] = teid;
	g[8] = 0;
	g[9] = 0;
	g[10] = 0;
	g[11] = 0x85;
	g[12] = 1;
	g[13] = 0; // PDU type 0 (DL) << 4
	g[14] = qfi;
	g[15] = 0;
	count(ST_FWD_DL);
	return bpf_redirect(f.ifindex, 0);
}

// upf is the whole of the fast path for a frame received on an interface
// of the UPF: upf_n3 and upf_n6 inline, and the cpumap program on the CPU
// a steering program chose. On N3, a frame that is not GTP-U for the N3
// address is downlink if the interface is an N6 port too.
static __always_inline int upf(struct xdp_md *ctx, int on_n3)
{
	if (on_n3) {
		int r = n3(ctx);
		if (r >= 0)
			return r;
		__u32 ifindex = ctx->ingress_ifindex;
		struct ifinfo *ifi = bpf_map_lookup_elem(&ifaces, &ifindex);
		if (!ifi || !ifi->n6)
			return pass(-r);
	}
	return n6(ctx);
}

SEC("xdp")
int upf_n3(struct xdp_md *ctx)
{
	return upf(ctx, 1);
}

SEC("xdp")
int upf_n6(struct xdp_md *ctx)
{
	return upf(ctx, 0);
}

// ---------------------------------------------------------------- steering
//
// With steering on (Config.CPUs > 1), the programs attached to the
// interfaces are upf_n3_steer and upf_n6_steer. GTP-U's outer 5-tuple is
// the same for every UE behind a gNB, so the NIC's RSS puts all of a gNB's
// uplink on one queue and CPU; the steering programs spread the sessions
// over CPUs instead: they read just the key of the session (the TEID of a
// G-PDU, the destination = UE address of a downlink packet), hash it to
// one of STEER_BUCKETS buckets, count the packet for the bucket, and
// redirect the frame to the bucket's CPU through the cpumap, where
// upf_cpu runs the whole fast path (upf) as upf_n3/upf_n6 would have on
// the receiving CPU. The loader's Rebalance moves buckets between CPUs.
//
// Only packets of offloaded sessions are steered: everything else (and a
// packet whose bucket is on this very CPU) takes the inline path, which
// is upf_n3/upf_n6's, so the host path sees what it saw without steering.

#define STEER_BUCKETS 256 // xdp.go: steerBuckets

// cpus: the CPUs steered over, each entry with its queue and upf_cpu (the
// loader fills it; max_entries = possible CPUs, the key is the CPU).
struct {
	__uint(type, BPF_MAP_TYPE_CPUMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bpf_cpumap_val);
} cpus SEC(".maps");

// steer_table: bucket -> CPU (the indirection table).
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, STEER_BUCKETS);
	__type(key, __u32);
	__type(value, __u32);
} steer_table SEC(".maps");

// steer_load: packets steered per bucket, the load Rebalance reads.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STEER_BUCKETS);
	__type(key, __u32);
	__type(value, __u64);
} steer_load SEC(".maps");

// steer_to sends the frame with session key k to its bucket's CPU:
// XDP_REDIRECT, or -1 when the frame is to be processed here (its CPU is
// this one, or the redirect failed).
static __always_inline int steer_to(__u32 k)
{
	__u32 b = (k * 2654435761u) >> 24; // Fibonacci hashing: 8 bits of 32
	__u64 *n = bpf_map_lookup_elem(&steer_load, &b);
	if (n)
		(*n)++;
	__u32 *cpu = bpf_map_lookup_elem(&steer_table, &b);
	if (!cpu || *cpu == bpf_get_smp_processor_id())
		return -1;
	// Flags 0: a CPU missing from the map answers XDP_ABORTED, and the
	// frame is processed here instead.
	if (bpf_redirect_map(&cpus, *cpu, 0) == XDP_REDIRECT)
		return XDP_REDIRECT;
	return -1;
}

// steer_ue steers a downlink IPv4 packet (ip within the frame) for an
// offloaded UE address.
//
// The lookups here (find_ue, and find_teid in upf_n3_steer) are kept on
// purpose. Steering by the key alone, with no lookup, frees the receiving
// CPU (at 100,000 sessions its run falls from ~400 to ~55 ns) but makes the
// steered rate some 25 % lower there on this kind of machine: the lookup
// brings the session's entry into the cache the other CPU then reads it
// from, so the two CPUs share the misses (docs/benchmarks.md).
static __always_inline int steer_ue(struct iphdr *ip)
{
	struct found fs;
	if (!find_ue(ip->daddr, &fs))
		return -1;
	return steer_to(bpf_ntohl(ip->daddr));
}

SEC("xdp")
int upf_n3_steer(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u32 zero = 0;
	int r = -1;

	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);
	__u8 *g = (void *)(udp + 1);
	struct config *c = bpf_map_lookup_elem(&cfg, &zero);
	if (!c || (void *)(g + 8) > end || eth->h_proto != bpf_htons(ETH_P_IP) || ip->version != 4)
		goto inline_path;
	if (ip->ihl == 5 && ip->protocol == IPPROTO_UDP && ip->daddr == c->n3_addr &&
	    !(ip->frag_off & bpf_htons(0x3fff)) && udp->dest == bpf_htons(GTPU_PORT)) {
		// A G-PDU (TS 29.281 §5.1) of an offloaded session.
		if ((g[0] & 0xf0) != 0x30 || g[1] != 255)
			goto inline_path;
		__u32 teid = ((__u32)g[4] << 24) | ((__u32)g[5] << 16) | ((__u32)g[6] << 8) | g[7];
		struct found fs;
		if (teid && find_teid(teid, &fs))
			r = steer_to(teid);
	} else if (ip->daddr != c->n3_addr) {
		// Downlink, if N3 is an N6 port too.
		__u32 ifindex = ctx->ingress_ifindex;
		struct ifinfo *ifi = bpf_map_lookup_elem(&ifaces, &ifindex);
		if (ifi && ifi->n6)
			r = steer_ue(ip);
	}
	if (r >= 0)
		return r;
inline_path:
	return upf(ctx, 1);
}

SEC("xdp")
int upf_n6_steer(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;

	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) <= end && eth->h_proto == bpf_htons(ETH_P_IP) && ip->version == 4) {
		int r = steer_ue(ip);
		if (r >= 0)
			return r;
	}
	return upf(ctx, 0);
}

// upf_cpu runs on the CPU a steering program chose (the cpumap's kthread
// there), on the frame as it was received: ctx->ingress_ifindex is still
// the receiving interface (cpumap keeps the frame's rx device), which the
// interface checks and the FIB lookups need. XDP_REDIRECT to the egress
// port and XDP_PASS (the cpumap builds the skb and hands it to the stack
// on this CPU) both work there.
// no_udp_csum clears the UDP checksum of a GTP-U frame that upf_cpu
// passes to the host. The frame reaches the stack as a new skb that lost
// the receive state of the original: where the sender left the checksum
// to the device (a socket on a veth peer, whose checksum field holds only
// the pseudo-header sum), the stack would verify it and drop the packet.
// A zero UDP checksum over IPv4 means none (RFC 768), which GTP-U senders
// commonly use anyway; the GTP-U socket behind takes it as it is.
static __always_inline void no_udp_csum(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->ihl != 5 || ip->protocol != IPPROTO_UDP)
		return;
	struct udphdr *udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > end || udp->dest != bpf_htons(GTPU_PORT))
		return;
	udp->check = 0;
}

SEC("xdp/cpumap")
int upf_cpu(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct config *c = bpf_map_lookup_elem(&cfg, &zero);
	int on_n3 = c && ctx->ingress_ifindex == c->n3_ifindex;
	int act = upf(ctx, on_n3);
	if (act == XDP_PASS && on_n3)
		no_udp_csum(ctx);
	return act;
}

// pass_all is the XDP_PASS program a veth peer needs so that frames other
// programs redirect into it are received (veth drops XDP frames towards a
// peer without XDP unless GRO is on).
SEC("xdp")
int pass_all(struct xdp_md *ctx)
{
	return XDP_PASS;
}

// clock_tick stores the time and comes back in a tick: the timer runs for
// as long as the clock map lives (the kernel cancels it when the map is
// freed, with the programs).
static int clock_tick(void *map, __u32 *key, struct clock *c)
{
	*(volatile __u64 *)&c->now = bpf_ktime_get_ns();
	bpf_timer_start(&c->timer, CLOCK_TICK_NS, 0);
	return 0;
}

// upf_clock_start arms the clock's timer; the loader runs it once
// (BPF_PROG_TEST_RUN). XDP_PASS when it runs, XDP_ABORTED when it could
// not be armed (qos then reads the clock each time).
SEC("xdp")
int upf_clock_start(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct clock *c = bpf_map_lookup_elem(&clock, &zero);
	if (!c)
		return XDP_ABORTED;
	long err = bpf_timer_init(&c->timer, &clock, CLOCK_MONOTONIC);
	if (err && err != -16) // -EBUSY: armed before
		return XDP_ABORTED;
	if (bpf_timer_set_callback(&c->timer, clock_tick))
		return XDP_ABORTED;
	*(volatile __u64 *)&c->now = bpf_ktime_get_ns();
	if (bpf_timer_start(&c->timer, CLOCK_TICK_NS, 0))
		return XDP_ABORTED;
	return XDP_PASS;
}
