package amf

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
)

var causeReset = ngap.Cause{Group: ngap.CauseMisc, Value: ngap.MiscOMIntervention}

// connectedUE registers a UE on g and sets up PDU session 1 for it.
func connectedUE(t *testing.T, a *AMF, hn *fakeHN, smf *fakeSMF, g *testGNB, msin string) *testUE {
	t.Helper()
	u := newTestUE(t, g, hn, msin)
	u.register()
	n := len(smf.callsOf("update"))
	u.establish(1, "")
	waitFor(t, "session set up", func() bool { return len(smf.callsOf("update")) == n+1 })
	return u
}

// deactivations counts the user plane deactivations of supi's sessions at
// the SMF.
func deactivations(smf *fakeSMF, supi string) int {
	n := 0
	for _, c := range smf.callsOf("update") {
		if c.supi == supi && c.upCnx == models.Smf_PDUSess_UpCnxState_DEACTIVATED {
			n++
		}
	}
	return n
}

func stateOf(t *testing.T, a *AMF, supi string) ueState {
	t.Helper()
	u := a.supis.Get(supi)
	if u == nil {
		t.Fatalf("no UE context for %s", supi)
	}
	s, _ := u.publishedState()
	return s
}

// waitIdle waits until the UE is RM-REGISTERED, CM-IDLE, in no procedure.
func waitIdle(t *testing.T, a *AMF, u *testUE) {
	t.Helper()
	waitFor(t, u.supi+" idle and registered", func() bool {
		return stateOf(t, a, u.supi) == ueState{rmRegistered, cmIdle, procNone}
	})
}

// connectionCount is what the AMF holds of UE-associated logical
// NG-connections: entries by AMF UE NGAP ID, and by RAN UE NGAP ID over
// all associations.
func connectionCount(a *AMF) (byAMF, byRAN int) {
	byAMF = len(a.ranUEs.All())
	a.mu.Lock()
	defer a.mu.Unlock()
	for g := range a.gnbs {
		g.mu.Lock()
		byRAN += len(g.ues)
		g.mu.Unlock()
	}
	return byAMF, byRAN
}

// procedureTimers counts the NAS and handover guard timers running over
// all UE contexts, read on each UE's executor.
func procedureTimers(t *testing.T, a *AMF) int {
	t.Helper()
	n := 0
	for _, u := range a.supis.All() {
		c := make(chan int, 1)
		u.post(func() {
			k := 0
			if u.nasTimer.Running() {
				k++
			}
			if u.handoverTime.Running() {
				k++
			}
			c <- k
		})
		select {
		case k := <-c:
			n += k
		case <-time.After(recvTimeout):
			t.Fatal("UE executor does not run")
		}
	}
	return n
}

// quiet checks that nothing more comes on g for a while (no UE Context
// Release Command for a connection that was reset).
func quiet(t *testing.T, g *testGNB) {
	t.Helper()
	select {
	case m := <-g.in:
		msg, _ := ngap.Decode(m.Data)
		t.Fatalf("unexpected %T after the reset", msg)
	case <-time.After(100 * time.Millisecond):
	}
}

// serviceRequestWorks has the UE come back with a Service Request for its
// session 1 (TS 23.502 §4.2.3.2) and checks that the user plane is
// activated at the SMF again.
func serviceRequestWorks(t *testing.T, smf *fakeSMF, u *testUE) {
	t.Helper()
	n := len(smf.callsOf("update"))
	u.serviceRequest(nas.ServiceData, bits(1), bits(1))
	ics := expect[*ngap.InitialContextSetupRequest](t, u.recvNGAP())
	expect[*nas.ServiceAccept](t, u.openNAS(ics.NASPDU))
	if len(ics.PDUSessionResourceSetupItems) != 1 || ics.PDUSessionResourceSetupItems[0].ID != 1 {
		t.Fatalf("ICS setup items %+v, want session 1", ics.PDUSessionResourceSetupItems)
	}
	u.g.send(1, &ngap.InitialContextSetupResponse{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID,
		PDUSessionResourceSetupItems: []ngap.PDUSessionResourceItem{{ID: 1, Transfer: []byte("setup-response-transfer-1")}}})
	waitFor(t, "activation and setup response at the SMF", func() bool { return len(smf.callsOf("update")) == n+2 })
	if up := smf.callsOf("update")[n]; up.supi != u.supi || up.upCnx != models.Smf_PDUSess_UpCnxState_ACTIVATING {
		t.Errorf("first update after the Service Request %+v, want the activation", up)
	}
}

