package smf

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/tern5g/tern/identity"
)

// Defaults (TS 24.501 §10.3 Table 10.3.2 for the 5GSM network timers).
const (
	DefaultNodeID             = "127.0.0.1"
	DefaultPFCPTimeout        = 10 * time.Second // bounds one PFCP request, retransmissions included
	DefaultT3591              = 16 * time.Second // PDU SESSION MODIFICATION COMMAND
	DefaultT3592              = 16 * time.Second // PDU SESSION RELEASE COMMAND
	DefaultMaxRetransmissions = 4                // TS 24.501 §6.3.2.5 a), §6.3.3.5 a): abort on the fifth expiry
	DefaultHeartbeat          = 10 * time.Second // PFCP heartbeat / association retry period
	DefaultHeartbeatTimeout   = 3 * time.Second  // one heartbeat's wait for its response
	DefaultHeartbeatRetries   = 3                // heartbeats missed in a row before a UPF is unavailable
	// DefaultUPFWait is half the UE's T3580 (16 s, TS 24.501 Table
	// 10.3.2): an establishment that waits for a UPF is answered within
	// UPFWait of its request, or PFCPTimeout when a UPF left its first
	// attempt unanswered, so before the UE sends the request again.
	DefaultUPFWait = 8 * time.Second
	DefaultMTU     = 1400
	// DefaultBufferingPackets is the BAR's Suggested Buffering Packets
	// Count for an idle UE (TS 29.244 §8.2.101: one octet, so 255 at most):
	// 25 ms of a 10 kpps stream.
	DefaultBufferingPackets = 255
	DefaultPagingBackoff    = 10 * time.Second
	DefaultForwardingHold   = time.Second
)

// Handover data modes (MobilityConfig.HandoverData).
const (
	// HandoverForwarding is the 3GPP way (TS 23.502 §4.9.1.3.2-3): the
	// source gNB sends the downlink it holds, and what keeps arriving,
	// through an indirect data forwarding tunnel at the UPF to the target.
	HandoverForwarding = "forwarding"
	// HandoverSmart is L25GC's smart buffering: the UPF holds the session's
	// downlink from handover preparation until Handover Notify, then sends
	// it, in order, to the target and forwards live traffic after it. No
	// hairpin through the source.
	HandoverSmart = "smart"
)

// Config is the SMF configuration. The zero value of a field means
// "default" where a default exists (see WithDefaults).
type Config struct {
	// NodeID is the SMF's PFCP Node ID: an IPv4 address or an FQDN.
	NodeID string `yaml:"nodeId"`
	// N4Address is the IPv4 address put in the CP F-SEID; default NodeID
	// when that is an address, else 127.0.0.1.
	N4Address string `yaml:"n4Address,omitempty"`
	// DNNs are the data networks served, each with its UE address pool.
	DNNs []DNNConfig `yaml:"dnns"`
	// UPFs are the user plane functions and the DNNs each serves.
	UPFs []UPFConfig `yaml:"upfs"`
	// Timers are the PFCP and 5GSM timers.
	Timers TimerConfig `yaml:"timers"`
	// Mobility is what the SMF does while UEs are idle or move.
	Mobility MobilityConfig `yaml:"mobility"`
	// APIRoot is where other NFs reach this SMF's SBI
	// ("http://10.0.0.2:8000"): the callback URIs it hands out
	// (n1n2FailureTxfNotifURI) start with it. Empty in a single process.
	APIRoot string `yaml:"apiRoot,omitempty"`
}

// MobilityConfig configures idle mode and handover at the SMF.
type MobilityConfig struct {
	// BufferingPackets is the Suggested Buffering Packets Count of the BAR
	// (TS 29.244 §8.2.101, 1..255; default 255) by which the UPF bounds the
	// downlink it buffers for a UE in CM-IDLE.
	BufferingPackets int `yaml:"bufferingPackets"`
	// PagingBackoff: when a paged UE does not answer, the UPF discards the
	// session's buffered downlink and drops new downlink this long, then
	// buffers (and so pages) again (default 10 s). TS 23.502 §4.2.3.3
	// leaves this to the SMF; it keeps an unreachable UE from being paged
	// for every packet.
	PagingBackoff time.Duration `yaml:"pagingBackoff"`
	// HandoverData is how downlink data reaches the UE during an N2
	// handover: "forwarding" (default, TS 23.502 indirect forwarding) or
	// "smart" (L25GC buffering at the UPF).
	HandoverData string `yaml:"handoverData"`
	// ForwardingHold is how long the indirect forwarding tunnel stays after
	// the handover completes, for what the source still sends (default
	// 1 s).
	ForwardingHold time.Duration `yaml:"forwardingHold"`
}

