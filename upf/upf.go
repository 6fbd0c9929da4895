// Package upf assembles a User Plane Function: UPF-C (package upf/upfc:
// PFCP sessions compiled into rules), UPF-U (package upf/upfu: the packet
// pipeline) and a data-path driver (package upf/portable: UDP for N3, TUN
// for N6). An SMF reaches it through Handler (the direct N4 binding, in
// one process) or over PFCP/UDP when PFCPAddr is set.
package upf

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/upf/afxdp"
	"github.com/tern5g/tern/upf/portable"
	"github.com/tern5g/tern/upf/upfc"
	"github.com/tern5g/tern/upf/upfu"
	"github.com/tern5g/tern/upf/xdp"
)

// Config configures a UPF.
type Config struct {
	// NodeID is the PFCP Node ID: an IPv4 address or an FQDN (default: the
	// N3 address).
	NodeID string `yaml:"nodeId"`
	// N3Addr is the GTP-U address, "10.100.3.2:2152" (default
	// "127.0.0.1:2152"). Its IP is the F-TEID address the UPF allocates.
	N3Addr string `yaml:"n3Addr"`
	// N6 lists one TUN device per DNN (network instance).
	N6 []N6Config `yaml:"n6"`
	// PFCPAddr is the PFCP UDP endpoint, "10.100.4.2:8805"; empty = no UDP
	// endpoint (direct binding only).
	PFCPAddr string `yaml:"pfcpAddr"`
	// Workers is the data path's parallelism (default 1), per driver:
	// portable, the N3 reader goroutines; afxdp, the AF_XDP queues; xdp,
	// the CPUs the XDP programs steer sessions over (1 = no steering:
	// each packet is processed on the CPU that received it).
	Workers int `yaml:"workers"`
	// BufferPackets bounds each session's downlink buffer (TS 29.244
	// §5.2.4) unless its FAR names a BAR with a Suggested Buffering Packets
	// Count (default 1024; 0 = default).
	BufferPackets int `yaml:"bufferPackets"`
	// BufferBytes bounds each session's downlink buffer (default 2 MiB;
	// 0 = default).
	BufferBytes int `yaml:"bufferBytes"`
	// BufferGlobalBytes caps the downlink bytes buffered across all
	// sessions: a packet that would pass it is dropped and counted
	// ("buffer-global-cap"; default 256 MiB; 0 = default). At least
	// BufferBytes.
	BufferGlobalBytes int `yaml:"bufferGlobalBytes"`
	// BufferHoldTime is how long a buffered downlink packet is kept for an
	// idle or moving UE before it is discarded and counted
	// ("buffer-expired"; TS 23.502 §4.2.3.3 leaves it to the UPF's
	// configuration; default 30s; 0 = default).
	BufferHoldTime time.Duration `yaml:"bufferHoldTime"`
	// ShapingDelay makes QERs shape instead of police: a packet over its
	// MBR (the session AMBR's QER included) waits up to this long for the
	// rate to allow it, in a queue bounded per QER by ShapingDelay × MBR
	// and across the UPF by ShapingPackets, before it is dropped (TS
	// 23.501 §5.7.1.8 leaves policing or shaping to the UPF; default 0:
	// police, drop at once). Sessions with shaped QERs stay on the
	// user-space path of the xdp driver.
	ShapingDelay time.Duration `yaml:"shapingDelay,omitempty"`
	// ShapingPackets bounds the packets waiting to be shaped across the
	// UPF (default 16384; 0 = default).
	ShapingPackets int `yaml:"shapingPackets,omitempty"`
	// NoN6 runs without N6 devices: the DNNs stay network instances for
	// PFCP, but packets for the data network are dropped and counted. For
	// control-plane work and hosts where TUN is not allowed (no
	// CAP_NET_ADMIN).
	NoN6 bool `yaml:"noN6,omitempty"`
	// PDRTable is where UPF-U looks PDRs up: "session" (default), each
	// session's own table after finding the session by TEID or UE
	// address; or "global", one UPF-wide table of every session's rules
	// (upfu.Config.GlobalPDRTable), for comparison with UPFs built so.
	PDRTable string `yaml:"pdrTable,omitempty"`
	// Driver is the data path that moves the packets: "portable" (a UDP
	// socket on N3 and a TUN device per DNN: works everywhere), "xdp" (an
	// XDP program on the N3 and N6 interfaces forwards the common case in
	// the kernel, everything else goes up to the portable path), "afxdp"
	// (the user-space pipeline on AF_XDP sockets of those interfaces), or
	// "auto" (the default: xdp, then afxdp, then portable, whichever loads
	// first; the log says what it got and why). xdp and afxdp need
	// N3Iface (or an interface holding the N3 address) and each N6's Iface.
	Driver string `yaml:"driver,omitempty"`
	// XDPCPUs are the CPUs the xdp driver processes offloaded sessions
	// on, a list like "2-5,8": the CPUs that receive packets only steer
	// them there by TEID or UE address (default: the first Workers CPUs,
	// with Workers > 1; otherwise every packet is processed on the CPU
	// that receives it). The process's own threads leave these CPUs while
	// the driver runs, unless that would leave them none.
	XDPCPUs string `yaml:"xdpCPUs,omitempty"`
	// N3Iface is the network interface of N3 for the xdp and afxdp
	// drivers (default: the interface that holds the N3 address).
	N3Iface string `yaml:"n3Iface,omitempty"`
	// EchoInterval is how often the UPF sends a GTP-U Echo Request to each
	// gNB (remote GTP-U peer) that its sessions' FARs forward to, to find
	// broken paths (TS 29.281 §7.2.1, TS 23.007 §20.3.1; default 60s, the
	// shortest §7.2.1 allows; 0 = default; negative = no supervision). A
	// failed path is reported to the SMFs with a PFCP Node Report.
	EchoInterval time.Duration `yaml:"echoInterval,omitempty"`
	// EchoT3Response is T3-RESPONSE: how long an Echo Request waits for
	// its response before it is sent again (default 2s; 0 = default).
	EchoT3Response time.Duration `yaml:"echoT3Response,omitempty"`
	// EchoN3Requests is N3-REQUESTS: how often an unanswered Echo Request
	// is sent again before the path counts as failed (default 3; 0 =
	// default).
	EchoN3Requests int `yaml:"echoN3Requests,omitempty"`
}

