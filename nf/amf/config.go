package amf

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/sctp"
)

// Default values (TS 24.501 §10.2 Table 10.2.1 for the NAS timers).
const (
	DefaultName               = "tern-amf"
	DefaultN2Address          = "127.0.0.1:38412"
	DefaultUDPPort            = 9899
	DefaultT3550              = 6 * time.Second
	DefaultT3560              = 6 * time.Second
	DefaultT3570              = 6 * time.Second
	DefaultT3512              = 54 * time.Minute
	DefaultMaxRetransmissions = 4 // TS 24.501 §5.4.1.3.7 c): on the fifth expiry the procedure is aborted
	DefaultSBITimeout         = 5 * time.Second
	// T3513 (paging) and T3522 (network deregistration) are network
	// dependent in TS 24.501 Table 10.2.2; 2 s with two retransmissions
	// pages for 6 s in all, as free5GC does.
	DefaultT3513                 = 2 * time.Second
	DefaultPagingRetransmissions = 2
	DefaultT3522                 = 6 * time.Second
	// DefaultReachabilityMargin is what the mobile reachable timer adds to
	// T3512 by default (TS 24.501 §5.3.7: "4 minutes greater than T3512"),
	// and the default implicit deregistration timer.
	DefaultReachabilityMargin = 4 * time.Minute
	// DefaultHandoverGuard bounds each phase of an N2 handover at the AMF
	// (preparation, then execution up to Handover Notify).
	DefaultHandoverGuard    = 5 * time.Second
	DefaultRelativeCapacity = 255
)

// Config is the AMF configuration. The zero value of a field means "default"
// where a default exists (see WithDefaults).
type Config struct {
	// Name is the AMF name sent in NG Setup Response (TS 38.413 §9.3.3.21).
	Name string `yaml:"name"`
	// GUAMIs served by this AMF; the first one is used for new 5G-GUTIs.
	GUAMIs []GUAMIConfig `yaml:"guamis"`
	// TAIs is the supported tracking area list, with the S-NSSAIs supported in
	// each TA. The union of the slices per PLMN is the PLMN support list
	// (the PLMN Support List of TS 38.413 §9.2.6.2) advertised in NG Setup Response.
	TAIs []TAIConfig `yaml:"tais"`
	// N2Address is the SCTP listen address for NGAP (default 127.0.0.1:38412).
	N2Address string `yaml:"n2Address"`
	// SCTP selects the transport (auto/kernel/udp) and its parameters.
	SCTP sctp.Config `yaml:"sctp"`
	// Security lists the NAS algorithms in order of preference.
	Security SecurityConfig `yaml:"security"`
	// Timers are the NAS timers of TS 24.501 §10.2.
	Timers TimerConfig `yaml:"timers"`
	// RelativeCapacity is the relative AMF capacity (TS 38.413 §9.3.1.32), 0..255.
	RelativeCapacity *uint8 `yaml:"relativeCapacity"`
	// InstanceID is the NF instance id used in Nudm_UECM registration; a
	// random UUID is made when empty.
	InstanceID string `yaml:"instanceId"`
	// APIRoot is where other NFs reach this AMF's SBI (TS 29.501 §4.4.1,
	// "http://10.0.0.1:8000"): the callback URIs it hands out
	// (smContextStatusUri, deregCallbackUri) start with it. Empty in a
	// single process, where callbacks are Go calls.
	APIRoot string `yaml:"apiRoot,omitempty"`
}

// GUAMIConfig is one served GUAMI (TS 23.003 §2.10.1).
type GUAMIConfig struct {
	PLMN    string `yaml:"plmn"`    // "20893"
	Region  uint8  `yaml:"region"`  // AMF Region ID, 8 bits
	Set     uint16 `yaml:"set"`     // AMF Set ID, 10 bits
	Pointer uint8  `yaml:"pointer"` // AMF Pointer, 6 bits
}

// TAIConfig is one supported tracking area with its slices.
type TAIConfig struct {
	PLMN   string   `yaml:"plmn"`   // "20893"
	TAC    uint32   `yaml:"tac"`    // 24 bits
	Slices []string `yaml:"slices"` // S-NSSAIs: "1" or "1-010203"
}

// SecurityConfig holds the NAS algorithm priority lists (TS 33.501 §6.7.2).
// Names are "NIA0".."NIA3" and "NEA0".."NEA3"; the first one the UE supports
// is selected.
type SecurityConfig struct {
	Integrity []string `yaml:"integrity"`
	Ciphering []string `yaml:"ciphering"`
}