// DNNConfig is one served DNN (TS 23.501 §5.6.1).
type DNNConfig struct {
	Name   string   `yaml:"name"`
	SNSSAI string   `yaml:"snssai"` // the slice the DNN is served in: "1-010203"
	Pool   string   `yaml:"pool"`   // UE IPv4 pool, e.g. "10.60.0.0/16"
	DNS    []string `yaml:"dns,omitempty"`
	MTU    int      `yaml:"mtu,omitempty"` // IPv4 link MTU sent in the ePCO; default 1400
}

// UPFConfig is one UPF. N4 is how the deployment reaches it ("direct" for
// the in-process binding or "host:8805"); the SMF itself only uses the
// pfcp.UserPlane handed to it under Name (Deps.UPFs or SetUserPlane).
type UPFConfig struct {
	Name string   `yaml:"name"`
	N4   string   `yaml:"n4"`
	N3   string   `yaml:"n3"` // N3 IPv4 of the UPF, used when the UPF's Created PDR carries no address
	DNNs []string `yaml:"dnns"`
	// Restoration is how a session restored at this UPF after it
	// restarted keeps its uplink (TS 23.527 §4.3.2, TS 29.244 §5.5.1):
	// "auto" (default) by the UP Function Features the UPF advertised,
	// "resti" with the F-TEID the gNB has and RESTI, "choose" with a new
	// F-TEID the UPF chooses and the gNB is sent (docs/restoration.md).
	// "choose" is for a UPF that advertises FTUP but ignores RESTI (Rel-15)
	// and so would hand a restored F-TEID to its next new session.
	Restoration string `yaml:"restoration,omitempty"`
}

// UPF restoration strategies (UPFConfig.Restoration).
const (
	RestorationAuto   = "auto"
	RestorationRESTI  = "resti"
	RestorationChoose = "choose"
)

// TimerConfig holds the SMF's timers.
type TimerConfig struct {
	PFCPTimeout        time.Duration `yaml:"pfcpTimeout"`
	T3591              time.Duration `yaml:"t3591"`
	T3592              time.Duration `yaml:"t3592"`
	MaxRetransmissions int           `yaml:"maxRetransmissions"`
	// Heartbeat is the PFCP heartbeat period towards each UPF (TS 29.244
	// §6.2.2), also the association retry period of a UPF that is down.
	// A restarted UPF is noticed at the first heartbeat it answers (its
	// Recovery Time Stamp changed); one that does not answer is marked
	// unavailable after HeartbeatRetries heartbeats in a row time out,
	// each after HeartbeatTimeout.
	Heartbeat        time.Duration `yaml:"heartbeat"`
	HeartbeatTimeout time.Duration `yaml:"heartbeatTimeout"`
	HeartbeatRetries int           `yaml:"heartbeatRetries"`
	// UPFWait bounds how long a PDU session establishment waits, from
	// its request, for a UPF serving its DNN when none is up (one
	// restoring its sessions after a restart, or not answering) or the
	// UPF it was sent to turns out to have lost its association: it is
	// sent again to another UPF serving the DNN at once, else once one
	// is up, each attempt ending by UPFWait after the request, and
	// rejected with 5GSM #26 only when UPFWait has passed. A UPF that
	// does not answer costs PFCPTimeout: only with PFCPTimeout shorter
	// than UPFWait is there time left to try again.
	UPFWait time.Duration `yaml:"upfWait"`
}

// DefaultConfig returns the configuration matching tern's topology
// defaults: DNNs "internet" (10.60.0.0/16) and "ims" (10.61.0.0/16) in slice
// 1-010203, one co-located UPF "upf" serving both.
func DefaultConfig() Config {
	c := Config{
		DNNs: []DNNConfig{
			{Name: "internet", SNSSAI: "1-010203", Pool: "10.60.0.0/16", DNS: []string{"8.8.8.8", "1.1.1.1"}},
			{Name: "ims", SNSSAI: "1-010203", Pool: "10.61.0.0/16", DNS: []string{"8.8.8.8"}},
		},
		UPFs: []UPFConfig{{Name: "upf", N4: "direct", N3: "127.0.0.1", DNNs: []string{"internet", "ims"}}},
	}
	return c.WithDefaults()
}

