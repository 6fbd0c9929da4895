package store

import (
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/tern5g/tern/identity"
)

// HexBytes is a byte string stored as hex in JSON and YAML.
type HexBytes []byte

// MarshalText implements encoding.TextMarshaler.
func (h HexBytes) MarshalText() ([]byte, error) {
	out := make([]byte, hex.EncodedLen(len(h)))
	hex.Encode(out, h)
	return out, nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (h *HexBytes) UnmarshalText(b []byte) error {
	out := make([]byte, hex.DecodedLen(len(b)))
	if _, err := hex.Decode(out, b); err != nil {
		return fmt.Errorf("hex: %w", err)
	}
	*h = out
	return nil
}

// OPType says whether Subscriber.OP holds the operator variant OP or the
// derived OPc (TS 35.206 §4.1).
type OPType string

// OP types.
const (
	OPTypeOP  OPType = "OP"
	OPTypeOPc OPType = "OPc"
)

// MaxSQN is the largest 48-bit sequence number (TS 33.102 §6.3.2).
const MaxSQN = 1<<48 - 1

// AMBR is an aggregate maximum bit rate as TS 29.571 BitRate strings
// ("1 Gbps", "100 Mbps").
type AMBR struct {
	Uplink   string `json:"uplink" yaml:"uplink"`
	Downlink string `json:"downlink" yaml:"downlink"`
}

// DNN is the subscription for one data network within a slice
// (TS 29.503 DnnConfiguration).
type DNN struct {
	Name        string `json:"name" yaml:"name"`
	Default     bool   `json:"default,omitempty" yaml:"default,omitempty"`
	SessionAMBR AMBR   `json:"sessionAmbr" yaml:"sessionAmbr"`
	FiveQI      uint8  `json:"5qi" yaml:"5qi"`                 // default QoS flow 5QI (TS 23.501 §5.7.4)
	ARPPriority uint8  `json:"arpPriority" yaml:"arpPriority"` // 1 (highest) .. 15
}

// Slice is one subscribed S-NSSAI and its DNNs.
type Slice struct {
	SNSSAI  string `json:"snssai" yaml:"snssai"` // identity.SNSSAI String form: "1" or "1-010203"
	Default bool   `json:"default,omitempty" yaml:"default,omitempty"`
	DNNs    []DNN  `json:"dnns,omitempty" yaml:"dnns,omitempty"`
}

// ID parses the slice's S-NSSAI.
func (s Slice) ID() (identity.SNSSAI, error) { return identity.ParseSNSSAI(s.SNSSAI) }

// Subscriber is one subscriber's record: authentication data (TS 33.501
// §6.1.2, Milenage TS 35.206) and subscription data (TS 23.501 §5.15, §5.7).
type Subscriber struct {
	SUPI   string   `json:"supi" yaml:"supi"` // "imsi-<digits>"
	K      HexBytes `json:"k" yaml:"k"`       // 16 bytes
	OP     HexBytes `json:"op" yaml:"op"`     // 16 bytes, OP or OPc according to OPType
	OPType OPType   `json:"opType" yaml:"opType"`
	AMF    HexBytes `json:"amf" yaml:"amf"` // 2 bytes, authentication management field
	SQN    uint64   `json:"sqn" yaml:"sqn"` // SQN_HE, 48 bits
	GPSIs  []string `json:"gpsis,omitempty" yaml:"gpsis,omitempty"`
	UEAMBR AMBR     `json:"ueAmbr" yaml:"ueAmbr"`
	Slices []Slice  `json:"slices" yaml:"slices"`
}

// Validate checks the record and names the first bad field.
func (s *Subscriber) Validate() error {
	if _, err := identity.ParseSUPI(s.SUPI); err != nil {
		return fmt.Errorf("supi: %w", err)
	}
	if len(s.K) != 16 {
		return fmt.Errorf("%s: k: want 16 bytes, have %d", s.SUPI, len(s.K))
	}
	if len(s.OP) != 16 {
		return fmt.Errorf("%s: op: want 16 bytes, have %d", s.SUPI, len(s.OP))
	}
	if s.OPType != OPTypeOP && s.OPType != OPTypeOPc {
		return fmt.Errorf("%s: opType: %q is neither %q nor %q", s.SUPI, s.OPType, OPTypeOP, OPTypeOPc)
	}
	if len(s.AMF) != 2 {
		return fmt.Errorf("%s: amf: want 2 bytes, have %d", s.SUPI, len(s.AMF))
	}
	if s.SQN > MaxSQN {
		return fmt.Errorf("%s: sqn: %d exceeds 48 bits", s.SUPI, s.SQN)
	}
	seen := make(map[identity.SNSSAI]bool, len(s.Slices))
	for i, sl := range s.Slices {
		id, err := sl.ID()
		if err != nil {
			return fmt.Errorf("%s: slices[%d].snssai: %w", s.SUPI, i, err)
		}
		if seen[id] {
			return fmt.Errorf("%s: slices[%d].snssai: %s listed twice", s.SUPI, i, id)
		}
		seen[id] = true
		dnns := make(map[string]bool, len(sl.DNNs))
		dflt := ""
		for j, d := range sl.DNNs {
			switch {
			case d.Default && dflt != "":
				// One default DNN per S-NSSAI (TS 29.503 DnnInfo
				// defaultDnnIndicator): the AMF's choice must be unique.
				return fmt.Errorf("%s: slices[%d].dnns[%d].default: %q is already the default", s.SUPI, i, j, dflt)
			case d.Name == "":
				return fmt.Errorf("%s: slices[%d].dnns[%d].name: empty", s.SUPI, i, j)
			case dnns[d.Name]:
				return fmt.Errorf("%s: slices[%d].dnns[%d].name: %q listed twice", s.SUPI, i, j, d.Name)
			case d.FiveQI == 0:
				return fmt.Errorf("%s: slices[%d].dnns[%d].5qi: must be 1..255", s.SUPI, i, j)
			case d.ARPPriority < 1 || d.ARPPriority > 15:
				return fmt.Errorf("%s: slices[%d].dnns[%d].arpPriority: %d not in 1..15", s.SUPI, i, j, d.ARPPriority)
			}
			dnns[d.Name] = true
			if d.Default {
				dflt = d.Name
			}
		}
	}
	return nil
}

// Clone returns a deep copy, so callers never alias the store's memory.
func (s *Subscriber) Clone() Subscriber {
	c := *s
	c.K = slices.Clone(s.K)
	c.OP = slices.Clone(s.OP)
	c.AMF = slices.Clone(s.AMF)
	c.GPSIs = slices.Clone(s.GPSIs)
	c.Slices = make([]Slice, len(s.Slices))
	for i, sl := range s.Slices {
		c.Slices[i] = sl
		c.Slices[i].DNNs = slices.Clone(sl.DNNs)
	}
	return c
}

// ErrNotFound is returned for an unknown SUPI.
var ErrNotFound = errors.New("subscriber not found")