// Data-path drivers (Config.Driver).
const (
	DriverAuto     = "auto"
	DriverXDP      = "xdp"
	DriverAFXDP    = "afxdp"
	DriverPortable = "portable"
)

// PDR table modes (Config.PDRTable).
const (
	PDRTableSession = "session"
	PDRTableGlobal  = "global"
)

// Validate checks c and names the first bad key as a configuration file
// spells it (upf.driver, upf.n6[0].pool). Zero values stand for the
// defaults. New calls it, and so does the configuration's validation, so
// that `tern config` refuses what `tern up` would.
func (c *Config) Validate() error {
	if c.N3Addr != "" {
		if n3, err := netip.ParseAddrPort(c.N3Addr); err != nil || !n3.Addr().Is4() {
			return fmt.Errorf("upf.n3Addr: %q: want IPv4:port, like 10.100.3.2:2152", c.N3Addr)
		}
	}
	if c.NodeID != "" {
		if _, err := netip.ParseAddr(c.NodeID); err != nil && !validFQDN(c.NodeID) {
			return fmt.Errorf("upf.nodeId: %q is neither an IP address nor a domain name", c.NodeID)
		}
	}
	if c.PFCPAddr != "" {
		_, port, err := net.SplitHostPort(c.PFCPAddr)
		if err == nil {
			_, err = strconv.ParseUint(port, 10, 16)
		}
		if err != nil {
			return fmt.Errorf("upf.pfcpAddr: %q: want host:port with a port from 0 to 65535, like 10.100.4.2:8805", c.PFCPAddr)
		}
	}
	if c.Workers < 0 {
		return fmt.Errorf("upf.workers: %d is negative: want 1 or more (0: the default, 1)", c.Workers)
	}
	switch {
	case c.BufferPackets < 0:
		return fmt.Errorf("upf.bufferPackets: %d is negative", c.BufferPackets)
	case c.BufferBytes < 0:
		return fmt.Errorf("upf.bufferBytes: %d is negative", c.BufferBytes)
	case c.BufferGlobalBytes < 0:
		return fmt.Errorf("upf.bufferGlobalBytes: %d is negative", c.BufferGlobalBytes)
	case c.BufferHoldTime < 0:
		return fmt.Errorf("upf.bufferHoldTime: %v is negative", c.BufferHoldTime)
	case c.ShapingDelay < 0:
		return fmt.Errorf("upf.shapingDelay: %v is negative", c.ShapingDelay)
	case c.ShapingPackets < 0:
		return fmt.Errorf("upf.shapingPackets: %d is negative", c.ShapingPackets)
	case c.EchoT3Response < 0:
		return fmt.Errorf("upf.echoT3Response: %v is negative", c.EchoT3Response)
	case c.EchoN3Requests < 0:
		return fmt.Errorf("upf.echoN3Requests: %d is negative", c.EchoN3Requests)
	}
	perSession, global := c.BufferBytes, c.BufferGlobalBytes
	if perSession == 0 {
		perSession = upfu.DefaultBufferBytes
	}
	if global != 0 && global < perSession {
		return fmt.Errorf("upf.bufferGlobalBytes: %d is less than one session's bufferBytes %d", global, perSession)
	}
	switch c.PDRTable {
	case "", PDRTableSession, PDRTableGlobal:
	default:
		return fmt.Errorf("upf.pdrTable: %q: want %q or %q", c.PDRTable, PDRTableSession, PDRTableGlobal)
	}
	switch c.Driver {
	case "", DriverAuto, DriverPortable, DriverXDP, DriverAFXDP:
	default:
		return fmt.Errorf("upf.driver: %q: want %s, %s, %s or %s", c.Driver, DriverAuto, DriverXDP, DriverAFXDP, DriverPortable)
	}
	if c.XDPCPUs != "" {
		if _, err := xdp.ParseCPUList(c.XDPCPUs); err != nil {
			return fmt.Errorf("upf.xdpCPUs: %w", err)
		}
	}
	if err := checkIfaceName(c.N3Iface); err != nil {
		return fmt.Errorf("upf.n3Iface: %w", err)
	}
	seen := map[string]bool{}
	for i, n := range c.N6 {
		field := fmt.Sprintf("upf.n6[%d]", i)
		if n.DNN == "" {
			return fmt.Errorf("%s.dnn: empty", field)
		}
		if seen[n.DNN] {
			return fmt.Errorf("%s.dnn: %q listed twice", field, n.DNN)
		}
		seen[n.DNN] = true
		tun := n.TUN
		if tun == "" {
			tun = TUNName(n.DNN)
		}
		if err := checkIfaceName(tun); err != nil {
			return fmt.Errorf("%s.tun: %w", field, err)
		}
		if n.Pool != "" {
			if pool, err := netip.ParsePrefix(n.Pool); err != nil || !pool.Addr().Is4() {
				return fmt.Errorf("%s.pool: %q: want an IPv4 prefix", field, n.Pool)
			}
		}
		if n.MTU != 0 && (n.MTU < 576 || n.MTU > 65535) {
			return fmt.Errorf("%s.mtu: %d not in 576..65535", field, n.MTU)
		}
		if err := checkIfaceName(n.Iface); err != nil {
			return fmt.Errorf("%s.iface: %w", field, err)
		}
		if n.Gateway != "" {
			if gw, err := netip.ParseAddr(n.Gateway); err != nil || !gw.Is4() {
				return fmt.Errorf("%s.gateway: %q: want an IPv4 address", field, n.Gateway)
			}
		}
	}
	return nil
}

