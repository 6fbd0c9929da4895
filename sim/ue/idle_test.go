package ue

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/security/kdf"
)

// Idle mode against the scripted network: the service request
// (UE-triggered, for uplink data, in answer to paging), its accept and
// rejects, the network's deregistration, periodic registration and the
// inactivity release.

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// busyAsync reports whether a procedure the UE started itself runs.
func (u *UE) busyAsync() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.async
}

// recvServiceRequest reads an InitialUEMessage holding an integrity
// protected (not ciphered) Service Request that verifies with the
// network's context.
func (a *amf) recvServiceRequest() *nas.ServiceRequest {
	a.t.Helper()
	sr, _ := a.recvServiceRequestCause()
	return sr
}

func (a *amf) recvServiceRequestCause() (*nas.ServiceRequest, ngap.RRCEstablishmentCause) {
	a.t.Helper()
	p := a.next()
	if !p.initial || p.stmsi == nil || *p.stmsi != guti1.STMSI() {
		a.t.Fatalf("service request: initial %v, 5G-S-TMSI %+v", p.initial, p.stmsi)
	}
	if hdr, _ := nas.SecurityHeader(p.pdu); hdr != nas.IntegrityProtected {
		a.t.Fatalf("service request header %s, want integrity protected", hdr)
	}
	plain, _, err := a.sec.Unprotect(p.pdu, nas.Uplink)
	if err != nil {
		a.t.Fatalf("service request does not verify: %v", err)
	}
	m, err := nas.Decode(plain)
	if err != nil {
		a.t.Fatal(err)
	}
	sr, ok := m.(*nas.ServiceRequest)
	if !ok {
		a.t.Fatalf("want Service Request, got %T", m)
	}
	if sr.STMSI != guti1.STMSI() || sr.NgKSI.KSI != a.ksi {
		a.t.Fatalf("service request %+v", sr)
	}
	if len(sr.NASMessageContainer) > 0 {
		// TS 24.501 §4.4.6: the complete request is in the container.
		inner, err := a.sec.OpenContainer(sr.NASMessageContainer, nas.Uplink)
		if err != nil {
			a.t.Fatal(err)
		}
		full, err := nas.Decode(inner)
		if err != nil {
			a.t.Fatal(err)
		}
		sr = full.(*nas.ServiceRequest)
	}
	return sr, p.cause
}

// establish sets up PDU session id with the given address.
func (a *amf) establish(id uint8, addr string) {
	a.t.Helper()
	done := startEstablish(a.u, SessionRequest{DNN: "internet", ID: id})
	_, sm := a.recvSM()
	a.sendSM(acceptFor(sm, addr, 1))
	a.u.HandleSessionSetup(id, time.Now(), nil)
	if r := <-done; r.err != nil {
		a.t.Fatal(r.err)
	}
}

// accept plays the gNB's Initial Context Setup for the sessions in setup
// (Response at ics) and delivers m in it.
func (a *amf) acceptService(m *nas.ServiceAccept, ics time.Time, setup ...uint8) {
	a.t.Helper()
	a.u.HandleContextSetup(ics)
	for _, id := range setup {
		a.u.HandleSessionSetup(id, ics, nil)
	}
	a.sendProtected(m, nas.IntegrityProtectedAndCiphered)
}

func u16(v uint16) *uint16 { return &v }

func newObs() *obs { return &obs{ok: map[string]int{}, fail: map[string]int{}} }

