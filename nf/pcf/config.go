package pcf

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tern5g/tern/identity"
)

// Config configures the PCF's session management policies.
type Config struct {
	// DNNs override what the subscription says for sessions on a DNN
	// (optionally restricted to one slice). The first matching entry wins;
	// zero fields keep the subscribed value.
	DNNs []DNNPolicy `yaml:"dnns,omitempty"`
	// Default is used when the SMF passes no subscribed default QoS or
	// session AMBR (TS 29.512 §4.2.2.2: the PCF may then apply local policy).
	Default DefaultPolicy `yaml:"default,omitempty"`
}

// DNNPolicy is a local policy for one DNN.
type DNNPolicy struct {
	DNN    string `yaml:"dnn"`
	SNSSAI string `yaml:"snssai,omitempty"` // "1-010203"; empty = any slice
	// FiveQI of the default QoS flow (TS 23.501 Table 5.7.4-1); 0 = subscribed.
	FiveQI uint8 `yaml:"5qi,omitempty"`
	// ARPPriority 1 (highest) .. 15; 0 = subscribed.
	ARPPriority uint8 `yaml:"arpPriority,omitempty"`
	// SessionAMBR as TS 29.571 BitRate strings ("100 Mbps"); empty = subscribed.
	SessionAMBRUplink   string `yaml:"sessionAmbrUplink,omitempty"`
	SessionAMBRDownlink string `yaml:"sessionAmbrDownlink,omitempty"`
}

// DefaultPolicy fills in what neither the subscription nor a DNN policy gives.
type DefaultPolicy struct {
	FiveQI              uint8  `yaml:"5qi,omitempty"`
	ARPPriority         uint8  `yaml:"arpPriority,omitempty"`
	SessionAMBRUplink   string `yaml:"sessionAmbrUplink,omitempty"`
	SessionAMBRDownlink string `yaml:"sessionAmbrDownlink,omitempty"`
}

// Defaults of DefaultPolicy: best-effort internet (5QI 9, TS 23.501 Table
// 5.7.4-1) at ARP 8, as in tern's default subscriber.
const (
	DefaultFiveQI      = 9
	DefaultARPPriority = 8
	DefaultSessionAMBR = "1 Gbps"
)

// DefaultConfig returns a configuration without DNN overrides.
func DefaultConfig() Config { return Config{}.WithDefaults() }

// WithDefaults returns c with every unset field given its default.
func (c Config) WithDefaults() Config {
	if c.Default.FiveQI == 0 {
		c.Default.FiveQI = DefaultFiveQI
	}
	if c.Default.ARPPriority == 0 {
		c.Default.ARPPriority = DefaultARPPriority
	}
	if c.Default.SessionAMBRUplink == "" {
		c.Default.SessionAMBRUplink = DefaultSessionAMBR
	}
	if c.Default.SessionAMBRDownlink == "" {
		c.Default.SessionAMBRDownlink = DefaultSessionAMBR
	}
	return c
}

// Validate checks c (after WithDefaults) and names the first bad field.
func (c Config) Validate() error {
	_, err := c.compile()
	return err
}

type dnnPolicy struct {
	DNNPolicy
	slice    identity.SNSSAI
	anySlice bool
}

func (c Config) compile() ([]dnnPolicy, error) {
	out := make([]dnnPolicy, 0, len(c.DNNs))
	for i, d := range c.DNNs {
		p := dnnPolicy{DNNPolicy: d, anySlice: d.SNSSAI == ""}
		if d.DNN == "" {
			return nil, fmt.Errorf("pcf.dnns[%d].dnn: empty", i)
		}
		if !p.anySlice {
			s, err := identity.ParseSNSSAI(d.SNSSAI)
			if err != nil {
				return nil, fmt.Errorf("pcf.dnns[%d].snssai: %w", i, err)
			}
			p.slice = s
		}
		if d.ARPPriority > 15 {
			return nil, fmt.Errorf("pcf.dnns[%d].arpPriority: %d not in 1..15", i, d.ARPPriority)
		}
		for _, r := range []struct{ name, v string }{{"sessionAmbrUplink", d.SessionAMBRUplink}, {"sessionAmbrDownlink", d.SessionAMBRDownlink}} {
			if r.v != "" && !validBitRate(r.v) {
				return nil, fmt.Errorf("pcf.dnns[%d].%s: %q is not a bit rate like \"100 Mbps\"", i, r.name, r.v)
			}
		}
		out = append(out, p)
	}
	if c.Default.FiveQI == 0 {
		return nil, errors.New("pcf.default.5qi: must not be 0")
	}
	if c.Default.ARPPriority < 1 || c.Default.ARPPriority > 15 {
		return nil, fmt.Errorf("pcf.default.arpPriority: %d not in 1..15", c.Default.ARPPriority)
	}
	if !validBitRate(c.Default.SessionAMBRUplink) || !validBitRate(c.Default.SessionAMBRDownlink) {
		return nil, errors.New("pcf.default.sessionAmbr: not a bit rate like \"1 Gbps\"")
	}
	return out, nil
}

// validBitRate checks the TS 29.571 §5.5.2 BitRate pattern
// "^\d+(\.\d+)? (bps|Kbps|Mbps|Gbps|Tbps)$".
func validBitRate(s string) bool {
	num, unit, ok := strings.Cut(s, " ")
	if !ok {
		return false
	}
	switch unit {
	case "bps", "Kbps", "Mbps", "Gbps", "Tbps":
	default:
		return false
	}
	ip, fp, hasFrac := strings.Cut(num, ".")
	digits := func(s string) bool {
		if s == "" {
			return false
		}
		_, err := strconv.ParseUint(s, 10, 64)
		return err == nil && !strings.ContainsAny(s, "+-")
	}
	return digits(ip) && (!hasFrac || digits(fp))
}
