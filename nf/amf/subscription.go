package amf

import (
	"context"
	"net/http"
	"strings"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/sbi"
)

var (
	_ sbi.UECMNotifier = (*AMF)(nil)
	_ sbi.SDMNotifier  = (*AMF)(nil)
)

// DeregistrationNotify implements sbi.UECMNotifier: the UDM's
// Nudm_UECM_DeregistrationNotification (TS 29.503 §5.3.2.2.3). For a
// withdrawn subscription the AMF deregisters the UE on the network's
// initiative without asking it to register again, with 5GMM cause #7 "5GS
// services not allowed" (TS 23.502 §4.2.2.3.3; TS 24.501 §5.5.2.3.2 has
// the UE treat its USIM as invalid for 5GS until switched off). Other
// reasons (a new AMF took the UE over) remove the context the same way.
//
// uri is the deregCallbackUri the AMF registered, which names the UE.
func (a *AMF) DeregistrationNotify(ctx context.Context, uri string, d *models.Udm_UECM_DeregistrationData) error {
	if d == nil {
		return sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "deregistrationData")
	}
	_, supi, ok := strings.Cut(uri, deregNotifyPath)
	if !ok || supi == "" || strings.Contains(supi, "/") {
		return sbi.NewProblem(http.StatusNotFound, sbi.CauseResourceURIStructureNotFound, "%q is no deregCallbackUri of this AMF", uri)
	}
	a.log.Info("UDM deregistration notification", "supi", supi, "reason", d.DeregReason)
	return a.Deregister(ctx, supi, nas.Cause5GSServicesNotAllowed, false)
}

// SubscriptionDataChanged implements sbi.SDMNotifier: the UDM's
// Nudm_SDM_Notification (TS 29.503 §5.2.2.3.2). The AMF reads the UE's
// am-data again, on the UE's executor, and keeps the new subscribed
// S-NSSAIs and UE-AMBR: the next context setup carries them.
//
// Departure: a change the UE must learn at once (its allowed NSSAI) would
// take a UE Configuration Update (TS 23.502 §4.2.4); tern applies it at
// the UE's next registration.
func (a *AMF) SubscriptionDataChanged(ctx context.Context, supi string, n *models.Udm_SDM_ModificationNotification) error {
	u := a.supis.Get(supi)
	if u == nil {
		return sbi.NewProblem(http.StatusNotFound, sbi.CauseContextNotFound, "no UE context for %s", supi)
	}
	u.post(func() {
		if u.gone() || u.st.rm != rmRegistered {
			return
		}
		ctx, cancel := a.callCtx()
		defer cancel()
		am, err := a.deps.SDM.GetAmData(ctx, u.supi, u.servingPLMN())
		if err != nil {
			u.log.Warn("Nudm_SDM_Get am-data after a change notification failed", "err", err)
			return
		}
		if err := u.applyAmData(am); err != nil {
			u.log.Warn("changed am-data unusable; keeping the old", "err", err)
			return
		}
		u.log.Info("subscription data changed", "ue_ambr", u.ueAMBR)
	})
	return nil
}