func TestServiceRequestData(t *testing.T) {
	u, a := newUE(t, testK, 0)
	o := newObs()
	u.cfg.Observer = o
	a.l.data = make(chan dataPDU, 8)
	a.register()
	a.establish(1, "10.60.0.1")
	a.establish(2, "10.60.0.2")
	if err := u.ServiceRequest(context.Background(), nas.ServiceData); !errors.Is(err, ErrConnected) {
		t.Fatalf("service request while connected: %v", err)
	}
	u.HandleRelease(time.Now())
	if a.l.pagingIdentity() == nil || *a.l.pagingIdentity() != guti1.STMSI() {
		t.Fatalf("gNB paging identity %+v", a.l.pagingIdentity())
	}

	done := start(func(ctx context.Context) error { return u.ServiceRequest(ctx, nas.ServiceData) })
	sr, cause := a.recvServiceRequestCause()
	if sr.ServiceType != nas.ServiceData || cause != ngap.RRCMOData ||
		sr.UplinkDataStatus == nil || *sr.UplinkDataStatus != 1<<1|1<<2 ||
		sr.PDUSessionStatus == nil || *sr.PDUSessionStatus != 1<<1|1<<2 {
		t.Fatalf("service request %+v, cause %d", sr, cause)
	}
	if !u.Registered() || !u.Connected() {
		t.Fatal("not registered and connected during the service request")
	}
	// The network sets up session 1 and no longer has session 2.
	ics := time.Now()
	a.acceptService(&nas.ServiceAccept{PDUSessionStatus: u16(1 << 1), PDUSessionReactivationResult: u16(0)}, ics, 1)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if w := u.LastWindow(); w <= 0 || o.ok[ProcServiceRequest] != 1 {
		t.Fatalf("window %v, observer %v", w, o.ok)
	}
	ss := u.Sessions()
	if len(ss) != 1 || ss[0].ID != 1 || !ss[0].UserPlane || u.Stats().LocalReleases != 1 {
		t.Fatalf("sessions %+v stats %+v", ss, u.Stats())
	}
	if err := u.SendData(1, []byte{0x45}); err != nil {
		t.Fatal(err)
	}
	if d := <-a.l.data; d.psi != 1 {
		t.Fatalf("uplink %+v", d)
	}
	// Connected with a secured context: 5GSM works again.
	a.establish(3, "10.60.0.3")
	if len(o.fail) != 1 || o.fail[ProcServiceRequest] != 1 { // the one while connected
		t.Fatalf("failures %v", o.fail)
	}
}