// WithDefaults returns c with every unset field given its default.
func (c Config) WithDefaults() Config {
	if c.NodeID == "" {
		c.NodeID = DefaultNodeID
	}
	if c.N4Address == "" {
		if a, err := netip.ParseAddr(c.NodeID); err == nil && a.Is4() {
			c.N4Address = c.NodeID
		} else {
			c.N4Address = "127.0.0.1"
		}
	}
	dnns := make([]DNNConfig, len(c.DNNs))
	copy(dnns, c.DNNs)
	for i := range dnns {
		if dnns[i].MTU == 0 {
			dnns[i].MTU = DefaultMTU
		}
	}
	c.DNNs = dnns
	if c.Timers.PFCPTimeout == 0 {
		c.Timers.PFCPTimeout = DefaultPFCPTimeout
	}
	if c.Timers.T3591 == 0 {
		c.Timers.T3591 = DefaultT3591
	}
	if c.Timers.T3592 == 0 {
		c.Timers.T3592 = DefaultT3592
	}
	if c.Timers.MaxRetransmissions == 0 {
		c.Timers.MaxRetransmissions = DefaultMaxRetransmissions
	}
	if c.Timers.Heartbeat == 0 {
		c.Timers.Heartbeat = DefaultHeartbeat
	}
	if c.Timers.HeartbeatTimeout == 0 {
		c.Timers.HeartbeatTimeout = min(DefaultHeartbeatTimeout, c.Timers.Heartbeat)
	}
	if c.Timers.HeartbeatRetries == 0 {
		c.Timers.HeartbeatRetries = DefaultHeartbeatRetries
	}
	if c.Timers.UPFWait == 0 {
		c.Timers.UPFWait = DefaultUPFWait
	}
	if c.Mobility.BufferingPackets == 0 {
		c.Mobility.BufferingPackets = DefaultBufferingPackets
	}
	if c.Mobility.PagingBackoff == 0 {
		c.Mobility.PagingBackoff = DefaultPagingBackoff
	}
	if c.Mobility.HandoverData == "" {
		c.Mobility.HandoverData = HandoverForwarding
	}
	if c.Mobility.ForwardingHold == 0 {
		c.Mobility.ForwardingHold = DefaultForwardingHold
	}
	return c
}

// Validate checks c (after WithDefaults) and names the first bad field.
func (c Config) Validate() error {
	_, err := c.compile()
	return err
}

// servedConfig is Config parsed once by New.
type servedConfig struct {
	nodeID   string
	n4Addr   netip.Addr
	dnns     map[string]*dnnConf
	order    []*dnnConf // configuration order, for Stats
	upfs     []*upfNode
	timers   TimerConfig
	mobility MobilityConfig
}

type dnnConf struct {
	name  string
	slice identity.SNSSAI
	pool  *ipPool
	dns   []netip.Addr
	mtu   uint16
	upfs  []*upfNode
}