// TimerConfig holds the AMF-side NAS timers (TS 24.501 §10.2).
type TimerConfig struct {
	T3550 time.Duration `yaml:"t3550"` // Registration Accept (with new GUTI) -> Registration Complete
	T3560 time.Duration `yaml:"t3560"` // Authentication Request / Security Mode Command
	T3570 time.Duration `yaml:"t3570"` // Identity Request
	T3512 time.Duration `yaml:"t3512"` // periodic registration update timer sent to the UE
	// MaxRetransmissions is how many times a message is resent before the
	// procedure is aborted (4: five sends in all).
	MaxRetransmissions int           `yaml:"maxRetransmissions"`
	T3513              time.Duration `yaml:"t3513"` // Paging sent (TS 24.501 §5.6.2.2.1)
	T3522              time.Duration `yaml:"t3522"` // network-initiated DEREGISTRATION REQUEST sent
	// PagingRetransmissions is how many times Paging is repeated on T3513
	// expiry before paging fails (default 2).
	PagingRetransmissions int `yaml:"pagingRetransmissions"`
	// MobileReachable runs while a registered UE is CM-IDLE (TS 24.501
	// §5.3.7; default T3512 + 4 min): when it expires the UE is not paged
	// any more and ImplicitDeregistration starts (default 4 min), at whose
	// expiry the UE is deregistered.
	MobileReachable        time.Duration `yaml:"mobileReachable"`
	ImplicitDeregistration time.Duration `yaml:"implicitDeregistration"`
	// Handover bounds each phase of an N2 handover: from Handover Request
	// to its acknowledgement, and from Handover Command to Handover Notify
	// (default 5 s; the AMF's counterpart of TNGRELOCprep/overall).
	Handover time.Duration `yaml:"handover"`
	// SBI bounds each call the AMF makes to another NF for a UE (AUSF,
	// UDM, NSSF, SMF): a peer that does not answer in time fails the
	// procedure with the spec's cause instead of holding the UE.
	SBI time.Duration `yaml:"sbi"`
}

// DefaultConfig returns a configuration that works with tern's other
// defaults: PLMN 208/93, TAC 1, slices 1 and 1-010203, GUAMI 20893-cafe00.
func DefaultConfig() Config {
	c := Config{
		GUAMIs: []GUAMIConfig{{PLMN: "20893", Region: 0xCA, Set: 0x3F8, Pointer: 0}},
		TAIs:   []TAIConfig{{PLMN: "20893", TAC: 1, Slices: []string{"1-010203", "1"}}},
	}
	return c.WithDefaults()
}

// WithDefaults returns c with every unset field given its default.
func (c Config) WithDefaults() Config {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.N2Address == "" {
		c.N2Address = DefaultN2Address
	}
	if c.SCTP.Transport == "" {
		c.SCTP.Transport = "auto"
	}
	if c.SCTP.UDPPort == 0 {
		c.SCTP.UDPPort = DefaultUDPPort
	}
	if len(c.Security.Integrity) == 0 {
		c.Security.Integrity = []string{"NIA2", "NIA1", "NIA3"}
	}
	if len(c.Security.Ciphering) == 0 {
		c.Security.Ciphering = []string{"NEA2", "NEA1", "NEA3", "NEA0"}
	}
	if c.Timers.T3550 == 0 {
		c.Timers.T3550 = DefaultT3550
	}
	if c.Timers.T3560 == 0 {
		c.Timers.T3560 = DefaultT3560
	}
	if c.Timers.T3570 == 0 {
		c.Timers.T3570 = DefaultT3570
	}
	if c.Timers.T3512 == 0 {
		c.Timers.T3512 = DefaultT3512
	}
	if c.Timers.MaxRetransmissions == 0 {
		c.Timers.MaxRetransmissions = DefaultMaxRetransmissions
	}
	if c.Timers.SBI == 0 {
		c.Timers.SBI = DefaultSBITimeout
	}
	if c.Timers.T3513 == 0 {
		c.Timers.T3513 = DefaultT3513
	}
	if c.Timers.PagingRetransmissions == 0 {
		c.Timers.PagingRetransmissions = DefaultPagingRetransmissions
	}
	if c.Timers.T3522 == 0 {
		c.Timers.T3522 = DefaultT3522
	}
	if c.Timers.MobileReachable == 0 {
		c.Timers.MobileReachable = c.Timers.T3512 + DefaultReachabilityMargin
	}
	if c.Timers.ImplicitDeregistration == 0 {
		c.Timers.ImplicitDeregistration = DefaultReachabilityMargin
	}
	if c.Timers.Handover == 0 {
		c.Timers.Handover = DefaultHandoverGuard
	}
	if c.RelativeCapacity == nil {
		rc := uint8(DefaultRelativeCapacity)
		c.RelativeCapacity = &rc
	}
	return c
}

