package sim

import (
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tern5g/tern/gtpu"
	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/sctp"
	"github.com/tern5g/tern/security/suci"
	"github.com/tern5g/tern/sim/gnb"
)

// Config describes one simulator run. Zero fields take the defaults of
// DefaultConfig (the demo subscribers of `tern up`).
type Config struct {
	AMFAddr   string      // AMF N2 address, e.g. "127.0.0.1:38412"
	Transport sctp.Config // kernel SCTP or SCTP over UDP

	GNBs        int // gNBs, each with its own SCTP association; UEs are spread round-robin
	UEs         int
	Concurrency int // UEs running a procedure at once

	PLMN   identity.PLMN
	TAC    uint32
	Slices []identity.SNSSAI // requested NSSAI and the gNB's supported slices
	GNBID  uint32            // first gNB ID (22 bits); gNB i gets GNBID+i

	FirstIMSI string // 15 digits; UE i gets FirstIMSI+i
	K, OPc    []byte // 16 bytes each, shared by all simulated subscribers
	AMF       []byte // authentication management field, 2 bytes
	SQN       uint64 // the USIMs' initial highest accepted SQN

	RoutingIndicator string
	SUCIScheme       suci.Scheme
	HNKeyID          uint8  // 0 with no HNPublicKey: the demo key's ID
	HNPublicKey      []byte // nil: the demo key of the scheme (DemoHNPublicKeyA/B)

	// EA and IA are the UE security capability bitmaps (TS 24.501
	// §9.11.3.54 octet 3/4: bit 8 = EA0/IA0, bit 7 = 128-EA1/IA1, ...).
	// They are the algorithms the UEs accept.
	EA, IA uint8

	Scenario Scenario
	// Timeout bounds one procedure of one UE.
	Timeout time.Duration

	// PDU sessions and user plane (steps session, ping, transfer, release).

	// DNNs: the "session" step establishes one PDU session per DNN, with
	// S-NSSAI Slices[0] (default ["internet"]).
	DNNs []string
	// N3Addrs are the gNBs' GTP-U addresses, "IP:port"; gNB i uses
	// N3Addrs[i % len]. An address with port 0 can be shared; one with a
	// fixed port (a real UPF sends downlink to port 2152 of the address in
	// the DL tunnel) needs one entry per gNB. Default ["127.0.0.1:0"]; the
	// lab uses ["10.100.3.1:2152"].
	N3Addrs []string
	// N3PeerPort is the UPFs' GTP-U port (default 2152).
	N3PeerPort uint16
	// N3Tap, when set, sees every GTP-U datagram of the gNBs (for pcap).
	N3Tap sctp.PacketTap
	// DataTarget is the data network host the ping and transfer steps send
	// to (default 10.60.0.1, the N6 gateway of the default UPF's internet
	// DNN, which the kernel of a root `tern up` answers; in the lab, the
	// DN server lab.DNServer).
	DataTarget netip.Addr
	// NoDownlink, when set, says why nothing can come back from DataTarget
	// (e.g. the UPF runs without N6 devices). The ping step then checks
	// only that the UPF took the uplink: the requests were sent and the
	// UPF answered none with a GTP-U Error Indication; replies that do
	// come are still counted.
	NoDownlink string
	// TUN gives every PDU session a TUN device (TUNPrefix + a number, e.g.
	// "uesimtun0") with policy routing from the session address, so that
	// ping/curl/iperf3 bound to that address use the session. Needs root.
	// Without it the ping and transfer steps use packets built in memory;
	// they do in TUN mode too (the TUN takes the other downlink).
	TUN       bool
	TUNPrefix string // default "uesimtun"
	TUNTable  int    // routing table of the first TUN; +1 per TUN (default 1000)

	PingCount    int           // echo requests per session (default 5)
	PingInterval time.Duration // between requests (default 20 ms)
	PingTimeout  time.Duration // wait for replies after the last request (default 1 s)

	TransferBytes int   // UDP payload bytes per session (default 1 MiB)
	TransferSize  int   // payload bytes per datagram (default 1200)
	TransferRate  int64 // offered load in bit/s per session; 0 = as fast as possible
	TransferPort  uint16
	// TransferEcho says the target echoes UDP (port 7): received and lost
	// datagrams are then counted. Default port: 7 with TransferEcho, else 9
	// (discard), where only the offered uplink can be measured.
	TransferEcho bool

	// AfterStep, when set, is called after each step, once every UE is
	// done with it (e.g. to run external tools over the TUNs between
	// "session" and "release"; for tests and demos).
	AfterStep func(StepResult)
	// OnProcedure, when set, is told of every procedure of the scenario
	// that a UE ends (named as the report names it, ue.Proc*), whether it
	// succeeded, from the goroutine that ended it: e.g. to act after the
	// Nth registration of a storm. It must not block or call the UE.
	OnProcedure func(procedure string, ok bool)
	// OnSession, when set, is told of every PDU session a UE establishes
	// (with its TUN up in TUN mode), from that UE's worker goroutine.
	OnSession func(supi string, s SessionOutcome)
	// OnDeregistered, when set, is told of every deregistration the
	// network starts (TS 24.501 §5.5.2.3), with its 5GMM cause (0: none
	// given) and whether the UE registers again by itself. It is called
	// from the gNB's reader while the UE handles the request: it must not
	// block or call the UE.
	OnDeregistered func(supi string, cause nas.Cause5GMM, reregister bool)

	// Idle mode (ue.Config): InactivityTimeout releases a connected UE
	// without user-plane packets for that long to CM-IDLE (0 = never);
	// PeriodicRegistration runs periodic registration every T3512 in
	// CM-IDLE. Both off by default: they would add procedures to a bench.
	InactivityTimeout    time.Duration
	PeriodicRegistration bool

	// Mobility (steps handover-xn, handover-n2; mobility.go). TACs gives
	// gNB i the TAC TACs[i % len] (gNBs may share a TA); without it gNB i
	// serves TAC + i*TACStep (0: every gNB in TAC). The AMF must serve
	// them all.
	TACs    []uint32
	TACStep uint32
	// HandoverEvery: while the scenario runs, a background mover hands the
	// next UE (round robin) that is connected, has a PDU session and is
	// not in a step's procedure to its next gNB, every HandoverEvery; 0 =
	// off. HandoverKind is its kind: "xn" (default), "n2" or "random".
	HandoverEvery time.Duration
	HandoverKind  string
	// HandoverInterruption is how long a UE is between gNBs during a
	// handover (gnb.Config.HandoverInterruption: RRC reconfiguration and
	// random access; default 0). It is inside the handover-n2 window, not
	// the handover-xn one. It also keeps an Xn handover's Path Switch
	// Request, which goes on the target's association, from overtaking the
	// UE's last message on the source's at the AMF (tern's AMF refuses a
	// path switch while a procedure runs, e.g. awaiting the Registration
	// Complete of the previous move).
	HandoverInterruption time.Duration

	Logger *slog.Logger
}