// checkIfaceName accepts "" and what Linux takes as a network interface
// name: 1 to 15 bytes (IFNAMSIZ less the NUL), no '/', ':' or space.
func checkIfaceName(s string) error {
	if len(s) > 15 {
		return fmt.Errorf("%q is longer than 15 bytes (a Linux interface name)", s)
	}
	if strings.ContainsAny(s, "/: \t\n") || s == "." || s == ".." {
		return fmt.Errorf("%q is not a Linux interface name", s)
	}
	return nil
}

// validFQDN reports whether s is a domain name: dot-separated labels of
// letters, digits and hyphens, each 1 to 63 bytes, 255 in all (RFC 1035
// §2.3.1, as PFCP's Node ID of type FQDN carries it, TS 29.244 §8.2.38).
func validFQDN(s string) bool {
	if len(s) == 0 || len(s) > 255 {
		return false
	}
	for label := range strings.SplitSeq(strings.TrimSuffix(s, "."), ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return false
			}
		}
	}
	return true
}

// N6Config is one N6 device.
type N6Config struct {
	DNN string `yaml:"dnn"` // network instance name in FARs
	TUN string `yaml:"tun"` // device name (default TUNName(DNN))
	// Pool is the UE pool routed into the device, "10.60.0.0/16"; a FAR
	// that names no network instance goes to the DNN whose pool holds
	// the session's UE address.
	Pool string `yaml:"pool"`
	MTU  int    `yaml:"mtu"` // default 1400 (leaves room for GTP-U on a 1500-byte N3)
	// Iface is the network interface towards this data network for the
	// xdp and afxdp drivers, and Gateway the next hop on it (default: the
	// packet's own destination, for a directly attached data network).
	// Without Iface the DNN's traffic takes the portable path.
	Iface   string `yaml:"iface,omitempty"`
	Gateway string `yaml:"gateway,omitempty"`
}