func (c Config) compile() (*servedConfig, error) {
	s := &servedConfig{nodeID: c.NodeID, dnns: make(map[string]*dnnConf), timers: c.Timers, mobility: c.Mobility}
	if c.NodeID == "" {
		return nil, errors.New("smf.nodeId: empty")
	}
	a, err := netip.ParseAddr(c.N4Address)
	if err != nil || !a.Is4() {
		return nil, fmt.Errorf("smf.n4Address: %q is not an IPv4 address", c.N4Address)
	}
	s.n4Addr = a
	if len(c.DNNs) == 0 {
		return nil, errors.New("smf.dnns: at least one DNN is required")
	}
	var pools []netip.Prefix
	for i, d := range c.DNNs {
		if d.Name == "" || len(d.Name) > 100 { // TS 23.003 §9.1: APN/DNN at most 100 octets
			return nil, fmt.Errorf("smf.dnns[%d].name: %q must be 1..100 characters", i, d.Name)
		}
		if _, dup := s.dnns[d.Name]; dup {
			return nil, fmt.Errorf("smf.dnns[%d].name: %q listed twice", i, d.Name)
		}
		sl, err := identity.ParseSNSSAI(d.SNSSAI)
		if err != nil {
			return nil, fmt.Errorf("smf.dnns[%d].snssai: %w", i, err)
		}
		p, err := netip.ParsePrefix(d.Pool)
		if err != nil || !p.Addr().Is4() {
			return nil, fmt.Errorf("smf.dnns[%d].pool: %q is not an IPv4 prefix", i, d.Pool)
		}
		for _, q := range pools {
			if q.Overlaps(p) {
				return nil, fmt.Errorf("smf.dnns[%d].pool: %s overlaps %s", i, p, q)
			}
		}
		pools = append(pools, p.Masked())
		pool, err := newIPPool(p)
		if err != nil {
			return nil, fmt.Errorf("smf.dnns[%d].pool: %w", i, err)
		}
		dc := &dnnConf{name: d.Name, slice: sl, pool: pool}
		for j, str := range d.DNS {
			ip, err := netip.ParseAddr(str)
			if err != nil || !ip.Is4() {
				return nil, fmt.Errorf("smf.dnns[%d].dns[%d]: %q is not an IPv4 address", i, j, str)
			}
			dc.dns = append(dc.dns, ip)
		}
		if d.MTU < 576 || d.MTU > 65535 { // RFC 791 minimum datagram every host accepts
			return nil, fmt.Errorf("smf.dnns[%d].mtu: %d not in 576..65535", i, d.MTU)
		}
		dc.mtu = uint16(d.MTU)
		s.dnns[d.Name] = dc
		s.order = append(s.order, dc)
	}
	if len(c.UPFs) == 0 {
		return nil, errors.New("smf.upfs: at least one UPF is required")
	}
	names := make(map[string]bool)
	for i, u := range c.UPFs {
		if u.Name == "" || names[u.Name] {
			return nil, fmt.Errorf("smf.upfs[%d].name: %q empty or listed twice", i, u.Name)
		}
		names[u.Name] = true
		n3, err := netip.ParseAddr(u.N3)
		if err != nil || !n3.Is4() {
			return nil, fmt.Errorf("smf.upfs[%d].n3: %q is not an IPv4 address", i, u.N3)
		}
		switch u.Restoration {
		case "":
			u.Restoration = RestorationAuto
		case RestorationAuto, RestorationRESTI, RestorationChoose:
		default:
			return nil, fmt.Errorf("smf.upfs[%d].restoration: %q, want %q, %q or %q", i, u.Restoration,
				RestorationAuto, RestorationRESTI, RestorationChoose)
		}
		node := &upfNode{name: u.Name, n3: n3, check: make(chan struct{}, 1), restoration: u.Restoration}
		if len(u.DNNs) == 0 {
			return nil, fmt.Errorf("smf.upfs[%d].dnns: at least one DNN is required", i)
		}
		for j, dn := range u.DNNs {
			dc, ok := s.dnns[dn]
			if !ok {
				return nil, fmt.Errorf("smf.upfs[%d].dnns[%d]: %q is not in smf.dnns", i, j, dn)
			}
			dc.upfs = append(dc.upfs, node)
		}
		s.upfs = append(s.upfs, node)
	}
	for _, dc := range s.order {
		if len(dc.upfs) == 0 {
			return nil, fmt.Errorf("smf.dnns: %q is served by no UPF", dc.name)
		}
	}
	t := c.Timers
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"pfcpTimeout", t.PFCPTimeout}, {"t3591", t.T3591}, {"t3592", t.T3592}, {"heartbeat", t.Heartbeat}, {"heartbeatTimeout", t.HeartbeatTimeout}, {"upfWait", t.UPFWait}} {
		if d.v <= 0 {
			return nil, fmt.Errorf("smf.timers.%s: %v must be positive", d.name, d.v)
		}
	}
	if t.HeartbeatRetries < 1 || t.HeartbeatRetries > 100 {
		return nil, fmt.Errorf("smf.timers.heartbeatRetries: %d not in 1..100", t.HeartbeatRetries)
	}
	if t.MaxRetransmissions < 0 || t.MaxRetransmissions > 16 {
		return nil, fmt.Errorf("smf.timers.maxRetransmissions: %d not in 0..16", t.MaxRetransmissions)
	}
	m := c.Mobility
	if m.BufferingPackets < 1 || m.BufferingPackets > 255 {
		return nil, fmt.Errorf("smf.mobility.bufferingPackets: %d not in 1..255 (TS 29.244 §8.2.101)", m.BufferingPackets)
	}
	if m.ForwardingHold <= 0 {
		return nil, fmt.Errorf("smf.mobility.forwardingHold: %v must be positive", m.ForwardingHold)
	}
	if m.PagingBackoff <= 0 {
		return nil, fmt.Errorf("smf.mobility.pagingBackoff: %v must be positive", m.PagingBackoff)
	}
	switch m.HandoverData {
	case HandoverForwarding, HandoverSmart:
	default:
		return nil, fmt.Errorf("smf.mobility.handoverData: %q, want %q or %q", m.HandoverData, HandoverForwarding, HandoverSmart)
	}
	return s, nil
}