// TestNGResetFromGNBWhole: TS 38.413 §8.7.4.2.1, reset of the whole NG
// interface: every connection of that gNB goes without signalling, its UEs
// stay registered, go CM-IDLE with their user plane deactivated at the SMF,
// and come back with a Service Request; a UE on another gNB is untouched.
func TestNGResetFromGNBWhole(t *testing.T) {
	smf := newFakeSMF()
	a, hn := newTestAMFWithSMF(t, smf)
	gA, gB := setupGNB(t, a), setupGNB(t, a)
	u1 := connectedUE(t, a, hn, smf, gA, "0000000001")
	u2 := connectedUE(t, a, hn, smf, gA, "0000000002")
	u3 := connectedUE(t, a, hn, smf, gB, "0000000003")

	gA.send(0, &ngap.NGReset{Cause: ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkUnspecified}})
	if ack := expect[*ngap.NGResetAcknowledge](t, gA.recv()); ack.Connections != nil {
		t.Errorf("acknowledge of a whole reset lists %+v", ack.Connections)
	}
	// The IDs are free once the acknowledge is out.
	if byAMF, byRAN := connectionCount(a); byAMF != 1 || byRAN != 1 {
		t.Errorf("%d connections by AMF UE NGAP ID, %d by RAN UE NGAP ID after the reset; want u3's only", byAMF, byRAN)
	}
	waitIdle(t, a, u1)
	waitIdle(t, a, u2)
	waitFor(t, "deactivations", func() bool { return deactivations(smf, u1.supi) == 1 && deactivations(smf, u2.supi) == 1 })
	quiet(t, gA)
	if s := stateOf(t, a, u3.supi); s != (ueState{rmRegistered, cmConnected, procNone}) || deactivations(smf, u3.supi) != 0 {
		t.Errorf("UE on the other gNB: %s, %d deactivations", s, deactivations(smf, u3.supi))
	}
	if s := a.Stats(); s.RegisteredUEs != 3 || s.ConnectedUEs != 1 || s.IdleUEs != 2 || s.PDUSessions != 3 || s.GNBs != 2 || s.NGResets != 1 || s.UEContextReleases != 0 {
		t.Errorf("stats %+v", s)
	}
	if n := procedureTimers(t, a); n != 0 {
		t.Errorf("%d procedure timers running", n)
	}

	serviceRequestWorks(t, smf, u1)
	serviceRequestWorks(t, smf, u2)
	u3.establish(2, "") // u3's connection still carries signalling
	if s := a.Stats(); s.ConnectedUEs != 3 || s.Registrations != 3 {
		t.Errorf("stats after the Service Requests %+v: no re-registration", s)
	}
}