// Validate checks c (after WithDefaults) and names the first bad field.
func (c Config) Validate() error {
	_, err := c.compile()
	return err
}

// servedConfig is Config parsed into identity values, built once by New.
type servedConfig struct {
	name        string
	guamis      []identity.GUAMI
	tais        []identity.TAI
	taSlices    map[identity.TAI][]identity.SNSSAI
	plmnSlices  []plmnSlices // PLMN support list, in first-seen order
	intPrio     []uint8      // NIA ids in preference order
	encPrio     []uint8      // NEA ids in preference order
	timers      TimerConfig
	relCapacity uint8
}

type plmnSlices struct {
	plmn   identity.PLMN
	slices []identity.SNSSAI
}

func (c Config) compile() (*servedConfig, error) {
	s := &servedConfig{name: c.Name, taSlices: make(map[identity.TAI][]identity.SNSSAI), timers: c.Timers}
	if c.Name == "" {
		return nil, errors.New("amf.name: must not be empty")
	}
	if len(c.Name) > 150 { // TS 38.413 §9.3.3.21: PrintableString (SIZE(1..150,...))
		return nil, fmt.Errorf("amf.name: %d characters, at most 150", len(c.Name))
	}
	if len(c.GUAMIs) == 0 {
		return nil, errors.New("amf.guamis: at least one served GUAMI is required")
	}
	for i, g := range c.GUAMIs {
		p, err := identity.ParsePLMN(g.PLMN)
		if err != nil {
			return nil, fmt.Errorf("amf.guamis[%d].plmn: %w", i, err)
		}
		id := identity.AMFID{RegionID: g.Region, SetID: g.Set, Pointer: g.Pointer}
		if g.Set > 0x3FF {
			return nil, fmt.Errorf("amf.guamis[%d].set: %d does not fit 10 bits", i, g.Set)
		}
		if g.Pointer > 0x3F {
			return nil, fmt.Errorf("amf.guamis[%d].pointer: %d does not fit 6 bits", i, g.Pointer)
		}
		s.guamis = append(s.guamis, identity.GUAMI{PLMN: p, AMFID: id})
	}
	if len(c.TAIs) == 0 {
		return nil, errors.New("amf.tais: at least one supported TAI is required")
	}
	for i, t := range c.TAIs {
		p, err := identity.ParsePLMN(t.PLMN)
		if err != nil {
			return nil, fmt.Errorf("amf.tais[%d].plmn: %w", i, err)
		}
		if t.TAC > 0xFFFFFF {
			return nil, fmt.Errorf("amf.tais[%d].tac: %d does not fit 24 bits", i, t.TAC)
		}
		if len(t.Slices) == 0 {
			return nil, fmt.Errorf("amf.tais[%d].slices: at least one S-NSSAI is required", i)
		}
		tai := identity.TAI{PLMN: p, TAC: t.TAC}
		if _, dup := s.taSlices[tai]; dup {
			return nil, fmt.Errorf("amf.tais[%d]: duplicate TAI %s", i, tai)
		}
		var slices []identity.SNSSAI
		for j, str := range t.Slices {
			sn, err := identity.ParseSNSSAI(str)
			if err != nil {
				return nil, fmt.Errorf("amf.tais[%d].slices[%d]: %w", i, j, err)
			}
			slices = append(slices, sn)
		}
		s.tais = append(s.tais, tai)
		s.taSlices[tai] = slices
		s.addPLMNSlices(p, slices)
	}
	for i, g := range s.guamis {
		if s.plmnIndex(g.PLMN) < 0 {
			return nil, fmt.Errorf("amf.guamis[%d].plmn: %s has no TAI in amf.tais", i, g.PLMN)
		}
	}
	if _, port, err := net.SplitHostPort(c.N2Address); err != nil {
		return nil, fmt.Errorf("amf.n2Address: %w", err)
	} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return nil, fmt.Errorf("amf.n2Address: %q: the port %q is not a number from 0 to 65535", c.N2Address, port)
	}
	switch c.SCTP.Transport {
	case "", "auto", "kernel", "udp":
	default:
		return nil, fmt.Errorf("amf.sctp.transport: %q, want auto, kernel or udp", c.SCTP.Transport)
	}
	if c.SCTP.UDPPort < 0 || c.SCTP.UDPPort > 65535 {
		return nil, fmt.Errorf("amf.sctp.udpPort: %d out of range", c.SCTP.UDPPort)
	}
	if c.SCTP.MaxMissedHeartbeats < 0 {
		return nil, fmt.Errorf("amf.sctp.maxMissedHeartbeats: %d is negative", c.SCTP.MaxMissedHeartbeats)
	}
	if c.SCTP.HandshakeTimeout < 0 {
		return nil, fmt.Errorf("amf.sctp.handshakeTimeout: %v is negative", c.SCTP.HandshakeTimeout)
	}
	var err error
	if s.intPrio, err = parseAlgs(c.Security.Integrity, "NIA"); err != nil {
		return nil, fmt.Errorf("amf.security.integrity: %w", err)
	}
	if s.encPrio, err = parseAlgs(c.Security.Ciphering, "NEA"); err != nil {
		return nil, fmt.Errorf("amf.security.ciphering: %w", err)
	}
	if len(s.intPrio) == 0 {
		return nil, errors.New("amf.security.integrity: empty")
	}
	if len(s.encPrio) == 0 {
		return nil, errors.New("amf.security.ciphering: empty")
	}
	if s.intPrio[0] == 0 {
		// TS 33.501 §5.5.2: NIA0 only for unauthenticated emergency sessions.
		return nil, errors.New("amf.security.integrity: NIA0 must not be preferred")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"t3550", c.Timers.T3550}, {"t3560", c.Timers.T3560}, {"t3570", c.Timers.T3570}, {"t3512", c.Timers.T3512},
		{"t3513", c.Timers.T3513}, {"t3522", c.Timers.T3522}, {"mobileReachable", c.Timers.MobileReachable},
		{"implicitDeregistration", c.Timers.ImplicitDeregistration}, {"handover", c.Timers.Handover},
		{"sbi", c.Timers.SBI}} {
		if d.v <= 0 {
			return nil, fmt.Errorf("amf.timers.%s: %v must be positive", d.name, d.v)
		}
	}
	if c.Timers.MaxRetransmissions < 0 || c.Timers.MaxRetransmissions > 16 {
		return nil, fmt.Errorf("amf.timers.maxRetransmissions: %d out of 0..16", c.Timers.MaxRetransmissions)
	}
	if c.Timers.PagingRetransmissions < 0 || c.Timers.PagingRetransmissions > 16 {
		return nil, fmt.Errorf("amf.timers.pagingRetransmissions: %d out of 0..16", c.Timers.PagingRetransmissions)
	}
	if c.RelativeCapacity != nil {
		s.relCapacity = *c.RelativeCapacity
	} else {
		s.relCapacity = DefaultRelativeCapacity
	}
	return s, nil
}