// TestUplinkTriggersServiceRequest: uplink in CM-IDLE is buffered (64
// packets, the rest dropped and counted), a service request flags the
// session, and once the user plane is back the buffer goes out in order,
// before anything sent later. A session whose user plane does not come
// back loses its buffered packets.
func TestUplinkTriggersServiceRequest(t *testing.T) {
	u, a := newUE(t, testK, 0)
	o := newObs()
	u.cfg.Observer = o
	a.l.data = make(chan dataPDU, 128)
	a.register()
	a.establish(1, "10.60.0.1")
	a.establish(2, "10.60.0.2")
	u.HandleRelease(time.Now())

	var dropped int
	for i := range 70 {
		err := u.SendData(1, []byte{0x45, byte(i)})
		switch {
		case i < DefaultUplinkBuffer && err != nil:
			t.Fatalf("packet %d: %v", i, err)
		case i >= DefaultUplinkBuffer && !errors.Is(err, ErrUplinkBufferFull):
			t.Fatalf("packet %d: %v, want ErrUplinkBufferFull", i, err)
		case err != nil:
			dropped++
		}
	}
	sr, cause := a.recvServiceRequestCause()
	if sr.ServiceType != nas.ServiceData || cause != ngap.RRCMOData || sr.UplinkDataStatus == nil || *sr.UplinkDataStatus != 1<<1 {
		t.Fatalf("service request %+v cause %d", sr, cause)
	}
	a.noUplink() // one service request only
	if st := u.Stats(); st.QueuedUplink != 64 || st.DroppedUplink != 6 || dropped != 6 {
		t.Fatalf("stats %+v", st)
	}
	// Session 2's packet waits too; the network re-establishes only 1.
	if err := u.SendData(2, []byte{0x45, 200}); !errors.Is(err, ErrUplinkBufferFull) {
		t.Fatalf("session 2 with a full buffer: %v", err)
	}
	ics := time.Now()
	u.HandleContextSetup(ics)
	u.HandleSessionSetup(1, ics, nil)
	for i := range 64 {
		if d := <-a.l.data; d.psi != 1 || d.pkt[1] != byte(i) {
			t.Fatalf("flushed packet %d: %+v", i, d)
		}
	}
	a.sendProtected(&nas.ServiceAccept{PDUSessionStatus: u16(1<<1 | 1<<2), PDUSessionReactivationResult: u16(0)}, nas.IntegrityProtectedAndCiphered)
	waitFor(t, "the service request to end", func() bool { return !u.busyAsync() })
	if o.ok[ProcServiceRequest] != 1 {
		t.Fatalf("observer %v %v", o.ok, o.fail)
	}
	if ds, _ := u.DataStats(1); ds.Uplink != 64 {
		t.Fatalf("data stats %+v", ds)
	}

	// Session 2 has no user plane while the UE is connected: refused.
	if err := u.SendData(2, []byte{0x45}); !errors.Is(err, ErrNoUserPlane) {
		t.Fatalf("connected, no user plane: %v", err)
	}
	// Back to idle; uplink on 2 and 1; the network fails 2's reactivation.
	u.HandleRelease(time.Now())
	if err := u.SendData(2, []byte{0x45, 1}); err != nil {
		t.Fatal(err)
	}
	if err := u.SendData(1, []byte{0x45, 2}); err != nil {
		t.Fatal(err)
	}
	sr = a.recvServiceRequest()
	if *sr.UplinkDataStatus != 1<<2 {
		t.Fatalf("second service request %+v", sr)
	}
	u.HandleContextSetup(time.Now())
	u.HandleSessionSetup(1, time.Now(), nil)
	if d := <-a.l.data; d.psi != 1 || d.pkt[1] != 2 {
		t.Fatalf("flushed %+v", d)
	}
	a.sendProtected(&nas.ServiceAccept{PDUSessionStatus: u16(1<<1 | 1<<2), PDUSessionReactivationResult: u16(1 << 2),
		PDUSessionReactivationResultErrorCause: []nas.PDUSessionCause{{PSI: 2, Cause: nas.CauseInsufficientUserPlaneResources}}},
		nas.IntegrityProtectedAndCiphered)
	waitFor(t, "the second service request to end", func() bool { return !u.busyAsync() })
	st := u.Stats()
	if st.DroppedUplink != 8 || st.ReactivationFailures != 1 || o.ok[ProcServiceRequest] != 2 {
		t.Fatalf("stats %+v observer %v", st, o.ok)
	}
	if s, _ := u.Session(2); s.UserPlane {
		t.Fatalf("session 2 %+v", s)
	}
	select {
	case d := <-a.l.data:
		t.Fatalf("packet of a session without user plane sent: %+v", d)
	default:
	}
}

