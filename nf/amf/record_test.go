package amf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/internal/serial"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/wire"
	"github.com/tern5g/tern/sbi/wire/wiretest"
)

// recordConfig serves two TAs (handover to a gNB of the second) with NAS
// and handover timers long enough that none expires while a test looks
// at the records.
func recordConfig(c *Config) {
	twoTAConfig(c)
	c.Timers.T3550, c.Timers.T3560, c.Timers.T3570 = time.Hour, time.Hour, time.Hour
	c.Timers.T3513, c.Timers.T3522, c.Timers.Handover = time.Hour, time.Hour, time.Hour
}

// newRecordAMF is an AMF with recordConfig whose PDU sessions go to smf,
// those of DNN "ims" through an SMF selected by name (namedSelector).
func newRecordAMF(t testing.TB, hn *fakeHN, smf *fakeSMF) *AMF {
	t.Helper()
	cfg := testConfig()
	recordConfig(&cfg)
	deps := hn.deps()
	deps.SMF = smf
	deps.SMFSelector = namedSelector{smf}
	a, err := New(cfg, deps, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// namedSelector selects, for DNN "ims", an SMF that names itself
// (NamedSMF) and finds it again by that name (SMFResolver); for other
// DNNs the AMF's own SMF, which does not.
type namedSelector struct{ smf *fakeSMF }

type namedFakeSMF struct {
	*fakeSMF
	id string
}

func (n namedFakeSMF) NFInstanceID() string { return n.id }

const imsSMF = "8a6e2ea4-0000-4000-8000-0000000000a1"

func (s namedSelector) SelectSMF(ctx context.Context, _ identity.SNSSAI, dnn string) (sbi.PDUSession, error) {
	if dnn == "ims" {
		return namedFakeSMF{s.smf, imsSMF}, nil
	}
	return s.smf, nil
}

func (s namedSelector) ResolveSMF(id string) (sbi.PDUSession, error) {
	if id != imsSMF {
		return nil, fmt.Errorf("no SMF %s", id)
	}
	return namedFakeSMF{s.smf, id}, nil
}

// recordingSink keeps every record a RecordSink gets, encoded, by UE
// context ID, in arrival order; the encoding handed over with each must be
// the record's.
type recordingSink struct {
	t   testing.TB
	mu  sync.Mutex
	got map[uint64][][]byte
}

func newRecordingSink(t testing.TB) *recordingSink {
	return &recordingSink{t: t, got: map[uint64][][]byte{}}
}

func (s *recordingSink) UERecord(r *UERecord, enc []byte) {
	b, err := wire.Append(nil, r)
	if err != nil {
		s.t.Errorf("sink: encode record %d: %v", r.ID, err)
		return
	}
	if !bytes.Equal(enc, b) {
		s.t.Errorf("sink: record %d seq %d handed over with an encoding that is not its own:\n%x\nwant\n%x", r.ID, r.Seq, enc, b)
	}
	s.mu.Lock()
	s.got[r.ID] = append(s.got[r.ID], b)
	s.mu.Unlock()
}

// of returns the records of context id so far, decoded.
func (s *recordingSink) of(id uint64) []UERecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]UERecord, len(s.got[id]))
	for i, b := range s.got[id] {
		if err := wire.Decode(b, &out[i]); err != nil {
			s.t.Fatalf("sink: decode record %d: %v", id, err)
		}
	}
	return out
}

// last returns the encoding of the last record of context id.
func (s *recordingSink) last(id uint64) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.got[id]
	if len(l) == 0 {
		return nil
	}
	return l[len(l)-1]
}

// recordScene is one AMF with UEs in many states at once, each named by
// its role.
type recordScene struct {
	a      *AMF
	hn     *fakeHN
	smf    *fakeSMF
	g1, g2 *testGNB
	ue     map[string]*testUE
	sink   *recordingSink
}

// Roles of the UEs of a recordScene.
const (
	roleHandover  = "handover"   // N2 handover executing: Handover Command sent, Notify awaited
	roleHandedOff = "handed-off" // Handover Notify came; the source's release is awaited
	roleIdle      = "idle"       // CM-IDLE with two sessions, mobile reachable timer running
	rolePaged     = "paged"      // CM-IDLE, paged for downlink data (T3513, a transfer waiting)
	roleService   = "service"    // service request: Initial Context Setup sent, its response awaited
	roleAuth      = "auth"       // registration: Authentication Request sent (T3560), no SUPI yet
	roleSMC       = "smc"        // registration: Security Mode Command sent (T3560)
	roleRereg     = "rereg"      // mobility registration: Registration Accept sent (T3550), old 5G-GUTI kept
	roleHOPrep    = "ho-prep"    // N2 handover preparing: Handover Request sent, no acknowledge yet
	roleReauth    = "reauth"     // a Service Request that did not verify: authenticated again (ngKSI 1), ICS sent
	roleIdent     = "ident"      // registration by an unknown 5G-GUTI: identified by SUCI, then authentication
)

