package sbi

import "github.com/free5gc/openapi/models"

// CheckAmf3GppAccessRegistration checks the members TS 29.503
// Amf3GppAccessRegistration (§6.2.6.2.2) requires: amfInstanceId,
// deregCallbackUri, guami and ratType. It returns 400
// MANDATORY_IE_MISSING naming each one absent by its JSON Pointer, or nil;
// a nil reg lacks them all. The UDM checks it for Nudm_UECM, and the UDR
// for context-data/amf-3gpp-access (TS 29.505 uses the same data type;
// convert a *models.Udr_DR_Amf3GppAccessRegistration, whose fields are
// the same).
func CheckAmf3GppAccessRegistration(reg *models.Udm_UECM_Amf3GppAccessRegistration) error {
	if reg == nil {
		reg = &models.Udm_UECM_Amf3GppAccessRegistration{}
	}
	var missing []string
	for _, m := range []struct {
		pointer string
		present bool
	}{
		{"/amfInstanceId", reg.AmfInstanceId != ""},
		{"/deregCallbackUri", reg.DeregCallbackUri != ""},
		{"/guami", reg.Guami != nil},
		{"/ratType", reg.RatType != ""},
	} {
		if !m.present {
			missing = append(missing, m.pointer)
		}
	}
	if missing != nil {
		return MissingIE(missing...)
	}
	return nil
}