// Demo subscriber data: what `tern up` provisions (free5GC's test subscribers).
const (
	DefaultFirstIMSI = "208930000000001"
	DefaultK         = "8baf473f2f8fd09487cccbd7097c6862"
	DefaultOPc       = "8e27b6af0e692e750f32667a3b14605d"
	DefaultAMFAddr   = "127.0.0.1:38412"
	// DefaultDataTarget is the N6 gateway of `tern up`'s internet DNN: the
	// first host of its pool 10.60.0.0/16, the UPF's TUN address, which the
	// SMF never hands to a UE.
	DefaultDataTarget = "10.60.0.1"

	// The home network public keys matching the UDM's demo private keys
	// (free5GC's and UERANSIM's demo keys: profile A key 1, profile B key 2).
	// Used when a SUCI scheme is chosen without a key.
	DemoHNPublicKeyA = "5a8d38864820197c3394b92613b20b91633cbd897119273bf8e4a6f4eec0a650"
	DemoHNKeyIDA     = 1
	DemoHNPublicKeyB = "0272da71976234ce833a6907425867b82e074d44ef907dfb4b3e21c1c2256ebcd1"
	DemoHNKeyIDB     = 2
)

// DefaultConfig returns a one-gNB, one-UE register+deregister run against
// the demo subscribers on PLMN 208/93, TAC 1, slice 1-010203.
func DefaultConfig() Config {
	k, _ := hex.DecodeString(DefaultK)
	opc, _ := hex.DecodeString(DefaultOPc)
	return Config{
		AMFAddr:     DefaultAMFAddr,
		Transport:   sctp.Config{Transport: "auto"},
		GNBs:        1,
		UEs:         1,
		Concurrency: 1,
		PLMN:        identity.PLMN{MCC: "208", MNC: "93"},
		TAC:         1,
		Slices:      []identity.SNSSAI{{SST: 1, SD: 0x010203}},
		GNBID:       1,
		FirstIMSI:   DefaultFirstIMSI,
		K:           k,
		OPc:         opc,
		AMF:         []byte{0x80, 0x00},
		// EA0-EA3 and IA0-IA3: accept whatever the core prefers.
		EA:       0xF0,
		IA:       0xF0,
		Scenario: Scenario{StepRegister, StepDeregister},
		Timeout:  5 * time.Second,

		DNNs:          []string{"internet"},
		N3Addrs:       []string{gnb.DefaultN3Addr},
		N3PeerPort:    gtpu.Port,
		DataTarget:    netip.MustParseAddr(DefaultDataTarget),
		TUNPrefix:     "uesimtun",
		TUNTable:      1000,
		PingCount:     5,
		PingInterval:  20 * time.Millisecond,
		PingTimeout:   time.Second,
		TransferBytes: 1 << 20,
		TransferSize:  1200,
		HandoverKind:  HandoverKindXn,
	}
}