func newRecordScene(t testing.TB) *recordScene {
	t.Helper()
	s := &recordScene{hn: newFakeHN(), smf: newFakeSMF(), ue: map[string]*testUE{}}
	s.a = newRecordAMF(t, s.hn, s.smf)
	s.smf.amf = s.a
	s.sink = newRecordingSink(t)
	s.a.SetRecordSink(s.sink)
	s.g1 = setupGNBAs(t, s.a, 1, 1)
	s.g2 = setupGNBAs(t, s.a, 2, 2)
	a, smf := s.a, s.smf
	registered := func(role, msin string, sessions ...string) *testUE {
		t.Helper()
		u := newTestUE(t, s.g1, s.hn, msin)
		before := a.Stats().Registrations
		u.register()
		waitFor(t, "registered", func() bool { return a.Stats().Registrations == before+1 })
		for i, dnn := range sessions {
			n := len(smf.callsOf("update"))
			u.establish(uint8(i+1), dnn)
			waitFor(t, "session set up", func() bool { return len(smf.callsOf("update")) == n+1 })
		}
		s.ue[role] = u
		return u
	}

	u := registered(roleHandover, "0000000001", "")
	prepareHandover(t, s.g1, s.g2, u, 700)

	u = registered(roleHandedOff, "0000000007", "")
	req := prepareHandover(t, s.g1, s.g2, u, 701)
	s.g2.send(1, &ngap.HandoverNotify{AMFUENGAPID: req.AMFUENGAPID, RANUENGAPID: 701, UserLocation: loc2})
	expect[*ngap.UEContextReleaseCommand](t, s.g1.recv())

	u = registered(roleIdle, "0000000002", "", "ims")
	idleAmongOthers(t, a, u)

	u = registered(rolePaged, "0000000003", "")
	idleAmongOthers(t, a, u)
	if rsp, err := a.N1N2MessageTransfer(context.Background(), u.supi, downlinkData(1, 2)); err != nil ||
		rsp.Cause != models.Amf_Comm_N1N2MessageTransferCause_ATTEMPTING_TO_REACH_UE {
		t.Fatalf("N1N2MessageTransfer to an idle UE: %+v %v", rsp, err)
	}
	expect[*ngap.Paging](t, s.g1.recv())
	// A 5GSM message for the paged UE waits too.
	if _, err := a.N1N2MessageTransfer(context.Background(), u.supi, &sbi.N1N2Message{
		Data: &models.Amf_Comm_N1N2MessageTransferReqData{PduSessionId: 1,
			N1MessageContainer: &models.Amf_Comm_N1MessageContainer{N1MessageClass: models.Amf_Comm_N1MessageClass_SM,
				N1MessageContent: &models.RefToBinaryData{ContentId: sbi.ContentIDN1SM}},
			N1n2FailureTxfNotifURI: "urn:test:failure:n1"},
		N1Msg: smMsg(1, 0, nas.MsgPDUSessionModificationCommand, 0x11)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "two transfers waiting", func() bool { return a.Stats().PendingTransfers == 2 })

	u = registered(roleService, "0000000008", "")
	idleAmongOthers(t, a, u)
	u.serviceRequest(nas.ServiceData, bits(1), bits(1))
	expect[*ngap.InitialContextSetupRequest](t, u.recvNGAP())

	u = newTestUE(t, s.g1, s.hn, "0000000004")
	u.sendInitial(u.registrationRequest(u.suci(), nas.RegistrationInitial), nas.Plain)
	expect[*nas.AuthenticationRequest](t, u.recvNAS())
	s.ue[roleAuth] = u

	u = newTestUE(t, s.g1, s.hn, "0000000005")
	u.sendInitial(u.registrationRequest(u.suci(), nas.RegistrationInitial), nas.Plain)
	u.answerAuth(expect[*nas.AuthenticationRequest](t, u.recvNAS()))
	expect[*nas.SecurityModeCommand](t, u.recvNAS())
	s.ue[roleSMC] = u

	// TS 24.501 §5.4.3: a 5G-GUTI of ours that names no context.
	u = newTestUE(t, s.g1, s.hn, "0000000011")
	u.sendInitial(u.registrationRequest(nas.MobileIdentity{Type: nas.IdentityGUTI,
		GUTI: identity.GUTI{GUAMI: a.cfg.guamis[0], TMSI: 0x0BAD0BAD}}, nas.RegistrationInitial), nas.Plain)
	expect[*nas.IdentityRequest](t, u.recvNAS())
	u.sendUL(&nas.IdentityResponse{MobileIdentity: u.suci()})
	expect[*nas.AuthenticationRequest](t, u.recvNAS())
	s.ue[roleIdent] = u

	u = registered(roleRereg, "0000000006", "")
	u.sendUL(u.registrationRequest(nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *u.guti}, nas.RegistrationMobilityUpdating))
	expect[*nas.RegistrationAccept](t, u.recvNAS())

	u = registered(roleHOPrep, "0000000009", "")
	s.g1.send(1, &ngap.HandoverRequired{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID, HandoverType: ngap.HandoverIntra5GS,
		Cause:                              ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkHandoverDesirableForRadioReason},
		TargetID:                           ngap.TargetRANNodeID{GlobalGNBID: gnbID(2), SelectedTAI: testTAI2},
		Sessions:                           []ngap.PDUSessionResourceItem{{ID: 1, Transfer: []byte("ho-required-transfer")}},
		SourceToTargetTransparentContainer: []byte("s2t")})
	expect[*ngap.HandoverRequest](t, s.g2.recv())

	// TS 24.501 §5.6.1.4.1, TS 33.501 §6.4.6: a Service Request whose MAC
	// does not verify; the AMF authenticates the UE again on its context.
	u = registered(roleReauth, "0000000010", "")
	idleAmongOthers(t, a, u)
	sr := &nas.ServiceRequest{ServiceType: nas.ServiceData, NgKSI: nas.NgKSI{KSI: u.sec.NgKSI()}, STMSI: u.guti.STMSI(),
		UplinkDataStatus: bits(1), PDUSessionStatus: bits(1)}
	pdu, err := u.sec.Protect(u.encode(sr), nas.IntegrityProtected, nas.Uplink)
	if err != nil {
		t.Fatal(err)
	}
	pdu[2] ^= 0xFF // the MAC
	u.ranID, u.amfID = s.g1.nextRAN, -1
	s.g1.nextRAN++
	s.g1.send(1, &ngap.InitialUEMessage{RANUENGAPID: u.ranID, NASPDU: pdu, UserLocation: u.location(),
		RRCEstablishmentCause: ngap.RRCMOData})
	u.smcDone = false
	u.answerAuth(expect[*nas.AuthenticationRequest](t, u.recvNAS()))
	u.answerSMC(expect[*nas.SecurityModeCommand](t, u.recvNAS()), nil)
	expect[*ngap.InitialContextSetupRequest](t, u.recvNGAP())
	return s
}

// idleAmongOthers takes u to CM-IDLE with a gNB-initiated release (TS
// 23.502 §4.2.6) while other UEs stay connected.
func idleAmongOthers(t testing.TB, a *AMF, u *testUE) {
	t.Helper()
	u.g.send(1, &ngap.UEContextReleaseRequest{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID,
		Cause: ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkUserInactivity}})
	u.releaseComplete(expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP()))
	waitFor(t, "CM-IDLE", func() bool {
		info, err := a.UE(context.Background(), u.supi)
		return err == nil && info.CM == cmIdle.String()
	})
}

// prepareHandover runs an N2 handover of u from g1 to g2 (gNB 2, TAC 2) up
// to the Handover Command; the target acknowledges with RAN UE NGAP ID
// ranID. It returns the target's Handover Request.
func prepareHandover(t testing.TB, g1, g2 *testGNB, u *testUE, ranID int64) *ngap.HandoverRequest {
	t.Helper()
	g1.send(1, &ngap.HandoverRequired{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID, HandoverType: ngap.HandoverIntra5GS,
		Cause:                              ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkHandoverDesirableForRadioReason},
		TargetID:                           ngap.TargetRANNodeID{GlobalGNBID: gnbID(2), SelectedTAI: testTAI2},
		Sessions:                           []ngap.PDUSessionResourceItem{{ID: 1, Transfer: []byte("ho-required-transfer")}},
		SourceToTargetTransparentContainer: []byte("s2t")})
	req := expect[*ngap.HandoverRequest](t, g2.recv())
	g2.send(1, &ngap.HandoverRequestAcknowledge{AMFUENGAPID: req.AMFUENGAPID, RANUENGAPID: ranID,
		Admitted:                           []ngap.PDUSessionResourceItem{{ID: 1, Transfer: []byte("ho-ack-transfer")}},
		TargetToSourceTransparentContainer: []byte("t2s")})
	expect[*ngap.HandoverCommand](t, g1.recv())
	return req
}

// records takes every record of a and checks each encodes.
func records(t testing.TB, a *AMF) []UERecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), recvTimeout)
	defer cancel()
	recs, err := a.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func encodeRecord(t testing.TB, r *UERecord) []byte {
	t.Helper()
	b, err := wire.Append(nil, r)
	if err != nil {
		t.Fatalf("encode record %d: %v", r.ID, err)
	}
	return b
}

// byRole finds the record of each role's UE (by SUPI, or by SUCI for the
// UE that has not given its SUPI yet).
func (s *recordScene) byRole(t testing.TB, recs []UERecord) map[string]*UERecord {
	t.Helper()
	out := map[string]*UERecord{}
	for role, u := range s.ue {
		for i := range recs {
			if r := &recs[i]; r.SUPI == u.supi || r.SUPI == "" && r.SUCI == u.suci().SUCI {
				out[role] = r
			}
		}
		if out[role] == nil {
			t.Fatalf("no record for the %s UE (%s)", role, u.supi)
		}
	}
	return out
}