func (s *servedConfig) plmnIndex(p identity.PLMN) int {
	for i := range s.plmnSlices {
		if s.plmnSlices[i].plmn == p {
			return i
		}
	}
	return -1
}

func (s *servedConfig) addPLMNSlices(p identity.PLMN, slices []identity.SNSSAI) {
	i := s.plmnIndex(p)
	if i < 0 {
		s.plmnSlices = append(s.plmnSlices, plmnSlices{plmn: p})
		i = len(s.plmnSlices) - 1
	}
	for _, sn := range slices {
		if !containsSNSSAI(s.plmnSlices[i].slices, sn) {
			s.plmnSlices[i].slices = append(s.plmnSlices[i].slices, sn)
		}
	}
}

// servesTAI reports whether tai is in the supported TA list.
func (s *servedConfig) servesTAI(tai identity.TAI) bool {
	_, ok := s.taSlices[tai]
	return ok
}

func containsSNSSAI(list []identity.SNSSAI, s identity.SNSSAI) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func parseAlgs(names []string, prefix string) ([]uint8, error) {
	out := make([]uint8, 0, len(names))
	for i, n := range names {
		u := strings.ToUpper(strings.TrimSpace(n))
		if len(u) != len(prefix)+1 || !strings.HasPrefix(u, prefix) || u[len(prefix)] < '0' || u[len(prefix)] > '3' {
			return nil, fmt.Errorf("[%d] %q: want %s0..%s3", i, n, prefix, prefix)
		}
		id := u[len(prefix)] - '0'
		for _, x := range out {
			if x == id {
				return nil, fmt.Errorf("[%d] %q: listed twice", i, n)
			}
		}
		out = append(out, id)
	}
	return out, nil
}