// TestNGResetFromGNBPartial: the listed connections only (TS 38.413
// §8.7.4.2.1), named by both IDs or by one; items that name no connection of
// ours, or whose IDs contradict each other, change nothing, and the
// acknowledge lists every item in the order received.
func TestNGResetFromGNBPartial(t *testing.T) {
	smf := newFakeSMF()
	a, hn := newTestAMFWithSMF(t, smf)
	g := setupGNB(t, a)
	u1 := connectedUE(t, a, hn, smf, g, "0000000001")
	u2 := connectedUE(t, a, hn, smf, g, "0000000002")
	u3 := connectedUE(t, a, hn, smf, g, "0000000003")

	items := []ngap.UEConnection{
		{AMFUENGAPID: &u1.amfID, RANUENGAPID: &u1.ranID},
		{RANUENGAPID: &u2.ranID},
		{AMFUENGAPID: ptr(int64(1 << 39))}, // unknown
		{RANUENGAPID: ptr(int64(9999))},    // unknown
		{AMFUENGAPID: &u3.amfID, RANUENGAPID: &u1.ranID},
	}
	g.send(0, &ngap.NGReset{Cause: causeReset, Connections: items})
	ack := expect[*ngap.NGResetAcknowledge](t, g.recv())
	if !reflect.DeepEqual(ack.Connections, items) {
		t.Errorf("acknowledged %+v, want the items as sent", ack.Connections)
	}
	waitIdle(t, a, u1)
	waitIdle(t, a, u2)
	waitFor(t, "deactivations", func() bool { return deactivations(smf, u1.supi) == 1 && deactivations(smf, u2.supi) == 1 })
	quiet(t, g)
	if s := stateOf(t, a, u3.supi); s != (ueState{rmRegistered, cmConnected, procNone}) || deactivations(smf, u3.supi) != 0 {
		t.Errorf("u3 (inconsistent item): %s, %d deactivations", s, deactivations(smf, u3.supi))
	}
	if byAMF, byRAN := connectionCount(a); byAMF != 1 || byRAN != 1 {
		t.Errorf("%d/%d connections left, want u3's", byAMF, byRAN)
	}
	serviceRequestWorks(t, smf, u2)
	u3.establish(2, "")
}

func ptr[T any](v T) *T { return &v }

// TestAMFInitiatedNGReset: TS 38.413 §8.7.4.2.2: ResetGNB releases the
// connections at once, sends NG Reset and returns with the acknowledge;
// listed AMF UE NGAP IDs go with the RAN UE NGAP IDs the AMF has.
func TestAMFInitiatedNGReset(t *testing.T) {
	smf := newFakeSMF()
	a, hn := newTestAMFWithSMF(t, smf)
	g := setupGNBAs(t, a, 7, 1)
	u1 := connectedUE(t, a, hn, smf, g, "0000000001")
	u2 := connectedUE(t, a, hn, smf, g, "0000000002")
	ctx := context.Background()

	if err := a.ResetGNB(ctx, gnbID(8), causeReset); !errors.Is(err, ErrUnknownGNB) {
		t.Errorf("reset of an unknown gNB: %v", err)
	}
	if err := a.ResetGNB(ctx, gnbID(7), causeReset, 1<<39); !errors.Is(err, ErrNoConnections) {
		t.Errorf("reset of unknown connections: %v", err)
	}

	done := make(chan error, 1)
	go func() { done <- a.ResetGNB(ctx, gnbID(7), causeReset, u1.amfID, 1<<39) }()
	req := expect[*ngap.NGReset](t, g.recv())
	want := []ngap.UEConnection{{AMFUENGAPID: &u1.amfID, RANUENGAPID: &u1.ranID}}
	if req.Cause != causeReset || !reflect.DeepEqual(req.Connections, want) {
		t.Fatalf("NG Reset %+v, want u1's connection", req)
	}
	waitIdle(t, a, u1)
	if err := a.ResetGNB(ctx, gnbID(7), causeReset); !errors.Is(err, ErrResetPending) {
		t.Errorf("second reset while one is pending: %v", err)
	}
	select {
	case err := <-done:
		t.Fatalf("ResetGNB returned %v before the acknowledge", err)
	case <-time.After(50 * time.Millisecond):
	}
	g.send(0, &ngap.NGResetAcknowledge{Connections: req.Connections})
	if err := <-done; err != nil {
		t.Fatalf("ResetGNB: %v", err)
	}
	if s := stateOf(t, a, u2.supi); s.cm != cmConnected {
		t.Errorf("u2 not listed, but %s", s)
	}

	// Without an acknowledge, the deadline ends the wait; the local
	// release is done all the same.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := a.ResetGNB(short, gnbID(7), causeReset); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("reset without answer: %v", err)
	}
	if req := expect[*ngap.NGReset](t, g.recv()); req.Connections != nil {
		t.Errorf("whole reset lists %+v", req.Connections)
	}
	waitIdle(t, a, u2)
	waitFor(t, "deactivations", func() bool { return deactivations(smf, u1.supi) == 1 && deactivations(smf, u2.supi) == 1 })
	// A late acknowledge is dropped.
	g.send(0, &ngap.NGResetAcknowledge{})
	quiet(t, g)
	if byAMF, byRAN := connectionCount(a); byAMF != 0 || byRAN != 0 {
		t.Errorf("%d/%d connections left", byAMF, byRAN)
	}
	if n := procedureTimers(t, a); n != 0 {
		t.Errorf("%d procedure timers running", n)
	}
	serviceRequestWorks(t, smf, u1)
	serviceRequestWorks(t, smf, u2)
	if s := a.Stats(); s.Registrations != 2 || s.NGResets != 2 {
		t.Errorf("stats %+v", s)
	}
}