// TestUERecordRoundTrip: the records of UEs in many states (a handover
// executing, a source leg being released, idle, paged, a service request,
// registrations in authentication, in security mode control and waiting
// for Registration Complete) encode with wire and decode to equal records;
// together they set every field of the record types, so no field is left
// out of the capture; and each role's record says what the UE is doing.
func TestUERecordRoundTrip(t *testing.T) {
	s := newRecordScene(t)
	recs := records(t, s.a)
	if len(recs) != len(s.ue) {
		t.Fatalf("%d records for %d UEs", len(recs), len(s.ue))
	}
	for i := range recs {
		b := encodeRecord(t, &recs[i])
		var got UERecord
		if err := wire.Decode(b, &got); err != nil {
			t.Fatalf("decode record %d: %v", recs[i].ID, err)
		}
		if !reflect.DeepEqual(got, recs[i]) {
			t.Errorf("record %d changed in a round trip:\n got %+v\nwant %+v", recs[i].ID, got, recs[i])
		}
		if again := encodeRecord(t, &got); !bytes.Equal(again, b) {
			t.Errorf("record %d encodes differently after a round trip", recs[i].ID)
		}
	}

	// Every field of the record types is set in at least one record: a
	// field the capture forgets stays zero everywhere.
	set := map[string]bool{}
	for i := range recs {
		markSet(reflect.ValueOf(recs[i]), set)
	}
	var unset []string
	for _, f := range recordFields(reflect.TypeFor[UERecord](), map[reflect.Type]bool{}) {
		if !set[f] && notReachedByScene[f] == "" {
			unset = append(unset, f)
		}
	}
	if len(unset) > 0 {
		t.Errorf("fields no record of the scene sets (a capture that forgets them?):\n  %s", strings.Join(unset, "\n  "))
	}
	for f := range notReachedByScene {
		if set[f] {
			t.Errorf("%s is set by the scene now: take it off notReachedByScene", f)
		}
	}

	r := s.byRole(t, recs)
	check := func(role string, ok bool, what string) {
		t.Helper()
		if !ok {
			t.Errorf("%s UE: %s; record %+v", role, what, *r[role])
		}
	}
	ho := r[roleHandover]
	check(roleHandover, procedure(ho.State.Procedure) == procHandoverExecution && ho.Target != nil &&
		legState(ho.Target.State) == legHandoverPrepared && ho.Target.RANUENGAPID == 700 && ho.Target.GNB == gnbID(2) &&
		ho.Serving != nil && ho.Serving.GNB == gnbID(1) && !ho.HandoverDeadline.IsZero() && len(ho.Handover.Sessions) == 1 &&
		ho.Security.NCC == 1 && len(ho.Security.NH) == 32, "handover execution with its target leg, timer and NH")
	off := r[roleHandedOff]
	check(roleHandedOff, len(off.Released) == 1 && off.Released[0].HandedOver && legState(off.Released[0].State) == legReleasing &&
		off.Serving.GNB == gnbID(2) && off.Target == nil, "served by the target, the source released")
	idle := r[roleIdle]
	check(roleIdle, cmState(idle.State.CM) == cmIdle && idle.Serving == nil && len(idle.Sessions) == 2 &&
		upState(idle.Sessions[0].UserPlane) == upDeactivated && !idle.ReachabilityDeadline.IsZero() && idle.State.Reachable,
		"idle with deactivated sessions and the mobile reachable timer")
	paged := r[rolePaged]
	check(rolePaged, procedure(paged.State.Procedure) == procPaging && timerID(paged.NASTimer.Timer) == timerT3513 &&
		paged.NASTimer.Message == nil && len(paged.Paging.Pending) == 2 && paged.Paging.Priority == 2, "paging with T3513 and two transfers waiting")
	svc := r[roleService]
	check(roleService, procedure(svc.State.Procedure) == procServiceRequest && svc.ServiceRequest.Request != nil &&
		upState(svc.Sessions[0].UserPlane) == upActivating, "a service request waiting for the Initial Context Setup Response")
	auth := r[roleAuth]
	check(roleAuth, auth.SUPI == "" && commonStep(auth.Common) == commonAuthentication && timerID(auth.NASTimer.Timer) == timerT3560 &&
		len(auth.Authentication.RAND) == 16 && auth.Registration.Request != nil, "authentication with T3560")
	smc := r[roleSMC]
	check(roleSMC, smc.SUPI != "" && commonStep(smc.Common) == commonSecurityMode && smc.Security.Pending != nil &&
		smc.Security.Current == nil && nas.SecurityHeaderType(smc.NASTimer.Header) == nas.IntegrityProtectedNewContext,
		"security mode control with the pending context")
	re := r[roleRereg]
	check(roleRereg, regStep(re.Registration.Step) == regAccepting && re.OldGUTI != nil && re.GUTI != nil &&
		re.OldGUTI.TMSI != re.GUTI.TMSI && timerID(re.NASTimer.Timer) == timerT3550 && re.Security.Current.Downlink.Used,
		"Registration Accept sent with a new 5G-GUTI, the old one kept")
}

// notReachedByScene are the record fields no UE of recordScene sets, and
// why.
var notReachedByScene = map[string]string{
	"UERecord.Superseded":           "a second registration of a SUPI racing the first; TestUERecordRestoreSuperseded",
	"UERecord.Outcome":              `"" between steps by design`,
	"AuthenticationRecord.Resynced": "an AUTS re-synchronisation",
	"HandoverRecord.Type":           "tern's N2 handover is intra-5GS, type 0",
	"HandoverRecord.Completed":      "never set by the AMF",
	"UERecord.Applied":              "the scene's associations carry no front end's stamps; TestReplayedMessagesAppliedOnce",
	"StampRecord.GNB":               "as UERecord.Applied",
	"StampRecord.Stamp":             "as UERecord.Applied",
	"UERecord.Outputs":              "as UERecord.Applied; TestReplayedMessagesAppliedOnce",
	"UERecord.OutputsStamp":         "as UERecord.Applied",
	"OutputRecord.GNB":              "as UERecord.Applied",
	"OutputRecord.Stream":           "as UERecord.Applied",
	"OutputRecord.Message":          "as UERecord.Applied",
}

// markSet marks the fields of v (a record value) that are set, as
// "Type.Field".
func markSet(v reflect.Value, set map[string]bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() && isRecordType(v.Type().Elem()) {
			markSet(v.Elem(), set)
		}
	case reflect.Slice:
		if isRecordType(v.Type().Elem()) {
			for i := range v.Len() {
				markSet(v.Index(i), set)
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Field(i)
			if !f.IsZero() && (f.Kind() != reflect.Slice || f.Len() > 0) {
				set[v.Type().Name()+"."+v.Type().Field(i).Name] = true
			}
			markSet(f, set)
		}
	}
}

// recordFields lists the fields of the record types reachable from t as
// "Type.Field".
func recordFields(t reflect.Type, seen map[reflect.Type]bool) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if !isRecordType(t) || seen[t] {
		return nil
	}
	seen[t] = true
	var out []string
	for i := range t.NumField() {
		out = append(out, t.Name()+"."+t.Field(i).Name)
		out = append(out, recordFields(t.Field(i).Type, seen)...)
	}
	return out
}

// isRecordType: a struct type of this package (the record types); others
// (identities, NAS messages, times) count as one value.
func isRecordType(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && t.PkgPath() == reflect.TypeFor[UERecord]().PkgPath()
}