// TUNName is the default name of the N6 device for dnn.
func TUNName(dnn string) string { return "tern-" + dnn }

// DefaultConfig is the topology every part of tern uses by default.
func DefaultConfig() Config {
	return Config{
		N3Addr: "127.0.0.1:2152",
		N6: []N6Config{
			{DNN: "internet", TUN: TUNName("internet"), Pool: "10.60.0.0/16"},
			{DNN: "ims", TUN: TUNName("ims"), Pool: "10.61.0.0/16"},
		},
		Workers:           1,
		BufferPackets:     upfu.DefaultBufferPackets,
		BufferBytes:       upfu.DefaultBufferBytes,
		BufferGlobalBytes: upfu.DefaultBufferGlobalBytes,
		BufferHoldTime:    upfu.DefaultBufferHold,
		EchoInterval:      upfu.DefaultEchoInterval,
		EchoT3Response:    upfu.DefaultEchoT3,
		EchoN3Requests:    upfu.DefaultEchoN3,
	}
}

// UPF is one user plane function.
type UPF struct {
	cfg    Config
	log    *slog.Logger
	nodeID pfcp.NodeID
	n3     netip.AddrPort
	n6     []portable.N6
	upfc   *upfc.UPFC
	pipe   *upfu.Pipeline
	dp     *dataPath

	mu      sync.Mutex
	started bool
	driver  string // the driver Start opened
	drv     ioDriver
	ep      *pfcp.Endpoint
	cancel  context.CancelFunc
	runDone chan struct{}

	// inject is the state of InjectDownlink, created on first use.
	injectMu sync.Mutex
	inject   *injector
}

// injector runs downlink packets handed in by the process through the
// pipeline: its own worker and preallocated batch.
type injector struct {
	w   *upfu.Worker
	in  []upfu.Packet
	out []upfu.Packet
}

// injectBatch is how many packets InjectDownlink runs through the
// pipeline at once.
const injectBatch = 64

// InjectDownlink runs IPv4/IPv6 packets from the data network through the
// pipeline as if they had come in on N6: classified, buffered, encapsulated
// and sent on N3 exactly as packets read from an N6 device are. It is the
// N6 of an in-process data network (tests, benchmarks, and hosts where the
// UPF runs without TUN devices). The packets are copied; pkts may be
// reused when it returns. It needs Start.
func (u *UPF) InjectDownlink(pkts ...[]byte) error {
	u.mu.Lock()
	drv := u.drv
	u.mu.Unlock()
	if drv == nil {
		return errors.New("upf: InjectDownlink before Start")
	}
	u.injectMu.Lock()
	defer u.injectMu.Unlock()
	if u.inject == nil {
		j := &injector{w: u.pipe.NewWorker(), in: make([]upfu.Packet, injectBatch), out: make([]upfu.Packet, 0, injectBatch)}
		// The batch goes out after Downlink returns: an End Marker must
		// wait for it (upfu.Worker.SendsLater).
		j.w.SendsLater()
		for i := range j.in {
			j.in[i].Buf = make([]byte, upfu.Headroom+65536)
		}
		u.inject = j
	}
	j := u.inject
	for len(pkts) > 0 {
		n := min(len(pkts), injectBatch)
		for i, p := range pkts[:n] {
			if len(p) > 65536 {
				return fmt.Errorf("upf: injected packet of %d bytes", len(p))
			}
			j.in[i].Off, j.in[i].Len = upfu.Headroom, copy(j.in[i].Buf[upfu.Headroom:], p)
		}
		j.out = j.w.Downlink(j.in[:n], j.out[:0])
		drv.Send(j.out)
		j.w.Sent()
		clear(j.out)
		pkts = pkts[n:]
	}
	return nil
}

