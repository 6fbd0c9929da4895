package udm

import (
	"context"
	"net/http"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi"
)

// AMFNotifier is what the UDM calls on a serving AMF: the UECM
// deregistration callback and the SDM change notification (the AMF's
// deregCallbackUri and its SDM subscription, served in-process).
type AMFNotifier interface {
	sbi.UECMNotifier
	sbi.SDMNotifier
}

// notifyTimeout bounds one notification to the AMF.
const notifyTimeout = 5 * time.Second

// SetAMF sets the AMF that the UDM notifies (the in-process binding has one
// AMF; its instance ID is what Nudm_UECM_Registration recorded). Call it
// before the UDM serves.
func (u *UDM) SetAMF(n AMFNotifier) {
	u.mu.Lock()
	u.notifier = n
	u.mu.Unlock()
}

// SetSMF sets the SMF that the UDM notifies of sm-data changes (the SMF's
// SDM subscription, served in-process). Call it before the UDM serves.
func (u *UDM) SetSMF(n sbi.SDMNotifier) {
	u.mu.Lock()
	u.smf = n
	u.mu.Unlock()
}

// DataChanged implements sbi.DataChangeNotifier: the UDR's notification
// from another process, handled as SubscriberChanged.
func (u *UDM) DataChanged(ctx context.Context, n *models.Udr_DR_DataChangeNotify) error {
	if n == nil || n.UeId == "" {
		return sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "ueId")
	}
	u.SubscriberChanged(ctx, n.UeId, sbi.IsDeletion(n))
	return nil
}

// SubscriberChanged is the UDR's data change notification (TS 29.504
// §5.2.2.3): supi's subscription was written or deleted, by whichever
// process. For a UE an AMF serves:
//   - deleted: the subscription is withdrawn; the UDM drops the AMF's
//     registration and sends Nudm_UECM_DeregistrationNotification with
//     SUBSCRIPTION_WITHDRAWN, and the AMF deregisters the UE (TS 23.502
//     §4.2.2.3.3 step 1, TS 29.503 §5.3.2.2.3);
//   - written: Nudm_SDM_Notification for its am-data (TS 29.503
//     §5.2.2.3.2), which the AMF reads again (TS 23.502 §4.5.2), and for
//     its sm-data to the SMF, which applies it to the UE's PDU sessions
//     (TS 23.502 §4.3.3.2 step 1b).
//
// A subscriber no AMF serves needs nothing: the next registration reads
// the store afresh.
func (u *UDM) SubscriberChanged(ctx context.Context, supi string, deleted bool) {
	u.mu.Lock()
	reg := u.amf3GPP[supi]
	if deleted && reg != nil {
		delete(u.amf3GPP, supi)
		u.recordLocked(supi)
	}
	n, sm := u.notifier, u.smf
	u.mu.Unlock()
	if reg == nil || n == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, notifyTimeout)
	defer cancel()
	if !deleted && sm != nil {
		err := sm.SubscriptionDataChanged(ctx, supi, &models.Udm_SDM_ModificationNotification{
			NotifyItems: []models.NotifyItem{changed("/" + supi + "/sm-data")},
		})
		if err != nil {
			u.log.Warn("Nudm_SDM_Notification of sm-data failed", "supi", supi, "err", err)
		}
	}
	if deleted {
		u.log.Info("subscription withdrawn: deregistering the UE at its AMF", "supi", supi, "amf", reg.AmfInstanceId)
		err := n.DeregistrationNotify(ctx, reg.DeregCallbackUri, &models.Udm_UECM_DeregistrationData{
			DeregReason: models.Udm_UECM_DeregistrationReason_SUBSCRIPTION_WITHDRAWN,
			AccessType:  models.AccessType_3_GPP_ACCESS,
		})
		if err != nil {
			u.log.Warn("Nudm_UECM_DeregistrationNotification failed", "supi", supi, "err", err)
		}
		return
	}
	err := n.SubscriptionDataChanged(ctx, supi, &models.Udm_SDM_ModificationNotification{
		NotifyItems: []models.NotifyItem{changed("/" + supi + "/am-data")},
	})
	if err != nil {
		u.log.Warn("Nudm_SDM_Notification failed", "supi", supi, "err", err)
	}
}

// changed names a data set that changed as a whole (TS 29.503 NotifyItem:
// changes is mandatory; tern reports the whole resource replaced).
func changed(resource string) models.NotifyItem {
	return models.NotifyItem{ResourceId: resource, Changes: []models.ChangeItem{{Op: models.ChangeType_REPLACE, Path: "/"}}}
}