// recordMap says, for every field of the UE context's struct types, where
// its record keeps it. A value is a comma-separated list of paths in the
// type's record type (recordBase); "=" before the paths means the field's
// own struct type is in the map and its fields are mapped there (the
// paths may then be empty); "-" starts the reason a field is not
// recorded. TestUERecordCompleteness holds every field of these types to
// the map, and every field of the record types to a source.
var recordMap = map[reflect.Type]map[string]string{
	reflect.TypeFor[ue](): {
		"amf":          "-plumbing: the AMF the context belongs to",
		"log":          "-plumbing: the logger, rebuilt from the SUPI",
		"exec":         "-plumbing: the executor",
		"id":           "ID",
		"seq":          "Seq",
		"recLast":      "-plumbing: change detection of the deltas (record.go)",
		"recNext":      "-plumbing: change detection of the deltas (record.go)",
		"holding":      "-plumbing: output commit within one step (commit.go)",
		"held":         "-plumbing: the step's NGAP messages awaiting its commit (commit.go); not state",
		"stamp":        "-plumbing: the stamp of the running step's message, within the step (replay.go)",
		"applied":      "Applied",
		"outputs":      "Outputs",
		"outputsStamp": "OutputsStamp",
		"duplicate":    "-plumbing: within one step, a replayed message not run again (dedup.go)",
		"heldTimers":   "NASTimer,ReachabilityDeadline,HandoverDeadline",
		"heldFor":      "-plumbing: how many detached gNBs the held timers wait for (resume.go)",
		"st":           "=State",
		"published":    "-derived: the mirror of st and reachable for other goroutines",
		"ran":          "=Serving",
		"target":       "=Target",
		"released":     "=Released",
		"supi":         "SUPI", "suci": "SUCI", "pei": "PEI",
		"guti": "GUTI", "oldGUTI": "OldGUTI", "tmsiDraws": "TMSIDraws", "taiList": "RegistrationArea",
		"nh": "Security.NH", "ncc": "Security.NCC",
		"sec":          "=Security.Current",
		"kamf":         "Security.KAMF",
		"ngKSI":        "Security.NgKSI",
		"ueSecCap":     "Security.UESecurityCapability",
		"hasSecCap":    "Security.HasUESecurityCapability",
		"subscribed":   "SubscribedNSSAI",
		"allowedNSSAI": "AllowedNSSAI",
		"ueAMBR":       "UEAMBR",
		"sessions":     "=Sessions",
		"reg":          "=Registration",
		"common":       "=",
		"auth":         "=Authentication",
		"smc":          "=Security",
		"svc":          "=ServiceRequest",
		"ho":           "=Handover",
		"page":         "=Paging",
		"nasTimer":     "=NASTimer",
		"nasTimerID":   "NASTimer.Timer",
		"nasTimerMsg":  "NASTimer.Message",
		"nasTimerHdr":  "NASTimer.Header",
		"reachTimer":   "=ReachabilityDeadline",
		"reachable":    "State.Reachable",
		"handoverTime": "=HandoverDeadline",
		"lastActivity": "LastActivity",
		"procStart":    "ProcedureStart",
		"outcome":      "Outcome",
	},
	reflect.TypeFor[ueState](): {"rm": "RM", "cm": "CM", "proc": "Procedure"},
	reflect.TypeFor[ranUE](): {
		"gnb": "GNB", "ue": "-back pointer to the UE context",
		"amfID": "AMFUENGAPID", "ranID": "RANUENGAPID", "stream": "Stream", "state": "State",
		"tai": "TAI", "loc": "Location", "ambrSent": "AMBRSent", "handedOver": "HandedOver",
		"relSessions": "-set by UE Context Release Complete and read in the same step, which ends the leg",
	},
	reflect.TypeFor[pduSession](): {
		"id": "ID", "ref": "SMContextRef", "smf": "SMF", "statusURI": "StatusURI",
		"snssai": "SNSSAI", "dnn": "DNN", "up": "UserPlane",
	},
	reflect.TypeFor[registrationProc](): {
		"step": "Step", "req": "Request", "initialIntegrity": "InitialIntegrity", "byGUTI": "ByGUTI", "fromIdle": "FromIdle",
	},
	reflect.TypeFor[commonProc](): {"step": "Common"},
	reflect.TypeFor[authProc](): {
		"ctxID": "ContextID", "rand": "RAND", "hxresStar": "HXRESStar", "ngKSI": "NgKSI",
		"resynced": "Resynced", "identified": "Identified",
	},
	reflect.TypeFor[securityModeProc]():   {"pending": "=Pending"},
	reflect.TypeFor[serviceRequestProc](): {"req": "Request", "afterAuth": "AfterAuth"},
	reflect.TypeFor[handoverProc](): {
		"hoType": "Type", "cause": "Cause", "sessions": "=Sessions", "toTarget": "SourceToTarget", "completed": "Completed",
	},
	reflect.TypeFor[hoSession]():  {"id": "ID", "snssai": "SNSSAI", "setup": "Setup", "command": "Command"},
	reflect.TypeFor[pagingProc](): {"pending": "=Pending", "priority": "Priority"},
	reflect.TypeFor[mtTransfer](): {"d": "=", "failureURI": "FailureURI"},
	reflect.TypeFor[smDelivery](): {"id": "PDUSessionID", "n1": "N1", "n2": "N2", "kind": "N2Kind", "snssai": "SNSSAI"},
	reflect.TypeFor[nas.SecurityContext](): {
		"ngKSI": "NgKSI", "encAlg": "CipheringAlg", "intAlg": "IntegrityAlg", "bearer": "Bearer",
		"kEnc": "KNASenc", "kInt": "KNASint", "counts": "Uplink,Downlink",
		"encBlock": "-derived from the keys by nas.NewSecurityContext", "intBlock": "-derived from the keys",
		"cmacK1": "-derived from the keys", "cmacK2": "-derived from the keys",
	},
	reflect.TypeFor[serial.Retransmission](): {"Timer": "=Deadline", "sends": "Sends"},
	reflect.TypeFor[serial.Timer](): {
		"t":        "-the runtime timer, armed again from the deadline",
		"gen":      "-plumbing: discards expiries of an older arming",
		"deadline": "-recorded through Deadline() where each timer is mapped",
	},
}

// recordBase is the record type whose fields the paths of recordMap's
// entry for a context type name.
var recordBase = map[reflect.Type]reflect.Type{
	reflect.TypeFor[ue]():                    reflect.TypeFor[UERecord](),
	reflect.TypeFor[ueState]():               reflect.TypeFor[StateRecord](),
	reflect.TypeFor[ranUE]():                 reflect.TypeFor[LegRecord](),
	reflect.TypeFor[pduSession]():            reflect.TypeFor[SessionRecord](),
	reflect.TypeFor[registrationProc]():      reflect.TypeFor[RegistrationRecord](),
	reflect.TypeFor[commonProc]():            reflect.TypeFor[UERecord](),
	reflect.TypeFor[authProc]():              reflect.TypeFor[AuthenticationRecord](),
	reflect.TypeFor[securityModeProc]():      reflect.TypeFor[SecurityRecord](),
	reflect.TypeFor[serviceRequestProc]():    reflect.TypeFor[ServiceRequestRecord](),
	reflect.TypeFor[handoverProc]():          reflect.TypeFor[HandoverRecord](),
	reflect.TypeFor[hoSession]():             reflect.TypeFor[HandoverSessionRecord](),
	reflect.TypeFor[pagingProc]():            reflect.TypeFor[PagingRecord](),
	reflect.TypeFor[mtTransfer]():            reflect.TypeFor[TransferRecord](),
	reflect.TypeFor[smDelivery]():            reflect.TypeFor[TransferRecord](),
	reflect.TypeFor[nas.SecurityContext]():   reflect.TypeFor[NASSecurityRecord](),
	reflect.TypeFor[serial.Retransmission](): reflect.TypeFor[NASTimerRecord](),
	reflect.TypeFor[serial.Timer]():          reflect.TypeFor[UERecord](),
}