// withDefaults fills zero fields from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.AMFAddr == "" {
		c.AMFAddr = d.AMFAddr
	}
	if c.Transport.Transport == "" {
		c.Transport.Transport = d.Transport.Transport
	}
	if c.GNBs == 0 {
		c.GNBs = d.GNBs
	}
	if c.UEs == 0 {
		c.UEs = d.UEs
	}
	if c.Concurrency == 0 {
		c.Concurrency = d.Concurrency
	}
	if c.PLMN == (identity.PLMN{}) {
		c.PLMN = d.PLMN
	}
	if c.TAC == 0 {
		c.TAC = d.TAC
	}
	if c.Slices == nil {
		c.Slices = d.Slices
	}
	if c.GNBID == 0 {
		c.GNBID = d.GNBID
	}
	if c.FirstIMSI == "" {
		c.FirstIMSI = d.FirstIMSI
	}
	if c.K == nil {
		c.K = d.K
	}
	if c.OPc == nil {
		c.OPc = d.OPc
	}
	if c.AMF == nil {
		c.AMF = d.AMF
	}
	if c.EA == 0 {
		c.EA = d.EA
	}
	if c.IA == 0 {
		c.IA = d.IA
	}
	if c.Scenario == nil {
		c.Scenario = d.Scenario
	}
	if c.HNPublicKey == nil {
		switch c.SUCIScheme {
		case suci.SchemeProfileA:
			c.HNPublicKey, _ = hex.DecodeString(DemoHNPublicKeyA)
			if c.HNKeyID == 0 {
				c.HNKeyID = DemoHNKeyIDA
			}
		case suci.SchemeProfileB:
			c.HNPublicKey, _ = hex.DecodeString(DemoHNPublicKeyB)
			if c.HNKeyID == 0 {
				c.HNKeyID = DemoHNKeyIDB
			}
		}
	}
	if c.Timeout == 0 {
		c.Timeout = d.Timeout
	}
	if c.DNNs == nil {
		c.DNNs = d.DNNs
	}
	if c.N3Addrs == nil {
		c.N3Addrs = d.N3Addrs
	}
	if c.N3PeerPort == 0 {
		c.N3PeerPort = d.N3PeerPort
	}
	if !c.DataTarget.IsValid() {
		c.DataTarget = d.DataTarget
	}
	if c.TUNPrefix == "" {
		c.TUNPrefix = d.TUNPrefix
	}
	if c.TUNTable == 0 {
		c.TUNTable = d.TUNTable
	}
	if c.PingCount == 0 {
		c.PingCount = d.PingCount
	}
	if c.PingInterval == 0 {
		c.PingInterval = d.PingInterval
	}
	if c.PingTimeout == 0 {
		c.PingTimeout = d.PingTimeout
	}
	if c.TransferBytes == 0 {
		c.TransferBytes = d.TransferBytes
	}
	if c.TransferSize == 0 {
		c.TransferSize = d.TransferSize
	}
	if c.TransferPort == 0 {
		c.TransferPort = 9
		if c.TransferEcho {
			c.TransferPort = 7
		}
	}
	if c.HandoverKind == "" {
		c.HandoverKind = HandoverKindXn
	}
	return c
}