// TestPagingAnswered: an idle UE answers paging with a service request of
// type mobile terminated (RRC mt-Access), observed as "paging" from the
// gNB's receiving instant to its Initial Context Setup Response.
func TestPagingAnswered(t *testing.T) {
	u, a := newUE(t, testK, 0)
	o := newObs()
	u.cfg.Observer = o
	a.register()
	a.establish(1, "10.60.0.1")
	u.HandlePaging(time.Now()) // connected: ignored
	a.noUplink()
	u.HandleRelease(time.Now())

	paged := time.Now()
	u.HandlePaging(paged)
	sr, cause := a.recvServiceRequestCause()
	if sr.ServiceType != nas.ServiceMobileTerminated || cause != ngap.RRCMTAccess || sr.UplinkDataStatus != nil ||
		sr.PDUSessionStatus == nil || *sr.PDUSessionStatus != 1<<1 {
		t.Fatalf("service request %+v cause %d", sr, cause)
	}
	u.HandlePaging(time.Now()) // T3513: paged again while answering
	a.noUplink()
	// A caller's procedure waits for the answer to paging.
	released := start(u.Release)
	time.Sleep(10 * time.Millisecond)
	a.l.mu.Lock()
	n := a.l.releaseRequests
	a.l.mu.Unlock()
	if n != 0 {
		t.Fatalf("release requested during the paging response")
	}
	ics := paged.Add(5 * time.Millisecond)
	a.acceptService(&nas.ServiceAccept{PDUSessionStatus: u16(1 << 1)}, ics, 1)
	waitFor(t, "the release request", func() bool {
		a.l.mu.Lock()
		defer a.l.mu.Unlock()
		return a.l.releaseRequests == 1
	})
	u.HandleRelease(time.Now())
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	if o.ok[ProcPaging] != 1 || o.ok[ProcServiceRequest] != 0 || o.ok[ProcANRelease] != 1 {
		t.Fatalf("observer %v", o.ok)
	}
	if st := u.Stats(); st.Pagings != 3 || st.PagingsIgnored != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// TestPagingTimeout: a paging response the network never answers is given
// up after Config.Timeout: counted as a failure, the connection dropped,
// the UE still registered and idle.
func TestPagingTimeout(t *testing.T) {
	u, a := newUE(t, testK, 0)
	o := newObs()
	u.cfg.Observer = o
	a.register()
	u.HandleRelease(time.Now())
	u.mu.Lock()
	u.cfg.Timeout = 30 * time.Millisecond
	u.mu.Unlock()
	u.HandlePaging(time.Now())
	a.recvServiceRequest()
	waitFor(t, "the timeout", func() bool { return !u.busyAsync() })
	a.l.mu.Lock()
	dropped := a.l.dropped
	a.l.mu.Unlock()
	if o.fail[ProcPaging] != 1 || dropped != 1 || !u.Registered() || u.Connected() {
		t.Fatalf("fail %v dropped %d registered %v connected %v", o.fail, dropped, u.Registered(), u.Connected())
	}
}

// TestReleaseWhenAlreadyIdle: a release asked of a UE that the network
// has released already (its inactivity timer, racing the caller) answers
// ErrNotConnected and is not counted as a failed AN release.
func TestReleaseWhenAlreadyIdle(t *testing.T) {
	u, a := newUE(t, testK, 0)
	o := newObs()
	u.cfg.Observer = o
	a.register()
	u.HandleRelease(time.Now())
	if err := u.Release(context.Background()); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("Release of an idle UE: %v", err)
	}
	if o.fail[ProcANRelease] != 0 || !u.Registered() || u.Connected() {
		t.Fatalf("fail %v registered %v connected %v", o.fail, u.Registered(), u.Connected())
	}
}

