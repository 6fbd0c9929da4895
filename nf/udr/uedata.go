package udr

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/jsonpatch"
)

// ueData is what a UDM that is not tern's keeps in the UDR about a UE
// (TS 29.505): the result of its last authentication
// (authentication-status) and its serving AMF's registration
// (context-data/amf-3gpp-access). tern's UDM keeps both itself.
//
// Departure: the UDR keeps them in memory, not in the subscriber store; a
// restart of the UDR forgets them, as a restart of tern's UDM forgets its
// own copy. They are context, not subscription: the AMF registers again
// (TS 23.502 §4.2.2.2.2) and the next authentication writes a new status.
// A deleted subscriber's go with it (Follow).
//
// mu guards the maps, not what they point to: a value stored is never
// changed, a write stores a new one, so that a reader may use what it took
// after unlocking, and a PATCH can be applied without holding mu.
type ueData struct {
	mu         sync.Mutex
	authStatus map[string]*models.Udm_UEAU_AuthEvent
	amf3GPP    map[string]*models.Udr_DR_Amf3GppAccessRegistration

	// apply is jsonpatch.ApplyWith; tests replace it to act while a
	// patch is being applied.
	apply func(doc []byte, patch []models.PatchItem, o jsonpatch.Options) ([]byte, error)
}

func newUEData() ueData {
	return ueData{
		authStatus: make(map[string]*models.Udm_UEAU_AuthEvent),
		amf3GPP:    make(map[string]*models.Udr_DR_Amf3GppAccessRegistration),
		apply:      jsonpatch.ApplyWith,
	}
}

// forget drops what is kept about supi (its subscriber was deleted).
func (d *ueData) forget(supi string) {
	d.mu.Lock()
	delete(d.authStatus, supi)
	delete(d.amf3GPP, supi)
	d.mu.Unlock()
}

// CreateAuthenticationStatus implements sbi.AuthenticationDataRepository
// (TS 29.505 CreateAuthenticationStatus): ev replaces the UE's status.
func (u *UDR) CreateAuthenticationStatus(ctx context.Context, supi string, ev *models.Udm_UEAU_AuthEvent) error {
	if ev == nil {
		return sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "AuthEvent")
	}
	if _, err := u.get(supi); err != nil {
		return err
	}
	c := *ev
	u.ueData.mu.Lock()
	u.ueData.authStatus[supi] = &c
	u.ueData.mu.Unlock()
	return nil
}

// QueryAuthenticationStatus implements sbi.AuthenticationDataRepository
// (TS 29.505 QueryAuthenticationStatus).
func (u *UDR) QueryAuthenticationStatus(ctx context.Context, supi string) (*models.Udm_UEAU_AuthEvent, error) {
	u.ueData.mu.Lock()
	ev := u.ueData.authStatus[supi]
	u.ueData.mu.Unlock()
	if ev == nil {
		return nil, u.missing(supi, "authentication-status")
	}
	c := *ev
	return &c, nil
}

// CreateAmfContext3gpp implements sbi.ContextDataRepository (TS 29.505
// CreateAmfContext3gpp): reg replaces the UE's registration.
func (u *UDR) CreateAmfContext3gpp(ctx context.Context, supi string, reg *models.Udr_DR_Amf3GppAccessRegistration) (bool, error) {
	if err := checkRegistration(reg); err != nil {
		return false, err
	}
	if _, err := u.get(supi); err != nil {
		return false, err
	}
	c := *reg
	u.ueData.mu.Lock()
	_, had := u.ueData.amf3GPP[supi]
	u.ueData.amf3GPP[supi] = &c
	u.ueData.mu.Unlock()
	return !had, nil
}

// ModifyAmfContext3gpp implements sbi.ContextDataRepository (TS 29.505
// AmfContext3gpp): the JSON Patch (RFC 6902) of the registration, applied
// whole or not at all. The result must still be a registration with its
// mandatory members.
//
// The patch is applied without holding the UDR's lock, which every UE's
// authentication-status and amf-3gpp-access share: the result is stored
// only if the registration is still the one patched (compare and swap),
// and otherwise the patch applies again to the one that replaced it, so a
// PUT or another PATCH in between is not lost.
//
// Departure: a replace of a member the registration lacks adds it
// (jsonpatch.Options.ReplaceAbsent), where RFC 6902 §4.3 fails the patch:
// free5GC's UDM replaces /pei whether or not the registration has one.
func (u *UDR) ModifyAmfContext3gpp(ctx context.Context, supi string, patch []models.PatchItem) error {
	d := &u.ueData
	for {
		d.mu.Lock()
		reg := d.amf3GPP[supi]
		d.mu.Unlock()
		if reg == nil {
			return u.missing(supi, "amf-3gpp-access")
		}
		res, err := d.patched(supi, reg, patch)
		if err != nil {
			return err
		}
		d.mu.Lock()
		swapped := d.amf3GPP[supi] == reg
		if swapped {
			d.amf3GPP[supi] = res
		}
		d.mu.Unlock()
		if swapped {
			return nil
		}
		// Another write of this UE's registration came first; each retry
		// follows one that succeeded.
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// patched is reg with patch applied, checked to be a registration still.
func (d *ueData) patched(supi string, reg *models.Udr_DR_Amf3GppAccessRegistration, patch []models.PatchItem) (*models.Udr_DR_Amf3GppAccessRegistration, error) {
	doc, err := json.Marshal(reg)
	if err != nil {
		return nil, fmt.Errorf("udr: %s: %w", supi, err)
	}
	out, err := d.apply(doc, patch, jsonpatch.Options{ReplaceAbsent: true})
	if err != nil {
		return nil, patchProblem(err)
	}
	var res models.Udr_DR_Amf3GppAccessRegistration
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, sbi.IncorrectIE("/", "the patched registration: %v", err)
	}
	if err := checkRegistration(&res); err != nil {
		return nil, err
	}
	return &res, nil
}

// QueryAmfContext3gpp implements sbi.ContextDataRepository (TS 29.505
// QueryAmfContext3gpp).
func (u *UDR) QueryAmfContext3gpp(ctx context.Context, supi string) (*models.Udr_DR_Amf3GppAccessRegistration, error) {
	u.ueData.mu.Lock()
	reg := u.ueData.amf3GPP[supi]
	u.ueData.mu.Unlock()
	if reg == nil {
		return nil, u.missing(supi, "amf-3gpp-access")
	}
	c := *reg
	return &c, nil
}

// checkRegistration: the registration has the mandatory members of TS
// 29.503 Amf3GppAccessRegistration, the type TS 29.505 stores.
func checkRegistration(reg *models.Udr_DR_Amf3GppAccessRegistration) error {
	return sbi.CheckAmf3GppAccessRegistration((*models.Udm_UECM_Amf3GppAccessRegistration)(reg))
}

// missing is the 404 for a UE's resource the UDR does not hold:
// USER_NOT_FOUND for an unknown subscriber, DATA_NOT_FOUND otherwise (TS
// 29.504 §6.1.7.3).
func (u *UDR) missing(supi, resource string) error {
	if _, err := u.get(supi); err != nil {
		return err
	}
	return sbi.NewProblem(http.StatusNotFound, sbi.CauseDataNotFound, "%s: no %s", supi, resource)
}