// validate names the first bad field.
func (c Config) validate() error {
	if c.GNBs < 1 || c.UEs < 0 || c.Concurrency < 1 {
		return fmt.Errorf("sim: gnbs (%d) and concurrency (%d) must be >= 1, ues (%d) >= 0", c.GNBs, c.Concurrency, c.UEs)
	}
	if err := c.PLMN.Validate(); err != nil {
		return fmt.Errorf("sim: plmn: %w", err)
	}
	for i := range c.GNBs {
		if t := c.tac(i); t > 0xFFFFFF || (i > 0 && len(c.TACs) == 0 && t < c.TAC) {
			return fmt.Errorf("sim: tac %d of gnb %d: more than 24 bits", uint64(c.TAC)+uint64(i)*uint64(c.TACStep), i)
		}
	}
	if err := validHandoverKind(c.HandoverKind); err != nil {
		return err
	}
	if c.HandoverEvery < 0 || c.HandoverInterruption < 0 {
		return fmt.Errorf("sim: handover every %v, interruption %v: want >= 0", c.HandoverEvery, c.HandoverInterruption)
	}
	if c.GNBs < 2 && (c.HandoverEvery > 0 || slices.Contains(c.Scenario, StepHandoverXn) || slices.Contains(c.Scenario, StepHandoverN2)) {
		return fmt.Errorf("sim: handover needs at least 2 gnbs")
	}
	if c.GNBID+uint32(c.GNBs) > 1<<22 {
		return fmt.Errorf("sim: gnb id %d (+%d gnbs): more than 22 bits", c.GNBID, c.GNBs)
	}
	if len(c.FirstIMSI) != 15 {
		return fmt.Errorf("sim: first imsi %q: want 15 digits", c.FirstIMSI)
	}
	first, err := strconv.ParseUint(c.FirstIMSI, 10, 64)
	if err != nil {
		return fmt.Errorf("sim: first imsi %q: %w", c.FirstIMSI, err)
	}
	if first+uint64(c.UEs) > 999_999_999_999_999 {
		return fmt.Errorf("sim: first imsi %s + %d ues overflows 15 digits", c.FirstIMSI, c.UEs)
	}
	if !strings.HasPrefix(c.FirstIMSI, c.PLMN.MCC+c.PLMN.MNC) {
		return fmt.Errorf("sim: first imsi %s is not in plmn %s", c.FirstIMSI, c.PLMN)
	}
	if len(c.K) != 16 || len(c.OPc) != 16 {
		return fmt.Errorf("sim: k and opc must be 16 bytes")
	}
	if len(c.AMF) != 2 {
		return fmt.Errorf("sim: amf field must be 2 bytes")
	}
	if c.SUCIScheme > 2 {
		return fmt.Errorf("sim: suci scheme %d: want 0 (null), 1 (profile A) or 2 (profile B)", c.SUCIScheme)
	}
	if c.SUCIScheme != 0 && len(c.HNPublicKey) == 0 {
		return fmt.Errorf("sim: suci scheme %d needs the home network public key", c.SUCIScheme)
	}
	if len(c.Scenario) == 0 {
		return fmt.Errorf("sim: empty scenario")
	}
	if len(c.DNNs) == 0 || len(c.DNNs) > 15 {
		return fmt.Errorf("sim: %d dnns: want 1 to 15 (one PDU session each)", len(c.DNNs))
	}
	if len(c.N3Addrs) == 0 {
		return fmt.Errorf("sim: no n3 address")
	}
	for _, a := range c.N3Addrs {
		ap, err := netip.ParseAddrPort(a)
		if err != nil || !ap.Addr().Is4() || ap.Addr().IsUnspecified() {
			return fmt.Errorf("sim: n3 address %q: want a specific IPv4 address and a port", a)
		}
		if ap.Port() != 0 && len(c.N3Addrs) < c.GNBs {
			return fmt.Errorf("sim: n3 address %q has a fixed port but %d gnbs share %d addresses: give one per gnb", a, c.GNBs, len(c.N3Addrs))
		}
	}
	if !c.DataTarget.Is4() {
		return fmt.Errorf("sim: data target %s: want IPv4", c.DataTarget)
	}
	if c.InactivityTimeout < 0 {
		return fmt.Errorf("sim: inactivity timeout %v: want >= 0", c.InactivityTimeout)
	}
	if c.PingCount < 0 || c.PingCount > 1<<16 || c.TransferBytes < 0 || c.TransferSize < 0 || c.TransferSize > 65000 || c.TransferRate < 0 {
		return fmt.Errorf("sim: bad ping/transfer parameters")
	}
	if c.TUN {
		if os.Geteuid() != 0 {
			return fmt.Errorf("sim: tun mode needs root (CAP_NET_ADMIN)")
		}
		if len(c.TUNPrefix)+4 > 15 {
			return fmt.Errorf("sim: tun prefix %q: too long for interface names", c.TUNPrefix)
		}
	}
	return nil
}

// LoopbackN3Addrs returns one N3 address per gNB for a core on this
// machine: 127.0.1.1:2152, 127.0.1.2:2152, ... A real UPF sends downlink to
// port 2152 of the address in the DL tunnel, so each gNB needs an address
// of its own with that port; 127.0.1.x stays clear of the UPF's N3 on
// 127.0.0.1:2152 (all of 127/8 is loopback on Linux).
func LoopbackN3Addrs(gnbs int) []string {
	out := make([]string, gnbs)
	for i := range out {
		ip := netip.AddrFrom4([4]byte{127, 0, 1 + byte(i/250), byte(1 + i%250)})
		out[i] = netip.AddrPortFrom(ip, gtpu.Port).String()
	}
	return out
}

// imsi returns UE i's IMSI digits.
func (c Config) imsi(i int) string {
	first, _ := strconv.ParseUint(c.FirstIMSI, 10, 64)
	return fmt.Sprintf("%015d", first+uint64(i))
}