// recordOnly are record fields no context field fills, and where they
// come from.
var recordOnly = map[string]string{
	"UERecord.Superseded": "the AMF's SUPI table: another context holds the SUPI",
}

// TestUERecordCompleteness walks the UE context's struct types from ue:
// every field is mapped to its record or excluded with a reason
// (recordMap), every struct type a mapping descends into is in the map,
// every path names a field of the record, and every field of the record
// types has a source. A field added to a context and not to the record
// fails it; so does a record field nothing fills.
func TestUERecordCompleteness(t *testing.T) {
	covered := map[string]bool{} // record "Type.Field"s that a mapping fills
	visited := map[reflect.Type]bool{}
	var walk func(ct reflect.Type)
	walk = func(ct reflect.Type) {
		if visited[ct] {
			return
		}
		visited[ct] = true
		m, ok := recordMap[ct]
		if !ok {
			t.Errorf("%s: a context type recordMap does not map", ct)
			return
		}
		base := recordBase[ct]
		if base == nil {
			t.Errorf("%s: no record type in recordBase", ct)
			return
		}
		for i := range ct.NumField() {
			f := ct.Field(i)
			how, ok := m[f.Name]
			switch {
			case !ok:
				t.Errorf("%s.%s is neither recorded nor excluded: add it to the record (record.go, record_restore.go) and to recordMap", ct, f.Name)
				continue
			case strings.HasPrefix(how, "-"):
				if strings.TrimSpace(how[1:]) == "" {
					t.Errorf("%s.%s: an exclusion without its reason", ct, f.Name)
				}
				continue
			}
			descend := strings.HasPrefix(how, "=")
			how = strings.TrimPrefix(how, "=")
			if how != "" {
				for _, p := range strings.Split(how, ",") {
					if err := coverPath(base, p, !descend, covered); err != nil {
						t.Errorf("%s.%s: %v", ct, f.Name, err)
					}
				}
			}
			if descend {
				et := f.Type
				for et.Kind() == reflect.Pointer || et.Kind() == reflect.Slice || et.Kind() == reflect.Map {
					et = et.Elem()
				}
				walk(et)
			}
		}
		for name := range m {
			if _, ok := ct.FieldByName(name); !ok {
				t.Errorf("recordMap names %s.%s, which does not exist", ct, name)
			}
		}
	}
	walk(reflect.TypeFor[ue]())
	for ct := range recordMap {
		if !visited[ct] {
			t.Errorf("recordMap maps %s, which no field of ue reaches", ct)
		}
	}
	for _, f := range recordFields(reflect.TypeFor[UERecord](), map[reflect.Type]bool{}) {
		if !covered[f] && recordOnly[f] == "" {
			t.Errorf("record field %s has no source in the UE context (recordMap)", f)
		}
	}
}

// coverPath marks the record fields path (dotted, in base) names; whole
// marks the subtree under its last field as filled too (a field mapped as
// a whole, not through its own type's map).
func coverPath(base reflect.Type, path string, whole bool, covered map[string]bool) error {
	t := base
	for _, name := range strings.Split(path, ".") {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		f, ok := t.FieldByName(name)
		if !ok || t.Kind() != reflect.Struct {
			return fmt.Errorf("path %q: %s has no field %s", path, t, name)
		}
		covered[t.Name()+"."+name] = true
		t = f.Type
	}
	if whole {
		for _, f := range recordFields(t, map[reflect.Type]bool{}) {
			covered[f] = true
		}
	}
	return nil
}

