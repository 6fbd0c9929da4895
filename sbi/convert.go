package sbi

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
)

// SNSSAIToModel converts an S-NSSAI to the TS 29.571 Snssai (SD as 6 hex digits).
func SNSSAIToModel(s identity.SNSSAI) models.Snssai {
	m := models.Snssai{Sst: int32(s.SST)}
	if s.HasSD() {
		m.Sd = fmt.Sprintf("%06x", s.SD)
	}
	return m
}

// SNSSAIFromModel converts a TS 29.571 Snssai; an absent SD becomes identity.NoSD.
func SNSSAIFromModel(m models.Snssai) (identity.SNSSAI, error) {
	if m.Sst < 0 || m.Sst > 255 {
		return identity.SNSSAI{}, fmt.Errorf("snssai: sst %d out of range", m.Sst)
	}
	s := identity.SNSSAI{SST: uint8(m.Sst), SD: identity.NoSD}
	if m.Sd != "" {
		if len(m.Sd) != 6 {
			return identity.SNSSAI{}, fmt.Errorf("snssai: sd %q is not 6 hex digits", m.Sd)
		}
		sd, err := strconv.ParseUint(m.Sd, 16, 32)
		if err != nil {
			return identity.SNSSAI{}, fmt.Errorf("snssai: sd %q: %w", m.Sd, err)
		}
		s.SD = uint32(sd)
	}
	return s, nil
}

// PLMNToModel converts a PLMN to the TS 29.571 PlmnId.
func PLMNToModel(p identity.PLMN) models.PlmnId {
	return models.PlmnId{Mcc: p.MCC, Mnc: p.MNC}
}

// PLMNFromModel converts a TS 29.571 PlmnId.
func PLMNFromModel(m models.PlmnId) (identity.PLMN, error) {
	return identity.ParsePLMN(m.Mcc + m.Mnc)
}

// SubscribedFromNssai flattens the UDM's subscribed NSSAI into the NSSF's
// input: every default S-NSSAI (Default true) followed by the other ones.
func SubscribedFromNssai(n *models.Udm_SDM_Nssai) ([]SubscribedSNSSAI, error) {
	if n == nil {
		return nil, nil
	}
	out := make([]SubscribedSNSSAI, 0, len(n.DefaultSingleNssais)+len(n.SingleNssais))
	for _, m := range n.DefaultSingleNssais {
		s, err := SNSSAIFromModel(m)
		if err != nil {
			return nil, fmt.Errorf("default single nssai: %w", err)
		}
		out = append(out, SubscribedSNSSAI{SNSSAI: s, Default: true})
	}
	for _, m := range n.SingleNssais {
		s, err := SNSSAIFromModel(m)
		if err != nil {
			return nil, fmt.Errorf("single nssai: %w", err)
		}
		out = append(out, SubscribedSNSSAI{SNSSAI: s})
	}
	return out, nil
}

// Av5gAkaOf returns the 5G-AKA challenge (RAND, AUTN, HXRES*) of a UE
// authentication context. In process Var5gAuthData holds the value or a
// pointer; after a JSON round trip (HTTP binding) it is a generic map.
func Av5gAkaOf(c *models.Ausf_UEAU_UEAuthenticationCtx) (models.Ausf_UEAU_Av5gAka, error) {
	if c == nil {
		return models.Ausf_UEAU_Av5gAka{}, errors.New("av5gAka: nil authentication context")
	}
	if c.AuthType != models.Ausf_UEAU_AuthType_5_G_AKA {
		return models.Ausf_UEAU_Av5gAka{}, fmt.Errorf("av5gAka: auth type %q is not 5G_AKA", c.AuthType)
	}
	switch v := c.Var5gAuthData.(type) {
	case models.Ausf_UEAU_Av5gAka:
		return v, nil
	case *models.Ausf_UEAU_Av5gAka:
		if v == nil {
			return models.Ausf_UEAU_Av5gAka{}, errors.New("av5gAka: nil 5gAuthData")
		}
		return *v, nil
	case map[string]any:
		str := func(k string) string { s, _ := v[k].(string); return s }
		a := models.Ausf_UEAU_Av5gAka{Rand: str("rand"), Autn: str("autn"), HxresStar: str("hxresStar")}
		if a.Rand == "" || a.Autn == "" || a.HxresStar == "" {
			return models.Ausf_UEAU_Av5gAka{}, errors.New("av5gAka: 5gAuthData lacks rand, autn or hxresStar")
		}
		return a, nil
	default:
		return models.Ausf_UEAU_Av5gAka{}, fmt.Errorf("av5gAka: unexpected 5gAuthData type %T", c.Var5gAuthData)
	}
}