// TestNGResetDuringRegistration: a UE whose registration is under way on a
// reset connection had no registration yet: its context goes (TS 24.501
// §5.5.1.2.8 a), lower layer failure), timers and all.
func TestNGResetDuringRegistration(t *testing.T) {
	a, hn := newTestAMF(t, nil)
	g := setupGNB(t, a)
	u := newTestUE(t, g, hn, "0000000001")
	u.sendInitial(u.registrationRequest(u.suci(), nas.RegistrationInitial), nas.Plain)
	expect[*nas.AuthenticationRequest](t, u.recvNAS())
	g.send(0, &ngap.NGReset{Cause: causeReset})
	expect[*ngap.NGResetAcknowledge](t, g.recv())
	waitFor(t, "context removed", func() bool { return a.Stats().UEContexts == 0 })
	if byAMF, byRAN := connectionCount(a); byAMF != 0 || byRAN != 0 {
		t.Errorf("%d/%d connections left", byAMF, byRAN)
	}
}

// TestGNBReconnect: a gNB whose association is lost, or that comes back on
// a new association before the old one is seen to fail, serves again after
// NG Setup; its former UEs are still registered and come back with a
// Service Request. The stale association is closed and replaced (TS 38.413
// §8.7.1.2): one gNB counted, no connection left behind.
func TestGNBReconnect(t *testing.T) {
	for _, stale := range []bool{false, true} {
		name := "association lost"
		if stale {
			name = "stale association"
		}
		t.Run(name, func(t *testing.T) {
			smf := newFakeSMF()
			a, hn := newTestAMFWithSMF(t, smf)
			g1 := setupGNBAs(t, a, 7, 1)
			u1 := connectedUE(t, a, hn, smf, g1, "0000000001")
			u2 := connectedUE(t, a, hn, smf, g1, "0000000002")
			if !stale {
				g1.conn.Close()
				waitFor(t, "association gone", func() bool { return a.Stats().GNBs == 0 })
			}
			g2 := setupGNBAs(t, a, 7, 1)
			if stale {
				// The old association is closed by the AMF.
				for range g1.in {
				}
			}
			waitIdle(t, a, u1)
			waitIdle(t, a, u2)
			waitFor(t, "deactivations", func() bool { return deactivations(smf, u1.supi) == 1 && deactivations(smf, u2.supi) == 1 })
			if s := a.Stats(); s.GNBs != 1 || s.RegisteredUEs != 2 || s.ConnectedUEs != 0 {
				t.Errorf("stats %+v", s)
			}
			a.mu.Lock()
			gnbs := len(a.gnbs)
			a.mu.Unlock()
			if byAMF, byRAN := connectionCount(a); byAMF != 0 || byRAN != 0 || gnbs != 1 {
				t.Errorf("%d/%d connections, %d associations left", byAMF, byRAN, gnbs)
			}
			if n := procedureTimers(t, a); n != 0 {
				t.Errorf("%d procedure timers running", n)
			}
			u1.g, u2.g = g2, g2
			serviceRequestWorks(t, smf, u1)
			serviceRequestWorks(t, smf, u2)
			if s := a.Stats(); s.ConnectedUEs != 2 || s.Registrations != 2 || s.GNBs != 1 {
				t.Errorf("stats after the Service Requests %+v", s)
			}
		})
	}
}