// decodeRecords is a fresh copy of recs through their encoding, as another
// process gets them.
func decodeRecords(t testing.TB, recs []UERecord) []UERecord {
	t.Helper()
	out := make([]UERecord, len(recs))
	for i := range recs {
		if err := wire.Decode(encodeRecord(t, &recs[i]), &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestUERecordRestore: the records of instance A restored into a fresh
// instance B give byte-identical records (Seq included). B then serves a
// restored UE: the idle one comes back through a gNB connected to B with
// a Service Request that verifies with its restored NAS security context
// and COUNTs (found by its restored 5G-GUTI), and deregisters, its SM
// contexts released at the SMF; a UE registering at B gets nothing a
// restored context holds (AMF UE NGAP ID, context ID, the number of its
// smContextStatusUri); the restored legs stay detached, their IDs taken.
func TestUERecordRestore(t *testing.T) {
	s := newRecordScene(t)
	recsA := records(t, s.a)

	b := newRecordAMF(t, s.hn, s.smf)
	if err := b.Restore(decodeRecords(t, recsA)); err != nil {
		t.Fatal(err)
	}
	if err := b.Restore(nil); err == nil {
		t.Error("a second Restore into an AMF holding contexts was taken")
	}
	recsB := records(t, b)
	if len(recsB) != len(recsA) {
		t.Fatalf("%d records from B, %d from A", len(recsB), len(recsA))
	}
	for i := range recsA {
		if a, b := encodeRecord(t, &recsA[i]), encodeRecord(t, &recsB[i]); !bytes.Equal(a, b) {
			t.Errorf("record %d differs after restore:\n A %+v\n B %+v", recsA[i].ID, recsA[i], recsB[i])
		}
	}
	sa, sb := s.a.Stats(), b.Stats()
	if sb.UEContexts != sa.UEContexts || sb.RegisteredUEs != sa.RegisteredUEs || sb.ConnectedUEs != sa.ConnectedUEs ||
		sb.IdleUEs != sa.IdleUEs || sb.PDUSessions != sa.PDUSessions || sb.PendingTransfers != sa.PendingTransfers {
		t.Errorf("B counts what A does not:\n A %+v\n B %+v", sa, sb)
	}
	byRole := s.byRole(t, recsA)
	var maxNGAP int64
	var maxID, maxStatus uint64
	for i := range recsA {
		maxID = max(maxID, recsA[i].ID)
		for _, l := range recsA[i].legs() {
			maxNGAP = max(maxNGAP, l.AMFUENGAPID)
			r := b.ranUEs.Get(l.AMFUENGAPID)
			if r == nil || r.gnb.conn() != nil || r.gnb.node.Load().id != l.GNB {
				t.Errorf("leg %d of record %d: not held detached on gNB %v in B", l.AMFUENGAPID, recsA[i].ID, l.GNB)
			}
		}
		for _, ss := range recsA[i].Sessions {
			maxStatus = max(maxStatus, statusURISeq(ss.StatusURI))
		}
		for _, g := range []*identity.GUTI{recsA[i].GUTI, recsA[i].OldGUTI} {
			if g != nil && (b.gutis.lookup(g.TMSI) == nil || b.gutis.lookup(g.TMSI).id != recsA[i].ID) {
				t.Errorf("5G-TMSI %08x of record %d not held in B", g.TMSI, recsA[i].ID)
			}
		}
	}

	// The SMF answers B from now on: the AMF failed over.
	s.smf.mu.Lock()
	s.smf.amf = b
	s.smf.mu.Unlock()
	gb := setupGNBAs(t, b, 3, 1)
	u := s.ue[roleIdle]
	u.g = gb
	u.serviceRequest(nas.ServiceSignalling, nil, bits(1, 2))
	ics := expect[*ngap.InitialContextSetupRequest](t, u.recvNGAP())
	acc := expect[*nas.ServiceAccept](t, u.openNAS(ics.NASPDU))
	if acc.PDUSessionStatus == nil || *acc.PDUSessionStatus != *bits(1, 2) {
		t.Errorf("Service Accept PDU session status %v, want the restored sessions 1 and 2", acc.PDUSessionStatus)
	}
	gb.send(1, &ngap.InitialContextSetupResponse{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID})
	released := len(s.smf.callsOf("release"))
	u.sendUL(&nas.DeregistrationRequestUEOriginating{AccessType: nas.Access3GPP, NgKSI: nas.NgKSI{KSI: u.sec.NgKSI()},
		MobileIdentity: nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *u.guti}})
	expect[*nas.DeregistrationAcceptUEOriginating](t, u.recvNAS())
	u.releaseComplete(expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP()))
	waitFor(t, "the restored UE deregistered", func() bool { return b.Stats().Deregistrations == 1 })
	if n := len(s.smf.callsOf("release")) - released; n != 2 {
		t.Errorf("%d SM contexts released at the SMF, want the restored UE's 2", n)
	}
	if rec := byRole[roleIdle]; b.gutis.lookup(rec.GUTI.TMSI) != nil {
		t.Error("the deregistered UE's 5G-TMSI is still held")
	}

	// A new UE gets fresh identifiers.
	n := newTestUE(t, gb, s.hn, "0000000099")
	n.register()
	n.establish(1, "")
	waitFor(t, "the new UE registered", func() bool { return b.Stats().Registrations == 1 })
	if n.amfID <= maxNGAP {
		t.Errorf("new AMF UE NGAP ID %d, not above the restored %d", n.amfID, maxNGAP)
	}
	for _, r := range records(t, b) {
		if r.SUPI != n.supi {
			continue
		}
		if r.ID <= maxID {
			t.Errorf("new context ID %d, not above the restored %d", r.ID, maxID)
		}
		if len(r.Sessions) != 1 || statusURISeq(r.Sessions[0].StatusURI) <= maxStatus {
			t.Errorf("new session %+v: its smContextStatusUri number is not above the restored %d", r.Sessions, maxStatus)
		}
	}
}

// TestUERecordRestoreTimers: timers come back from their deadlines, and
// one already past fires at once on the UE's executor: the mobile
// reachable timer of an idle UE (it becomes unreachable and the implicit
// deregistration timer runs). The T3560 of a UE in authentication, past
// too, waits for its gNB (review item 13: on the detached gNB it would use
// up a retransmission that no gNB gets); its records keep it meanwhile;
// once ResumeConn binds the gNB it fires (Sends 2) and the retransmitted
// Authentication Request goes out on the resumed association.
func TestUERecordRestoreTimers(t *testing.T) {
	s := newRecordScene(t)
	recs := decodeRecords(t, records(t, s.a))
	r := s.byRole(t, recs)
	past := time.Now().Add(-time.Second).UTC()
	r[roleIdle].ReachabilityDeadline = past
	r[roleAuth].NASTimer.Deadline = past
	future := r[roleRereg].NASTimer.Deadline

	b := newRecordAMF(t, s.hn, s.smf)
	if err := b.Restore(recs); err != nil {
		t.Fatal(err)
	}
	var got map[string]*UERecord
	waitFor(t, "the elapsed timer of the idle UE fired", func() bool {
		got = s.byRole(t, records(t, b))
		return !got[roleIdle].State.Reachable
	})
	if d := got[roleIdle].ReachabilityDeadline; d.Before(time.Now().Add(DefaultReachabilityMargin - time.Minute)) {
		t.Errorf("implicit deregistration timer due at %v, want about %v from now", d, DefaultReachabilityMargin)
	}
	time.Sleep(20 * time.Millisecond)
	got = s.byRole(t, records(t, b))
	if n := got[roleAuth].NASTimer; b.Stats().Retransmissions != 0 || n.Sends != 1 || !n.Deadline.Equal(past) {
		t.Fatalf("before its gNB is resumed: %d retransmissions, T3560 %+v; want none, held with 1 send due %v",
			b.Stats().Retransmissions, n, past)
	}

	setup := ngSetupRequest(testPLMN, 1, testSlice)
	setup.GlobalRANNodeID.GNBID = 1
	req, err := ngap.Encode(setup)
	if err != nil {
		t.Fatal(err)
	}
	gEnd, amfEnd := memPipe(8)
	if err := b.ResumeConn(amfEnd, req); err != nil {
		t.Fatal(err)
	}
	g := newTestGNB(t, gEnd)
	dl := expect[*ngap.DownlinkNASTransport](t, g.recv())
	if dl.AMFUENGAPID != r[roleAuth].Serving.AMFUENGAPID {
		t.Errorf("retransmission for AMF UE NGAP ID %d, want the UE in authentication's %d", dl.AMFUENGAPID, r[roleAuth].Serving.AMFUENGAPID)
	}
	waitFor(t, "the elapsed T3560 fired", func() bool {
		got = s.byRole(t, records(t, b))
		return got[roleAuth].NASTimer.Sends == 2
	})
	if d := got[roleAuth].NASTimer.Deadline; d.Before(time.Now().Add(50 * time.Minute)) {
		t.Errorf("T3560 due again at %v, want an hour after the retransmission", d)
	}
	if b.Stats().Retransmissions != 1 {
		t.Errorf("%d retransmissions, want the one of the elapsed T3560", b.Stats().Retransmissions)
	}
	if d := got[roleRereg].NASTimer.Deadline; !d.Equal(future) || got[roleRereg].NASTimer.Sends != 1 {
		t.Errorf("T3550 of the re-registering UE: due %v, sends %d; want %v unchanged", d, got[roleRereg].NASTimer.Sends, future)
	}
}

// TestResumeDoneLosesUnresumedConnections: after a restore, the front end
// resumes gNB 1 and not gNB 2 (its association ended while no unit
// served), then says its opens are done (review item 12). The restored
// connections on gNB 2 are lost as with an association that went down:
// the UE served there goes CM-IDLE (its mobile reachable timer running)
// instead of staying CM-CONNECTED on a gNB that is gone; those on gNB 1
// stay connected.
func TestResumeDoneLosesUnresumedConnections(t *testing.T) {
	s := newRecordScene(t)
	recs := decodeRecords(t, records(t, s.a))
	r := s.byRole(t, recs)
	if r[roleHandedOff].Serving.GNB != gnbID(2) || r[roleService].Serving.GNB != gnbID(1) {
		t.Fatalf("scene: the handed-off UE on %v, the UE in a service request on %v", r[roleHandedOff].Serving.GNB, r[roleService].Serving.GNB)
	}
	b := newRecordAMF(t, s.hn, s.smf)
	if err := b.Restore(recs); err != nil {
		t.Fatal(err)
	}
	setup := ngSetupRequest(testPLMN, 1, testSlice)
	setup.GlobalRANNodeID.GNBID = 1
	req, err := ngap.Encode(setup)
	if err != nil {
		t.Fatal(err)
	}
	gEnd, amfEnd := memPipe(8)
	if err := b.ResumeConn(amfEnd, req); err != nil {
		t.Fatal(err)
	}
	newTestGNB(t, gEnd)
	b.ResumeDone()
	var got map[string]*UERecord
	waitFor(t, "the handed-off UE idle", func() bool {
		got = s.byRole(t, records(t, b))
		return cmState(got[roleHandedOff].State.CM) == cmIdle
	})
	if off := got[roleHandedOff]; off.Serving != nil || off.ReachabilityDeadline.IsZero() {
		t.Errorf("the UE served by gNB 2: %+v; want no serving leg and the mobile reachable timer", off)
	}
	if svc := got[roleService]; cmState(svc.State.CM) != cmConnected || svc.Serving == nil {
		t.Errorf("the UE served by gNB 1, resumed: %+v; want it connected", svc)
	}
}

// TestUERecordRestoreSuperseded: a record taken while a second
// registration of its SUPI took the SUPI over (Superseded) is restored
// beside the one that holds the SUPI now, and deleted in its first step,
// as the old instance would have.
func TestUERecordRestoreSuperseded(t *testing.T) {
	s := newRecordScene(t)
	recs := decodeRecords(t, records(t, s.a))
	old := s.byRole(t, recs)[roleIdle]
	dup := decodeRecords(t, []UERecord{*old})[0]
	dup.ID = 1 << 20
	dup.Superseded = true
	dup.GUTI.TMSI ^= 0xFFFF
	dup.OldGUTI = nil
	recs = append(recs, dup)

	b := newRecordAMF(t, s.hn, s.smf)
	if err := b.Restore(recs); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the superseded context deleted", func() bool { return b.Stats().UEContexts == int64(len(recs)-1) })
	if u := b.supis.Get(old.SUPI); u == nil || u.id != old.ID {
		t.Errorf("the SUPI is not held by the context that held it in A")
	}
	if b.gutis.lookup(dup.GUTI.TMSI) != nil {
		t.Error("the superseded context's 5G-TMSI is still held")
	}
	recs[len(recs)-1].Superseded = false
	if err := newRecordAMF(t, s.hn, s.smf).Restore(recs); !errors.Is(err, ErrBadRecord) {
		t.Errorf("two records holding one SUPI: %v, want ErrBadRecord", err)
	}
}

// TestUERecordRestoreRefused: Restore refuses records it cannot build a
// consistent AMF from, with ErrBadRecord, and builds nothing.
func TestUERecordRestoreRefused(t *testing.T) {
	s := newRecordScene(t)
	base := records(t, s.a)
	for _, c := range []struct {
		name  string
		spoil func(r map[string]*UERecord, recs []UERecord)
	}{
		{"state out of range", func(r map[string]*UERecord, _ []UERecord) { r[roleIdle].State.Procedure = 99 }},
		{"state never reached", func(r map[string]*UERecord, _ []UERecord) {
			r[roleIdle].State.Procedure = uint8(procHandoverExecution) // in CM-IDLE
		}},
		{"connected without a leg", func(r map[string]*UERecord, _ []UERecord) { r[roleHandover].Serving = nil }},
		{"target leg outside a handover", func(r map[string]*UERecord, _ []UERecord) { r[roleRereg].Target = r[roleHandover].Target }},
		{"two contexts, one ID", func(r map[string]*UERecord, _ []UERecord) { r[roleIdle].ID = r[rolePaged].ID }},
		{"two contexts, one 5G-TMSI", func(r map[string]*UERecord, _ []UERecord) { r[roleIdle].GUTI.TMSI = r[rolePaged].GUTI.TMSI }},
		{"two legs, one AMF UE NGAP ID", func(r map[string]*UERecord, _ []UERecord) {
			r[roleRereg].Serving.AMFUENGAPID = r[roleHandover].Serving.AMFUENGAPID
		}},
		{"5G-GUTI of another AMF", func(r map[string]*UERecord, _ []UERecord) { r[roleIdle].GUTI.GUAMI.AMFID.RegionID ^= 1 }},
		{"leg state out of range", func(r map[string]*UERecord, _ []UERecord) { r[roleHandover].Target.State = 42 }},
		{"NAS COUNT past 24 bits", func(r map[string]*UERecord, _ []UERecord) { r[roleIdle].Security.Current.Uplink.Last = 1 << 24 }},
		{"short KAMF", func(r map[string]*UERecord, _ []UERecord) { r[roleIdle].Security.KAMF = r[roleIdle].Security.KAMF[:16] }},
		{"PDU session ID 0", func(r map[string]*UERecord, _ []UERecord) { r[roleIdle].Sessions[0].ID = 0 }},
		{"NAS timer without its message", func(r map[string]*UERecord, _ []UERecord) { r[roleRereg].NASTimer.Message = nil }},
		{"NAS timer without deadline", func(r map[string]*UERecord, _ []UERecord) { r[roleAuth].NASTimer.Deadline = time.Time{} }},
		{"unknown SMF", func(r map[string]*UERecord, _ []UERecord) { r[roleIdle].Sessions[1].SMF = "nobody" }},
		{"unreachable context", func(r map[string]*UERecord, _ []UERecord) { r[roleAuth].Serving, r[roleAuth].State.CM = nil, 0 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			recs := decodeRecords(t, base)
			c.spoil(s.byRole(t, recs), recs)
			b := newRecordAMF(t, s.hn, s.smf)
			if err := b.Restore(recs); !errors.Is(err, ErrBadRecord) {
				t.Fatalf("Restore: %v, want ErrBadRecord", err)
			}
			if st := b.Stats(); st.UEContexts != 0 || b.ranUEs.Len() != 0 {
				t.Errorf("a refused restore built contexts: %+v", st)
			}
		})
	}
}

// TestUERecordDeltas: with a RecordSink, each step of a UE that changes
// its record hands the new record over with the next Seq: a registration
// shows its steps (authentication, security mode control, the accept
// waiting for Registration Complete), the last record equals the one
// Records takes, and the deletion of the context gives one tombstone,
// after which the UE's late steps (the release of its connection) give
// nothing.
func TestUERecordDeltas(t *testing.T) {
	smf := newFakeSMF()
	a, hn := newTestAMFWithSMF(t, smf)
	sink := newRecordingSink(t)
	a.SetRecordSink(sink)
	u := registeredUE(t, a, hn)
	u.establish(1, "")
	waitFor(t, "session set up", func() bool { return len(smf.callsOf("update")) == 1 })
	recs := records(t, a)
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	id := recs[0].ID
	if last := sink.last(id); !bytes.Equal(last, encodeRecord(t, &recs[0])) {
		t.Fatalf("the last delta is not the record Records takes:\n%+v", recs[0])
	}
	deltas := sink.of(id)
	var sawAuth, sawSMC, sawAccept bool
	for i, d := range deltas {
		if d.Seq != uint64(i+1) {
			t.Fatalf("delta %d has Seq %d, want %d", i, d.Seq, i+1)
		}
		sawAuth = sawAuth || commonStep(d.Common) == commonAuthentication && len(d.Authentication.RAND) == 16
		sawSMC = sawSMC || commonStep(d.Common) == commonSecurityMode && d.Security.Pending != nil
		sawAccept = sawAccept || regStep(d.Registration.Step) == regAccepting && timerID(d.NASTimer.Timer) == timerT3550
	}
	if !sawAuth || !sawSMC || !sawAccept {
		t.Errorf("deltas miss steps of the registration: authentication %v, security mode %v, accept %v", sawAuth, sawSMC, sawAccept)
	}
	for i := 1; i < len(deltas); i++ {
		if reflect.DeepEqual(withSeq(deltas[i], 0), withSeq(deltas[i-1], 0)) {
			t.Errorf("deltas %d and %d are the same record: a step that changed nothing gave one", i-1, i)
		}
	}

	n := len(deltas)
	u.sendUL(&nas.DeregistrationRequestUEOriginating{SwitchOff: true, AccessType: nas.Access3GPP,
		NgKSI: nas.NgKSI{KSI: u.sec.NgKSI()}, MobileIdentity: nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *u.guti}})
	u.releaseComplete(expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP()))
	waitFor(t, "connection released", func() bool { return a.ranUEs.Len() == 0 })
	if _, err := a.UE(context.Background(), u.supi); !errors.Is(err, ErrNoUE) {
		t.Fatalf("context still there: %v", err)
	}
	deltas = sink.of(id)
	if len(deltas) != n+1 {
		t.Fatalf("%d deltas after deregistration and release, want one more than the %d before", len(deltas), n)
	}
	if tomb := deltas[n]; rmState(tomb.State.RM) != rmGone || tomb.Seq != uint64(n+1) || tomb.SUPI != "" {
		t.Errorf("last delta %+v, want the tombstone with Seq %d", tomb, n+1)
	}
}

