package udm

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/tern5g/tern/security/suci"
)

// Config configures the UDM.
type Config struct {
	// InstanceID is the NF instance ID the UDM reports in events (optional).
	InstanceID string `yaml:"instanceId,omitempty"`
	// HomeNetworkKeys are the SIDF's private keys for SUCI de-concealment
	// (TS 33.501 §6.12.2). With none, only null-scheme SUCIs are accepted.
	HomeNetworkKeys []HomeNetworkKey `yaml:"homeNetworkKeys,omitempty"`
}

// HomeNetworkKey is one home network private key in configuration form.
type HomeNetworkKey struct {
	ID         uint8  `yaml:"id"`         // home network public key identifier (TS 23.003 §2.2B)
	Scheme     string `yaml:"scheme"`     // "profileA" (X25519) or "profileB" (P-256)
	PrivateKey string `yaml:"privateKey"` // 64 hex digits
}

// DefaultConfig returns the configuration `tern up` uses: the home network
// keys of free5GC's and UERANSIM's demo configurations (profile A key 1,
// profile B key 2), so their UEs can send concealed SUCIs. These private
// keys are public knowledge: replace them in any real deployment.
func DefaultConfig() Config {
	return Config{HomeNetworkKeys: []HomeNetworkKey{
		{ID: 1, Scheme: "profileA", PrivateKey: "c53c22208b61860b06c62e5406a7b330c2b577aa5558981510d128247d38bd1d"},
		{ID: 2, Scheme: "profileB", PrivateKey: "f1ab1074477ebcc7f554ea1c5fc368b1616730155e0041ac447d6301975fecda"},
	}}
}

func parseScheme(s string) (suci.Scheme, error) {
	switch strings.ToLower(s) {
	case "profilea", "a", "1":
		return suci.SchemeProfileA, nil
	case "profileb", "b", "2":
		return suci.SchemeProfileB, nil
	}
	return 0, fmt.Errorf("%q is neither profileA nor profileB", s)
}

// Validate checks the configuration and names the bad field by its path
// in tern's configuration file, as udm.homeNetworkKeys[0].scheme: tern
// config reports the error as it is.
func (c *Config) Validate() error {
	_, err := c.keys()
	return err
}

// keys converts the configured keys, checking each one.
func (c *Config) keys() ([]suci.HomeNetworkKey, error) {
	out := make([]suci.HomeNetworkKey, 0, len(c.HomeNetworkKeys))
	type slot struct {
		scheme suci.Scheme
		id     uint8
	}
	seen := map[slot]bool{}
	for i, k := range c.HomeNetworkKeys {
		field := fmt.Sprintf("udm.homeNetworkKeys[%d]", i)
		scheme, err := parseScheme(k.Scheme)
		if err != nil {
			return nil, fmt.Errorf("%s.scheme: %w", field, err)
		}
		if seen[slot{scheme, k.ID}] {
			return nil, fmt.Errorf("%s.id: %d is used twice for %s", field, k.ID, k.Scheme)
		}
		seen[slot{scheme, k.ID}] = true
		priv, err := hex.DecodeString(k.PrivateKey)
		if err != nil || len(priv) != 32 {
			return nil, fmt.Errorf("%s.privateKey: want 64 hex digits", field)
		}
		hk := suci.HomeNetworkKey{ID: k.ID, Scheme: scheme, Private: priv}
		if _, err := hk.Public(); err != nil {
			return nil, fmt.Errorf("%s.privateKey: %w", field, err)
		}
		out = append(out, hk)
	}
	return out, nil
}