// TestRepeatedNGSetupResetsConnections: TS 38.413 §8.7.1.2: an NG Setup on
// an association already set up erases its UE-associated connections like
// an NG Reset; the UEs stay registered.
func TestRepeatedNGSetupResetsConnections(t *testing.T) {
	smf := newFakeSMF()
	a, hn := newTestAMFWithSMF(t, smf)
	g := setupGNBAs(t, a, 7, 1)
	u := connectedUE(t, a, hn, smf, g, "0000000001")
	req := ngSetupRequest(testPLMN, 1, testSlice)
	req.GlobalRANNodeID = gnbID(7)
	g.send(0, req)
	expect[*ngap.NGSetupResponse](t, g.recv())
	waitIdle(t, a, u)
	if s := a.Stats(); s.GNBs != 1 || s.NGSetups != 2 {
		t.Errorf("stats %+v", s)
	}
	serviceRequestWorks(t, smf, u)
}

// TestRANConfigurationUpdate: TS 38.413 §8.7.2: a new Supported TA List
// replaces the TAs the gNB is paged in; one without a TA we serve, or a
// different node identity, is refused with RAN Configuration Update Failure
// and changes nothing.
func TestRANConfigurationUpdate(t *testing.T) {
	smf := newFakeSMF()
	hn := newFakeHN()
	deps := hn.deps()
	deps.SMF = smf
	cfg := testConfig()
	twoTAConfig(&cfg)
	cfg.Timers.T3513 = 200 * time.Millisecond
	a, err := New(cfg, deps, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	smf.amf = a
	t.Cleanup(func() { smf.checkCallbacks(t); a.Close() })
	g := setupGNBAs(t, a, 7, 1)
	u := connectedUE(t, a, hn, smf, g, "0000000001")
	u.goIdle(a)
	tais := func() []identity.TAI { return a.gnbsOf(gnbID(7))[0].tais() }
	ta := func(tac uint32) []ngap.SupportedTA {
		return []ngap.SupportedTA{{TAC: tac, BroadcastPLMNs: []ngap.BroadcastPLMN{{PLMN: testPLMN, Slices: []identity.SNSSAI{testSlice}}}}}
	}
	other := gnbID(8)
	for _, c := range []struct {
		m    *ngap.RANConfigurationUpdate
		want ngap.Cause
	}{
		{&ngap.RANConfigurationUpdate{SupportedTAs: ta(99)}, causeUnknownPLMN},
		{&ngap.RANConfigurationUpdate{SupportedTAs: []ngap.SupportedTA{{TAC: 2, BroadcastPLMNs: []ngap.BroadcastPLMN{
			{PLMN: testPLMN, Slices: []identity.SNSSAI{{SST: 9}}}}}}}, causeSliceNotSupported},
		{&ngap.RANConfigurationUpdate{GlobalRANNodeID: &other, SupportedTAs: ta(2)}, ngap.Cause{Group: ngap.CauseMisc, Value: ngap.MiscUnspecified}},
	} {
		g.send(0, c.m)
		if f := expect[*ngap.RANConfigurationUpdateFailure](t, g.recv()); f.Cause != c.want || f.TimeToWait == nil {
			t.Errorf("failure %+v, want cause %v", f, c.want)
		}
	}
	if got := tais(); !reflect.DeepEqual(got, []identity.TAI{testTAI}) {
		t.Errorf("TAs after refused updates: %v, want TAC 1 still", got)
	}

	// The gNB now broadcasts TAC 2 only: the UE, registered in TAC 1, is
	// not paged there.
	id := gnbID(7)
	g.send(0, &ngap.RANConfigurationUpdate{RANNodeName: "moved", SupportedTAs: ta(2), GlobalRANNodeID: &id})
	expect[*ngap.RANConfigurationUpdateAcknowledge](t, g.recv())
	if got := tais(); !reflect.DeepEqual(got, []identity.TAI{testTAI2}) {
		t.Fatalf("TAs after the update: %v, want TAC 2", got)
	}
	if _, err := a.N1N2MessageTransfer(context.Background(), u.supi, downlinkData(1, 2)); err != nil {
		t.Fatal(err)
	}
	quiet(t, g)

	// An update without a TA list keeps the TAs; back in TAC 1 and 2, the
	// paging (T3513 resends it) reaches the gNB.
	g.send(0, &ngap.RANConfigurationUpdate{RANNodeName: "same"})
	expect[*ngap.RANConfigurationUpdateAcknowledge](t, g.recv())
	if got := tais(); !reflect.DeepEqual(got, []identity.TAI{testTAI2}) {
		t.Fatalf("TAs after an update without a list: %v", got)
	}
	g.send(0, &ngap.RANConfigurationUpdate{SupportedTAs: append(ta(1), ta(2)...)})
	expect[*ngap.RANConfigurationUpdateAcknowledge](t, g.recv())
	if p := expect[*ngap.Paging](t, g.recv()); p.UEPagingIdentity != u.guti.STMSI() {
		t.Errorf("paging %+v", p)
	}
}

// TestNGResetDuringHandover: an NG Reset ends an N2 handover that needs
// the reset connection as the loss of that connection does: the target's
// reset (by AMF UE NGAP ID, before it gave a RAN UE NGAP ID) fails the
// preparation and the UE stays on the source; the source's reset during
// the execution leaves the UE idle, its handover cancelled at the SMF and
// the target's leg released.
func TestNGResetDuringHandover(t *testing.T) {
	t.Run("target", func(t *testing.T) {
		f := newHOFixture(t, nil)
		u := f.u
		f.g1.send(1, &ngap.HandoverRequired{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID, HandoverType: ngap.HandoverIntra5GS,
			Cause:    ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkHandoverDesirableForRadioReason},
			TargetID: ngap.TargetRANNodeID{GlobalGNBID: gnbID(2), SelectedTAI: testTAI2},
			Sessions: []ngap.PDUSessionResourceItem{{ID: 1, Transfer: []byte("x")}}, SourceToTargetTransparentContainer: []byte("c")})
		req := expect[*ngap.HandoverRequest](t, f.g2.recv())
		items := []ngap.UEConnection{{AMFUENGAPID: &req.AMFUENGAPID}}
		f.g2.send(0, &ngap.NGReset{Cause: causeReset, Connections: items})
		if ack := expect[*ngap.NGResetAcknowledge](t, f.g2.recv()); !reflect.DeepEqual(ack.Connections, items) {
			t.Errorf("acknowledged %+v", ack.Connections)
		}
		if pf := expect[*ngap.HandoverPreparationFailure](t, f.g1.recv()); pf.Cause.Value != ngap.RadioNetworkHOFailureInTarget {
			t.Errorf("preparation failure cause %v", pf.Cause)
		}
		waitFor(t, "cancel at the SMF", func() bool { return f.updates("", models.Smf_PDUSess_HoState_CANCELLED) == 1 })
		if s := stateOf(t, f.a, u.supi); s != (ueState{rmRegistered, cmConnected, procNone}) {
			t.Errorf("UE %s, want connected on the source", s)
		}
		if byAMF, _ := connectionCount(f.a); byAMF != 1 {
			t.Errorf("%d connections, want the source's", byAMF)
		}
	})
	t.Run("source", func(t *testing.T) {
		f := newHOFixture(t, nil)
		u := f.u
		req, _ := f.prepare(t)
		f.g1.send(0, &ngap.NGReset{Cause: causeReset})
		expect[*ngap.NGResetAcknowledge](t, f.g1.recv())
		if rel := expect[*ngap.UEContextReleaseCommand](t, f.g2.recv()); rel.AMFUENGAPID != req.AMFUENGAPID {
			t.Errorf("target release %+v", rel)
		}
		waitIdle(t, f.a, u)
		waitFor(t, "cancel at the SMF", func() bool { return f.updates("", models.Smf_PDUSess_HoState_CANCELLED) == 1 })
		if n := procedureTimers(t, f.a); n != 0 {
			t.Errorf("%d procedure timers running", n)
		}
	})
}