func withSeq(r UERecord, seq uint64) UERecord {
	r.Seq = seq
	return r
}

// TestRecordEnumValues pins the numbers records carry for the package's
// states (the layout hash does not see constant values): renumbering one
// makes the records of another build mean something else, so it must go
// with a change of the record type.
func TestRecordEnumValues(t *testing.T) {
	got := fmt.Sprint(
		[]rmState{rmDeregistered, rmRegistered, rmGone},
		[]cmState{cmIdle, cmConnected},
		[]procedure{procNone, procRegistration, procServiceRequest, procPaging, procHandoverPreparation,
			procHandoverExecution, procNetworkDeregistration},
		[]uint8{uint8(legSignalling), uint8(legSecured), uint8(legContext), uint8(legHandoverPreparing),
			uint8(legHandoverPrepared), uint8(legReleasing)},
		[]uint8{uint8(upNone), uint8(upActivating), uint8(upActive), uint8(upDeactivated)},
		[]uint8{uint8(commonNone), uint8(commonIdentification), uint8(commonAuthentication), uint8(commonSecurityMode)},
		[]uint8{uint8(regCommon), uint8(regAccepting)},
		[]uint8{uint8(timerNone), uint8(timerT3550), uint8(timerT3560), uint8(timerT3570), uint8(timerT3513), uint8(timerT3522)},
		[]uint8{uint8(n2None), uint8(n2Setup), uint8(n2Modify), uint8(n2Release)},
	)
	const want = "[RM-DEREGISTERED RM-REGISTERED GONE] [CM-IDLE CM-CONNECTED] " +
		"[none registration service-request paging handover-preparation handover-execution network-deregistration] " +
		"[0 1 2 3 4 5] [0 1 2 3] [0 1 2 3] [0 1] [0 1 2 3 4 5] [0 1 2 3]"
	if got != want {
		t.Errorf("state numbers\n got %s\nwant %s", got, want)
	}
	if rmGone != 2 || numRMStates != 3 || numCMStates != 2 || numProcedures != 7 {
		t.Errorf("state counts changed: RM %d, CM %d, procedures %d", numRMStates, numCMStates, numProcedures)
	}
}

