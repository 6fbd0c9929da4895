// Package nssf is the network slice selection function: Nnssf_NSSelection
// for registration (TS 29.531 §5.2.2.2, TS 23.501 §5.15.5.2.1).
package nssf

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/sbi"
)

// Config configures the NSSF.
type Config struct {
	// PLMN is the serving PLMN ("20893").
	PLMN string `yaml:"plmn"`
	// Supported lists the S-NSSAIs ("1-010203", "2") supported in every
	// tracking area of the PLMN that has no entry in TAs.
	Supported []string `yaml:"supported"`
	// TAs overrides Supported per tracking area.
	TAs []TAConfig `yaml:"tas,omitempty"`
}

// TAConfig lists the S-NSSAIs supported in one tracking area.
type TAConfig struct {
	TAC       uint32   `yaml:"tac"` // 24 bits
	Supported []string `yaml:"supported"`
}

// DefaultConfig supports the demo slice (SST 1, SD 010203) in PLMN 20893.
func DefaultConfig() Config {
	return Config{PLMN: "20893", Supported: []string{"1-010203"}}
}

// Validate checks the configuration and names the bad field by its path
// in tern's configuration file, as nssf.tas[0].tac: tern config reports
// the error as it is.
func (c *Config) Validate() error {
	_, err := c.compile()
	return err
}

type compiled struct {
	plmn   identity.PLMN
	def    []identity.SNSSAI            // supported in TAs not listed
	perTAC map[uint32][]identity.SNSSAI // supported per listed TA
	inPLMN []identity.SNSSAI            // supported anywhere in the PLMN
}

func parseList(field string, in []string) ([]identity.SNSSAI, error) {
	out := make([]identity.SNSSAI, 0, len(in))
	for i, s := range in {
		v, err := identity.ParseSNSSAI(s)
		if err != nil {
			return nil, fmt.Errorf("nssf.%s[%d]: %w", field, i, err)
		}
		if slices.Contains(out, v) {
			return nil, fmt.Errorf("nssf.%s[%d]: %s listed twice", field, i, v)
		}
		out = append(out, v)
	}
	return out, nil
}

func (c *Config) compile() (*compiled, error) {
	plmn, err := identity.ParsePLMN(c.PLMN)
	if err != nil {
		return nil, fmt.Errorf("nssf.plmn: %w", err)
	}
	cc := &compiled{plmn: plmn, perTAC: make(map[uint32][]identity.SNSSAI, len(c.TAs))}
	if cc.def, err = parseList("supported", c.Supported); err != nil {
		return nil, err
	}
	cc.inPLMN = slices.Clone(cc.def)
	for i, ta := range c.TAs {
		if ta.TAC > 0xFFFFFF {
			return nil, fmt.Errorf("nssf.tas[%d].tac: %#x exceeds 24 bits", i, ta.TAC)
		}
		if _, dup := cc.perTAC[ta.TAC]; dup {
			return nil, fmt.Errorf("nssf.tas[%d].tac: %#06x listed twice", i, ta.TAC)
		}
		list, err := parseList(fmt.Sprintf("tas[%d].supported", i), ta.Supported)
		if err != nil {
			return nil, err
		}
		cc.perTAC[ta.TAC] = list
		for _, s := range list {
			if !slices.Contains(cc.inPLMN, s) {
				cc.inPLMN = append(cc.inPLMN, s)
			}
		}
	}
	if len(cc.inPLMN) == 0 {
		return nil, errors.New("nssf.supported: no S-NSSAI is supported anywhere")
	}
	return cc, nil
}

// NSSF implements sbi.NetworkSliceSelection. It is stateless after New and
// safe for concurrent use.
type NSSF struct {
	c   *compiled
	log *slog.Logger
}

var _ sbi.NetworkSliceSelection = (*NSSF)(nil)

// New returns an NSSF.
func New(cfg Config, logger *slog.Logger) (*NSSF, error) {
	c, err := cfg.compile()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &NSSF{c: c, log: logger.With("nf", "nssf")}, nil
}

func (n *NSSF) supportedIn(tai identity.TAI) []identity.SNSSAI {
	if l, ok := n.c.perTAC[tai.TAC]; ok {
		return l
	}
	return n.c.def
}

// SelectForRegistration implements sbi.NetworkSliceSelection.
func (n *NSSF) SelectForRegistration(ctx context.Context, supi string, requested []identity.SNSSAI, subscribed []sbi.SubscribedSNSSAI, tai identity.TAI) (*models.Nssf_NSSel_AuthorizedNetworkSliceInfo, error) {
	if tai.PLMN != n.c.plmn {
		// Roaming (a visited PLMN's NSSF, mapping of S-NSSAIs) is out of scope.
		return nil, sbi.NewProblem(http.StatusForbidden, sbi.CauseSNSSAINotSupported, "tai %s is not in the serving PLMN %s", tai, n.c.plmn)
	}
	inTA := n.supportedIn(tai)
	isSubscribed := func(s identity.SNSSAI) bool {
		return slices.ContainsFunc(subscribed, func(x sbi.SubscribedSNSSAI) bool { return x.SNSSAI == s })
	}
	info := &models.Nssf_NSSel_AuthorizedNetworkSliceInfo{}
	var allowed []identity.SNSSAI
	// TS 23.501 §5.15.5.2.1: allowed = requested S-NSSAIs that are
	// subscribed and available in the TA.
	for _, r := range requested {
		switch {
		case slices.Contains(allowed, r):
		case !isSubscribed(r) || !slices.Contains(n.c.inPLMN, r):
			info.RejectedNssaiInPlmn = append(info.RejectedNssaiInPlmn, sbi.SNSSAIToModel(r))
		case !slices.Contains(inTA, r):
			info.RejectedNssaiInTa = append(info.RejectedNssaiInTa, sbi.SNSSAIToModel(r))
		default:
			allowed = append(allowed, r)
		}
	}
	// No requested NSSAI, or none of it allowed: the default subscribed
	// S-NSSAIs available in the TA (TS 23.501 §5.15.5.2.1).
	if len(allowed) == 0 {
		for _, s := range subscribed {
			if s.Default && slices.Contains(inTA, s.SNSSAI) && !slices.Contains(allowed, s.SNSSAI) {
				allowed = append(allowed, s.SNSSAI)
			}
		}
	}
	if len(allowed) > 0 {
		list := make([]models.Nssf_NSSel_AllowedSnssai, len(allowed))
		for i, s := range allowed {
			m := sbi.SNSSAIToModel(s)
			list[i] = models.Nssf_NSSel_AllowedSnssai{AllowedSnssai: &m}
		}
		info.AllowedNssaiList = []models.Nssf_NSSel_AllowedNssai{{
			AllowedSnssaiList: list,
			AccessType:        models.AccessType_3_GPP_ACCESS,
		}}
	} else {
		n.log.Info("no S-NSSAI can be allowed", "supi", supi, "tai", tai.String())
	}
	// Configured NSSAI (TS 23.501 §5.15.4.1): subscribed S-NSSAIs usable in
	// this PLMN.
	for _, s := range subscribed {
		if slices.Contains(n.c.inPLMN, s.SNSSAI) {
			m := sbi.SNSSAIToModel(s.SNSSAI)
			info.ConfiguredNssai = append(info.ConfiguredNssai, models.Nssf_NSSel_ConfiguredSnssai{ConfiguredSnssai: &m})
		}
	}
	return info, nil
}