// New validates cfg and builds UPF-C and the pipeline. It opens nothing:
// Start does. Handler works before Start (sessions are installed into the
// pipeline; packets flow once Start has opened N3 and N6).
func New(cfg Config, logger *slog.Logger) (*UPF, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.N3Addr == "" {
		cfg.N3Addr = "127.0.0.1:2152"
	}
	n3 := netip.MustParseAddrPort(cfg.N3Addr) // checked by Validate
	nodeID := pfcp.NodeID{IP: n3.Addr()}
	if cfg.NodeID != "" {
		if ip, err := netip.ParseAddr(cfg.NodeID); err == nil {
			nodeID = pfcp.NodeID{IP: ip}
		} else {
			nodeID = pfcp.NodeID{FQDN: cfg.NodeID}
		}
	}
	if cfg.Workers == 0 {
		cfg.Workers = 1
	}
	if cfg.Driver == "" {
		cfg.Driver = DriverAuto
	}
	global := cfg.PDRTable == PDRTableGlobal
	u := &UPF{cfg: cfg, log: logger, nodeID: nodeID, n3: n3}
	var names []string
	pools := make(map[string]netip.Prefix, len(cfg.N6))
	for _, c := range cfg.N6 {
		if c.TUN == "" {
			c.TUN = TUNName(c.DNN)
		}
		var pool netip.Prefix
		if c.Pool != "" {
			pool = netip.MustParsePrefix(c.Pool)
		}
		if c.MTU == 0 {
			c.MTU = 1400
		}
		names = append(names, c.DNN)
		if pool.IsValid() {
			pools[c.DNN] = pool
		}
		u.n6 = append(u.n6, portable.N6{TUN: c.TUN, Pool: pool, MTU: c.MTU})
	}
	var err error
	u.pipe, err = upfu.New(upfu.Config{
		N3Addr: n3.Addr(), NetworkInstances: names,
		BufferPackets: cfg.BufferPackets, BufferBytes: cfg.BufferBytes,
		BufferGlobalBytes: cfg.BufferGlobalBytes, BufferHold: cfg.BufferHoldTime,
		GlobalPDRTable: global,
		ShapingDelay:   cfg.ShapingDelay, ShapingPackets: cfg.ShapingPackets,
		EchoInterval: cfg.EchoInterval, EchoT3: cfg.EchoT3Response, EchoN3: cfg.EchoN3Requests,
	}, logger.With("part", "upf-u"))
	if err != nil {
		return nil, fmt.Errorf("upf: %w", err)
	}
	// A UPF reached over UDP can be restarted under its SMF, which notices
	// only by a Recovery Time Stamp (one-second resolution, TS 29.244
	// §8.2.65) that differs from the one it knew. So the stamp is the next
	// whole second and Start serves PFCP only from then on: an instance
	// that answered anyone did so at or after its own stamp, before this
	// one started, so their stamps differ even when the restart takes
	// milliseconds. It costs up to a second of start-up.
	recovery := time.Now()
	if cfg.PFCPAddr != "" {
		recovery = recovery.Truncate(time.Second).Add(time.Second)
	}
	u.dp = newDataPath(u.pipe, cfg.ShapingDelay > 0, logger.With("part", "data-path"))
	// TEIDs spread over the XDP fast path's index places, whichever
	// driver runs (it costs the others nothing).
	u.upfc = upfc.New(upfc.Config{NodeID: nodeID, N3Addr: n3.Addr(), NetworkInstances: names, NetworkPools: pools,
		NoSessionTables: global,
		RecoveryTime:    recovery, TEIDPlaces: xdp.IndexPlaces(xdp.DefaultMaxSessions)}, u.dp, logger.With("part", "upf-c"))
	u.dp.report = u.upfc.Report
	u.pipe.SetReporter(u.upfc)
	u.pipe.SetPathReporter(u.upfc)
	return u, nil
}

// Handler is the N4 handler (UPF-C) for the direct binding.
func (u *UPF) Handler() pfcp.UPHandler { return u.upfc }