// TestRecordClonesMessages: the NAS messages a record holds share no
// memory with the context's (a sink may keep a record while the UE goes
// on), every field filled.
func TestRecordClonesMessages(t *testing.T) {
	var rr nas.RegistrationRequest
	wiretest.Fill(&rr)
	var sr nas.ServiceRequest
	wiretest.Fill(&sr)
	for _, c := range []struct {
		orig, clone any
	}{{&rr, cloneRegistrationRequest(&rr)}, {&sr, cloneServiceRequest(&sr)}} {
		if !reflect.DeepEqual(c.orig, c.clone) {
			t.Errorf("%T: clone differs", c.orig)
		}
		if p := sharedMemory(reflect.ValueOf(c.orig).Elem(), reflect.ValueOf(c.clone).Elem(), ""); p != "" {
			t.Errorf("%T: the clone shares %s", c.orig, p)
		}
	}
}

// sharedMemory names the first pointer or slice of a that b shares.
func sharedMemory(a, b reflect.Value, path string) string {
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() {
			return ""
		}
		if a.Pointer() == b.Pointer() {
			return path
		}
		return sharedMemory(a.Elem(), b.Elem(), path)
	case reflect.Slice:
		if a.Len() > 0 && a.Pointer() == b.Pointer() {
			return path
		}
		for i := range a.Len() {
			if p := sharedMemory(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	case reflect.Struct:
		for i := range a.NumField() {
			if p := sharedMemory(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); p != "" {
				return p
			}
		}
	}
	return ""
}

// FuzzUERecordDecode feeds bytes to the decoding of a UE record and what
// decodes to Restore: neither panics, a decoded record survives another
// round trip, and Restore takes it or refuses it with ErrBadRecord. The
// seeds are the records of a recordScene.
func FuzzUERecordDecode(f *testing.F) {
	s := newRecordScene(f)
	for _, r := range records(f, s.a) {
		f.Add(encodeRecord(f, &r))
	}
	cfg := testConfig()
	recordConfig(&cfg)
	deps := s.hn.deps()
	deps.SMF = s.smf
	deps.SMFSelector = namedSelector{s.smf}
	f.Fuzz(func(t *testing.T, b []byte) {
		var rec UERecord
		if err := wire.Decode(b, &rec); err != nil {
			return
		}
		var again UERecord
		if err := wire.Decode(encodeRecord(t, &rec), &again); err != nil || !reflect.DeepEqual(again, rec) {
			t.Fatalf("a decoded record does not survive a round trip: %v", err)
		}
		a, err := New(cfg, deps, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		if err := a.Restore([]UERecord{rec}); err != nil && !errors.Is(err, ErrBadRecord) {
			t.Fatalf("Restore: %v, want nil or ErrBadRecord", err)
		}
	})
}

// TestRecordSinkEncoding pins what stepDone's single encoding relies on
// (sameButSeq): Seq is UERecord's first field, and two encodings of one
// record that differ in Seq only, whatever its length (0: absent), are
// the same for sameButSeq, and no others.
func TestRecordSinkEncoding(t *testing.T) {
	if f := reflect.TypeFor[UERecord]().Field(0); f.Name != "Seq" {
		t.Fatalf("UERecord's first field is %s: stepDone's change detection wants Seq first", f.Name)
	}
	enc := func(r UERecord) []byte {
		b, err := wire.Append(nil, &r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	base := UERecord{ID: 9, SUPI: "imsi-001010000000009", TMSIDraws: 2}
	for _, seqs := range [][2]uint64{{0, 1}, {1, 2}, {127, 128}, {300, 1 << 40}, {5, 5}} {
		x, y := base, base
		x.Seq, y.Seq = seqs[0], seqs[1]
		if !sameButSeq(enc(x), enc(y)) || !sameButSeq(enc(y), enc(x)) {
			t.Errorf("seq %d and %d: not the same record:\n%x\n%x", seqs[0], seqs[1], enc(x), enc(y))
		}
		for _, change := range []func(*UERecord){
			func(r *UERecord) { r.ID++ },              // the next field
			func(r *UERecord) { r.TMSIDraws = 0 },     // a field gone: the bitmap
			func(r *UERecord) { r.Superseded = true }, // a field come
			func(r *UERecord) { r.SUPI += "0" },       // a longer one
			func(r *UERecord) { r.State.RM = 2 },      // deep inside
		} {
			z := y
			change(&z)
			if sameButSeq(enc(x), enc(z)) || sameButSeq(enc(z), enc(x)) {
				t.Errorf("seq %d and %d: a changed record is the same:\n%x\n%x", seqs[0], seqs[1], enc(x), enc(z))
			}
		}
	}
	whole := enc(UERecord{Seq: 3, ID: 1})
	for _, b := range [][]byte{nil, whole[:recordHeader], whole[:recordHeader+recordBitmap]} {
		if sameButSeq(b, whole) || sameButSeq(whole, b) || sameButSeq(b, b) {
			t.Errorf("a truncated record (%x) is the same as another", b)
		}
	}
}