// TestServiceRejectIdentity: #9 deletes the 5G-GUTI and the security
// context; after the release the UE registers again with SUCI by itself.
func TestServiceRejectIdentity(t *testing.T) {
	u, a := newUE(t, testK, 0)
	o := newObs()
	u.cfg.Observer = o
	a.l.data = make(chan dataPDU, 4)
	a.register()
	a.establish(1, "10.60.0.1")
	u.HandleRelease(time.Now())
	if err := u.SendData(1, []byte{0x45}); err != nil {
		t.Fatal(err)
	}
	a.recvServiceRequest()
	a.sec = nil // the network does not know the UE: plain reject
	a.sendPlain(&nas.ServiceReject{Cause: nas.CauseUEIdentityCannotBeDerived})
	if _, ok := u.GUTI(); ok || u.HasSecurityContext() || u.Registered() || len(u.Sessions()) != 0 {
		t.Fatal("5G-GUTI, context, registration or sessions kept after #9")
	}
	if a.l.pagingIdentity() != nil {
		t.Fatal("gNB still pages the deleted 5G-S-TMSI")
	}
	a.noUplink()
	u.HandleRelease(time.Now())
	// The initial registration, by SUCI.
	m, hdr := a.recv()
	rr, ok := m.(*nas.RegistrationRequest)
	if !ok || hdr != nas.Plain || rr.RegistrationType != nas.RegistrationInitial || rr.MobileIdentity.Type != nas.IdentitySUCI {
		t.Fatalf("after #9: %T %+v (%s)", m, m, hdr)
	}
	a.authenticate()
	a.securityMode(false)
	a.accept(guti2)
	waitFor(t, "the registration", u.Registered)
	if o.fail[ProcServiceRequest] != 1 || o.ok[ProcRegistration] != 2 {
		t.Fatalf("observer ok %v fail %v", o.ok, o.fail)
	}
	st := u.Stats()
	if st.ServiceRejects != 1 || st.Reregistrations != 1 || st.DroppedUplink != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestServiceRejectCauses: a caller's service request ends with the
// reject once the network released the connection; #10 re-registers with
// the 5G-GUTI, #7 not at all, #22 leaves the UE registered with its
// sessions.
func TestServiceRejectCauses(t *testing.T) {
	for _, tc := range []struct {
		cause      nas.Cause5GMM
		registered bool
		guti       bool
		reregister bool
	}{
		{nas.CauseImplicitlyDeregistered, false, true, true},
		{nas.Cause5GSServicesNotAllowed, false, false, false},
		{nas.CauseCongestion, true, true, false},
	} {
		u, a := newUE(t, testK, 0)
		a.register()
		a.establish(1, "10.60.0.1")
		u.HandleRelease(time.Now())
		done := start(func(ctx context.Context) error { return u.ServiceRequest(ctx, nas.ServiceSignalling) })
		sr, cause := a.recvServiceRequestCause()
		if sr.ServiceType != nas.ServiceSignalling || cause != ngap.RRCMOSignalling || sr.UplinkDataStatus != nil {
			t.Fatalf("#%d: service request %+v cause %d", tc.cause, sr, cause)
		}
		a.sendProtected(&nas.ServiceReject{Cause: tc.cause}, nas.IntegrityProtectedAndCiphered)
		notYet(t, done) // it ends with the release
		u.HandleRelease(time.Now())
		var rej *ServiceRejectError
		if err := <-done; !errors.As(err, &rej) || rej.Cause != tc.cause {
			t.Fatalf("#%d: err %v", tc.cause, err)
		}
		_, hasGUTI := u.GUTI()
		if u.Registered() != tc.registered || hasGUTI != tc.guti || (len(u.Sessions()) == 1) != tc.registered {
			t.Fatalf("#%d: registered %v guti %v sessions %+v", tc.cause, u.Registered(), hasGUTI, u.Sessions())
		}
		if !tc.reregister {
			a.noUplink()
			continue
		}
		p := a.next()
		if !p.initial {
			t.Fatalf("#%d: no new registration", tc.cause)
		}
		plain, _, err := a.sec.Unprotect(p.pdu, nas.Uplink)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := nas.Decode(plain)
		if rr, ok := m.(*nas.RegistrationRequest); !ok || rr.RegistrationType != nas.RegistrationInitial || rr.MobileIdentity.GUTI != guti1 {
			t.Fatalf("#%d: %+v", tc.cause, m)
		}
		a.accept(guti2)
		waitFor(t, "the registration", u.Registered)
	}
}

// TestServiceRequestWithoutContext: a UE without a security context sends
// the cleartext IEs only; the network authenticates, and the Security Mode
// Complete carries the complete request.
func TestServiceRequestWithoutContext(t *testing.T) {
	u, a := newUE(t, testK, 0)
	a.register()
	a.establish(1, "10.60.0.1")
	u.HandleRelease(time.Now())
	u.ForgetSecurityContext()
	done := start(func(ctx context.Context) error { return u.ServiceRequest(ctx, nas.ServiceData) })
	p := a.next()
	m, err := nas.Decode(p.pdu)
	sr, ok := m.(*nas.ServiceRequest)
	if err != nil || !ok || sr.NgKSI.KSI != nas.KSINoKey || sr.UplinkDataStatus != nil || sr.PDUSessionStatus != nil {
		t.Fatalf("plain service request %+v %v", m, err)
	}
	a.sec = nil
	a.authenticate()
	enc, integ := kdf.NASKeys(a.kamf, nas.NEA2, nas.NIA2)
	a.sec = nas.NewSecurityContext(enc, integ, nas.NEA2, nas.NIA2, a.ksi)
	a.sendProtected(&nas.SecurityModeCommand{
		CipheringAlg: nas.NEA2, IntegrityAlg: nas.NIA2, NgKSI: nas.NgKSI{KSI: a.ksi},
		ReplayedUESecurityCapability: nas.UESecurityCapability{EA: 0xF0, IA: 0xF0}, RetransmitInitialNAS: true,
	}, nas.IntegrityProtectedNewContext)
	c, _ := a.recv()
	smc, ok := c.(*nas.SecurityModeComplete)
	if !ok {
		t.Fatalf("want Security Mode Complete, got %T", c)
	}
	inner, err := nas.Decode(smc.NASMessageContainer)
	full, ok := inner.(*nas.ServiceRequest)
	if err != nil || !ok || full.UplinkDataStatus == nil || *full.UplinkDataStatus != 1<<1 || full.PDUSessionStatus == nil {
		t.Fatalf("container %+v %v", inner, err)
	}
	a.acceptService(&nas.ServiceAccept{}, time.Now(), 1)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestServiceRequestNASContainer: the integrity protected Service Request
// has the cleartext IEs and a NAS message container holding the complete
// request, ciphered with the COUNT of the outer message (TS 24.501 §4.4.6).
func TestServiceRequestNASContainer(t *testing.T) {
	u, a := newUE(t, testK, 0)
	a.register()
	a.establish(1, "10.60.0.1")
	u.HandleRelease(time.Now())
	done := start(func(ctx context.Context) error { return u.ServiceRequest(ctx, nas.ServiceData) })
	p := a.next()
	if hdr, _ := nas.SecurityHeader(p.pdu); hdr != nas.IntegrityProtected {
		t.Fatalf("header %s", hdr)
	}
	count := a.sec.NextCount(nas.Uplink)
	plain, _, err := a.sec.Unprotect(p.pdu, nas.Uplink)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := nas.Decode(plain)
	sr, ok := m.(*nas.ServiceRequest)
	if !ok || sr.UplinkDataStatus != nil || sr.PDUSessionStatus != nil || len(sr.NASMessageContainer) == 0 || sr.STMSI != guti1.STMSI() {
		t.Fatalf("outer service request %+v", m)
	}
	// Decipher: the keystream of that COUNT, from ciphering a known
	// message at least as long as the container.
	known, err := nas.Encode(&nas.ULNASTransport{PayloadContainerType: nas.PayloadN1SMInformation, Payload: make([]byte, len(sr.NASMessageContainer))})
	if err != nil {
		t.Fatal(err)
	}
	c := a.sec.Clone()
	c.SetNextCount(nas.Uplink, count)
	enc, err := c.Protect(known, nas.IntegrityProtectedAndCiphered, nas.Uplink)
	if err != nil {
		t.Fatal(err)
	}
	full := make([]byte, len(sr.NASMessageContainer))
	for i := range full {
		full[i] = sr.NASMessageContainer[i] ^ enc[secHdrLen+i] ^ known[i]
	}
	inner, err := nas.Decode(full)
	fsr, ok := inner.(*nas.ServiceRequest)
	if err != nil || !ok || fsr.UplinkDataStatus == nil || *fsr.UplinkDataStatus != 1<<1 || fsr.PDUSessionStatus == nil || *fsr.PDUSessionStatus != 1<<1 {
		t.Fatalf("container %+v %v", inner, err)
	}
	a.acceptService(&nas.ServiceAccept{}, time.Now(), 1)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestNetworkDeregistration: the UE answers a Deregistration Request (UE
// terminated), releases its sessions locally and, when told to, registers
// again after the release.
func TestNetworkDeregistration(t *testing.T) {
	u, a := newUE(t, testK, 0)
	o := newObs()
	u.cfg.Observer = o
	a.register()
	a.establish(1, "10.60.0.1")
	a.sendProtected(&nas.DeregistrationRequestUETerminated{AccessType: nas.Access3GPP}, nas.IntegrityProtectedAndCiphered)
	if m, hdr := a.recv(); m.MessageType() != nas.MsgDeregistrationAcceptUETerm || hdr != nas.IntegrityProtectedAndCiphered {
		t.Fatalf("answer %T (%s)", m, hdr)
	}
	if u.Registered() || len(u.Sessions()) != 0 {
		t.Fatal("still registered, or sessions kept")
	}
	// T3522: the request again gets the accept again.
	a.sendProtected(&nas.DeregistrationRequestUETerminated{AccessType: nas.Access3GPP}, nas.IntegrityProtectedAndCiphered)
	if m, _ := a.recv(); m.MessageType() != nas.MsgDeregistrationAcceptUETerm {
		t.Fatalf("answer %T", m)
	}
	u.HandleRelease(time.Now())
	a.noUplink()
	if _, ok := u.GUTI(); !ok || u.Stats().NetworkDeregistrations != 1 || u.Stats().RepeatedResponses != 1 {
		t.Fatalf("guti kept %v, stats %+v", ok, u.Stats())
	}

	// Re-registration required, during a service request: the request
	// ends, the UE answers and registers again.
	a.reregisterWith(guti1)
	a.establish(1, "10.60.0.1")
	u.HandleRelease(time.Now())
	done := start(func(ctx context.Context) error { return u.ServiceRequest(ctx, nas.ServiceSignalling) })
	a.recvServiceRequest()
	a.sendProtected(&nas.DeregistrationRequestUETerminated{AccessType: nas.Access3GPP, ReRegistrationRequired: true}, nas.IntegrityProtectedAndCiphered)
	if err := <-done; !errors.Is(err, ErrNetworkDeregistered) {
		t.Fatalf("service request: %v", err)
	}
	if m, _ := a.recv(); m.MessageType() != nas.MsgDeregistrationAcceptUETerm {
		t.Fatalf("answer %T", m)
	}
	u.HandleRelease(time.Now())
	p := a.next()
	plain, _, err := a.sec.Unprotect(p.pdu, nas.Uplink)
	if err != nil || !p.initial {
		t.Fatalf("re-registration: initial %v, %v", p.initial, err)
	}
	m, _ := nas.Decode(plain)
	if rr, ok := m.(*nas.RegistrationRequest); !ok || rr.RegistrationType != nas.RegistrationInitial {
		t.Fatalf("re-registration %+v", m)
	}
	a.accept(guti2)
	waitFor(t, "the registration", u.Registered)
	if o.ok[ProcReregistration] != 2 || u.Stats().Reregistrations != 1 || u.Stats().NetworkDeregistrations != 2 {
		t.Fatalf("observer %v stats %+v", o.ok, u.Stats())
	}
}

// reregisterWith runs a caller's re-registration with the stored 5G-GUTI g
// (from deregistered: an initial registration), accepted with g.
func (a *amf) reregisterWith(g identity.GUTI) {
	a.t.Helper()
	done := start(a.u.Reregister)
	a.next()
	a.accept(g)
	if err := <-done; err != nil {
		a.t.Fatal(err)
	}
}

// TestPeriodicRegistration: T3512 from the accept runs in CM-IDLE and
// starts a periodic registration update; a connection stops it.
func TestPeriodicRegistration(t *testing.T) {
	u, a := newUE(t, testK, 0)
	o := newObs()
	u.cfg.Observer = o
	u.cfg.PeriodicRegistration = true
	a.register()
	u.mu.Lock()
	t3512 := u.t3512
	u.t3512 = 20 * time.Millisecond
	u.mu.Unlock()
	if t3512 != DefaultT3512 {
		t.Fatalf("T3512 without the IE: %v", t3512)
	}
	time.Sleep(40 * time.Millisecond)
	a.noUplink() // connected: no periodic registration
	u.HandleRelease(time.Now())
	p := a.next()
	plain, _, err := a.sec.Unprotect(p.pdu, nas.Uplink)
	if err != nil || !p.initial {
		t.Fatalf("periodic registration: initial %v, %v", p.initial, err)
	}
	m, _ := nas.Decode(plain)
	if rr, ok := m.(*nas.RegistrationRequest); !ok || rr.RegistrationType != nas.RegistrationPeriodicUpdating || rr.MobileIdentity.GUTI != guti1 {
		t.Fatalf("periodic registration %+v", m)
	}
	timer := nas.GPRSTimer3{Unit: nas.Timer3Unit2Sec, Value: 3}
	gg := guti1
	a.sendProtected(&nas.RegistrationAccept{Result: nas.Registered3GPP, GUTI: &gg, T3512: &timer}, nas.IntegrityProtectedAndCiphered)
	if m, _ := a.recv(); m.MessageType() != nas.MsgRegistrationComplete {
		t.Fatalf("want Registration Complete, got %T", m)
	}
	waitFor(t, "the update", func() bool { return !u.busyAsync() })
	u.mu.Lock()
	t3512 = u.t3512
	u.mu.Unlock()
	if o.ok[ProcPeriodicRegistration] != 1 || u.Stats().PeriodicRegistrations != 1 || t3512 != 6*time.Second || !u.Registered() {
		t.Fatalf("observer %v stats %+v T3512 %v", o.ok, u.Stats(), t3512)
	}
}

// TestInactivityRelease: a connected UE without user-plane packets for the
// inactivity timeout asks for its release; traffic keeps it connected.
func TestInactivityRelease(t *testing.T) {
	u, a := newUE(t, testK, 0)
	o := newObs()
	u.cfg.Observer = o
	a.l.data = make(chan dataPDU, 64)
	a.register()
	a.establish(1, "10.60.0.1")
	u.mu.Lock()
	u.cfg.InactivityTimeout = 40 * time.Millisecond
	u.armInactivityLocked()
	u.mu.Unlock()
	requests := func() int {
		a.l.mu.Lock()
		defer a.l.mu.Unlock()
		return a.l.releaseRequests
	}
	// Traffic every 10 ms for 150 ms: no release.
	for range 15 {
		if err := u.SendData(1, []byte{0x45}); err != nil {
			t.Fatal(err)
		}
		<-a.l.data
		time.Sleep(10 * time.Millisecond)
	}
	if n := requests(); n != 0 {
		t.Fatalf("%d release requests with traffic", n)
	}
	quiet := time.Now()
	waitFor(t, "the inactivity release", func() bool { return requests() == 1 })
	if d := time.Since(quiet); d < 40*time.Millisecond {
		t.Fatalf("released %v after the last packet", d)
	}
	u.HandleRelease(time.Now())
	waitFor(t, "the release to end", func() bool { return !u.busyAsync() })
	if o.ok[ProcANRelease] != 1 || u.Stats().InactivityReleases != 1 || u.Connected() || !u.Registered() {
		t.Fatalf("observer %v stats %+v", o.ok, u.Stats())
	}
	// Idle: the timer stays off.
	time.Sleep(100 * time.Millisecond)
	if n := requests(); n != 1 {
		t.Fatalf("%d release requests", n)
	}
}

// TestSessionFromIdle: a 5GSM procedure of an idle UE first gets the
// connection back with a service request (signalling).
func TestSessionFromIdle(t *testing.T) {
	u, a := newUE(t, testK, 0)
	o := newObs()
	u.cfg.Observer = o
	a.register()
	a.establish(1, "10.60.0.1")
	u.HandleRelease(time.Now())
	rel := start(func(ctx context.Context) error { return u.ReleaseSession(ctx, 1) })
	sr, cause := a.recvServiceRequestCause()
	if sr.ServiceType != nas.ServiceSignalling || cause != ngap.RRCMOSignalling || sr.UplinkDataStatus != nil {
		t.Fatalf("service request %+v", sr)
	}
	a.acceptService(&nas.ServiceAccept{}, time.Now())
	_, sm := a.recvSM()
	if sm.MessageType() != nas.MsgPDUSessionReleaseRequest {
		t.Fatalf("want release request, got %s", sm.MessageType())
	}
	a.sendSM(&nas.PDUSessionReleaseCommand{SMHeader: nas.SMHeader{SessionID: 1, TransactionID: sm.PTI()}, Cause: nas.CauseRegularDeactivation})
	a.recvSM()
	if err := <-rel; err != nil {
		t.Fatal(err)
	}
	if o.ok[ProcServiceRequest] != 1 || o.ok[ProcPDURelease] != 1 {
		t.Fatalf("observer %v", o.ok)
	}
}