// Start opens N3 and the N6 devices (TUN: needs CAP_NET_ADMIN), starts the
// packet workers and, if configured, the PFCP endpoint. It runs until ctx
// ends or Close.
func (u *UPF) Start(ctx context.Context) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.started {
		return errors.New("upf: already started")
	}
	name, drv, err := u.openDriver(ctx)
	if err != nil {
		return fmt.Errorf("upf: %w", err)
	}
	if u.cfg.PFCPAddr != "" {
		// See New: no PFCP answer before the Recovery Time Stamp.
		select {
		case <-time.After(time.Until(u.upfc.RecoveryTime())):
		case <-ctx.Done():
			drv.Close()
			return ctx.Err()
		}
		u.ep, err = pfcp.Listen(pfcp.EndpointConfig{Addr: u.cfg.PFCPAddr, NodeID: u.nodeID, UP: u.upfc,
			RecoveryTime: u.upfc.RecoveryTime(), Logger: u.log.With("part", "n4")})
		if err != nil {
			drv.Close()
			return fmt.Errorf("upf: PFCP endpoint: %w", err)
		}
	}
	u.drv = drv
	u.pipe.SetSink(drv)
	ctx, u.cancel = context.WithCancel(ctx)
	u.runDone = make(chan struct{})
	go func() {
		defer close(u.runDone)
		u.pipe.Run(ctx)
	}()
	drv.Start(ctx)
	u.started = true
	u.driver = name
	u.log.Info("upf started", "driver", name, "n3", drv.N3Addr(), "n6", len(u.n6), "pfcp", u.cfg.PFCPAddr)
	return nil
}

// N3Addr is the bound N3 address (valid after Start).
func (u *UPF) N3Addr() netip.AddrPort {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.drv == nil {
		return u.n3
	}
	return u.drv.N3Addr()
}

// PFCPAddr is the bound PFCP endpoint address (invalid without one).
func (u *UPF) PFCPAddr() netip.AddrPort {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.ep == nil {
		return netip.AddrPort{}
	}
	return u.ep.Addr()
}

// Close stops everything Start started.
func (u *UPF) Close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.started {
		return nil
	}
	u.started = false
	var err error
	if u.ep != nil {
		err = u.ep.Close()
		u.ep = nil
	}
	u.cancel()
	<-u.runDone
	err = errors.Join(err, u.drv.Close())
	return err
}

// PFCPStats are the counters of the UPF's PFCP endpoint, and false when it
// has none (not started, or reached by the direct binding in a core unit).
func (u *UPF) PFCPStats() (pfcp.EndpointStats, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.ep == nil {
		return pfcp.EndpointStats{}, false
	}
	return u.ep.Stats(), true
}

// Stats are the UPF's counters.
type Stats struct {
	// Pipeline: what the user-space pipeline forwarded (packets/bytes per
	// direction), drops by reason, buffered packets, sessions.
	Pipeline upfu.Stats
	// DriverName is the driver Start opened ("" before).
	DriverName string
	// Driver: the user-space path's packet I/O, whatever the driver.
	Driver DriverStats
	// AFXDP: the afxdp driver's own counters (rings, queues, fallbacks).
	AFXDP *afxdp.Stats `json:",omitempty"`
	// XDP: the xdp driver's offload (forwarded, passed to the host path
	// and dropped by reason, flow cache, sessions offloaded); Driver and
	// Pipeline count its host path.
	XDP *xdp.Stats `json:",omitempty"`
	// Control: what UPF-C holds (sessions, rules, reports).
	Control upfc.Stats
}

// Stats returns the counters.
func (u *UPF) Stats() Stats {
	st := Stats{Pipeline: u.pipe.Stats(), Control: u.upfc.Stats()}
	u.mu.Lock()
	defer u.mu.Unlock()
	st.DriverName = u.driver
	portableCounts := func(d *portable.Driver) DriverStats {
		ps := d.Stats()
		return DriverStats{N3Rx: ps.N3Rx, N3Tx: ps.N3Tx, N6Rx: ps.N6Rx, N6Tx: ps.N6Tx, RxErrors: ps.RxErrors, TxErrors: ps.TxErrors}
	}
	switch d := u.drv.(type) {
	case *portable.Driver:
		st.Driver = portableCounts(d)
	case *xdpDriver:
		st.Driver = portableCounts(d.Driver)
		xs := d.fast.Stats()
		st.XDP = &xs
	case *afxdp.Driver:
		as := d.Stats()
		st.AFXDP = &as
		st.Driver = afxdpCounts(&as)
	}
	return st
}

// afxdpCounts sums the afxdp driver's interface counters: N3 is the first
// interface, N6 the others; the kernel-socket path counts as I/O too.
func afxdpCounts(as *afxdp.Stats) DriverStats {
	var d DriverStats
	for i, ifc := range as.Ifaces {
		if i == 0 {
			d.N3Rx, d.N3Tx = ifc.Rx, ifc.Tx+ifc.Fallback
		} else {
			d.N6Rx += ifc.Rx
			d.N6Tx += ifc.Tx + ifc.Fallback
		}
		d.TxErrors += ifc.TxDrops
		d.RxErrors += ifc.RxInvalid
	}
	d.TxErrors += as.SinkErrors
	return d
}
