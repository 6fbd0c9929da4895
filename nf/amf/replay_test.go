package amf

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
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
	"github.com/tern5g/tern/sctp"
)

// ---- the test's N2 front end: stamps, logs and acknowledges ----

// n2Input is one logged input: an N2 message of association gnb with its
// stamp, or (gnb -1) the clock moved; each with the time it came at.
type n2Input struct {
	at    time.Time
	gnb   int
	stamp uint64
	msg   sctp.Message
}

// n2Output is a message the AMF sent on association gnb after the input
// stamped after had come (the input it answers: the test sends one input
// at a time).
type n2Output struct {
	gnb   int
	after uint64
	data  []byte
}

// front is the N2 front end of one AMF instance: every message a gNB sends
// gets the next stamp and goes to the log with the clock's time; acks
// count the stamps the AMF is done with.
type front struct {
	clock *serial.ManualClock
	mu    sync.Mutex
	stamp uint64
	sent  uint64 // messages sent to the AMF
	acks  uint64
	log   []n2Input
	out   []n2Output
	conns []*frontConn
}

type frontConn struct {
	*memConn
	f   *front
	gnb int
}

func (c *frontConn) Recv() (sctp.Message, error) {
	m, err := c.memConn.Recv()
	if err != nil {
		return m, err
	}
	if m.Stamp != 0 { // a replayed message carries its stamp
		c.f.mu.Lock()
		c.f.stamp = m.Stamp
		c.f.mu.Unlock()
		return m, nil
	}
	f := c.f
	f.mu.Lock()
	f.stamp++
	m.Stamp = f.stamp
	f.log = append(f.log, n2Input{at: f.clock.Now(), gnb: c.gnb, stamp: m.Stamp, msg: m})
	f.mu.Unlock()
	return m, nil
}

func (c *frontConn) Send(stream uint16, ppid uint32, data []byte) error {
	f := c.f
	f.mu.Lock()
	f.out = append(f.out, n2Output{gnb: c.gnb, after: f.stamp, data: bytes.Clone(data)})
	f.mu.Unlock()
	return c.memConn.Send(stream, ppid, data)
}

func (c *frontConn) Ack(uint64) {
	c.f.mu.Lock()
	c.f.acks++
	c.f.mu.Unlock()
}

// gnbEnd is a gNB's end of an association through f: it counts what it
// sends, for quiesce.
type gnbEnd struct {
	*memConn
	f *front
}

func (c gnbEnd) Send(stream uint16, ppid uint32, data []byte) error {
	c.f.mu.Lock()
	c.f.sent++
	c.f.mu.Unlock()
	return c.memConn.Send(stream, ppid, data)
}

// deliver hands a logged message to the AMF, as its gNB sent it.
func (f *front) deliver(in n2Input) {
	f.mu.Lock()
	f.sent++
	f.mu.Unlock()
	f.conns[in.gnb].in <- in.msg
}

// tick moves the clock, logged as an input.
func (f *front) tick(t time.Time) {
	f.mu.Lock()
	f.log = append(f.log, n2Input{at: t, gnb: -1})
	f.mu.Unlock()
	f.clock.Set(t)
}

// quiesce waits until a has taken every message sent to it, acknowledged
// each, and every UE executor is idle: the end of the steps of the inputs
// so far, so that the next input (or clock move) comes after them, as
// both runs must see it.
func (f *front) quiesce(t testing.TB, a *AMF) {
	t.Helper()
	deadline := time.Now().Add(recvTimeout)
	for n := 0; n < 2; {
		if time.Now().After(deadline) {
			t.Fatal("the AMF did not go quiet")
		}
		f.mu.Lock()
		busy := f.acks != f.sent
		f.mu.Unlock()
		for _, u := range a.allUEs() {
			busy = busy || !u.exec.Idle()
		}
		if busy {
			n = 0
			runtime.Gosched()
			continue
		}
		n++
	}
}

// attach connects association i of gNB id (TAC tac) to a through f and
// completes NG Setup; it returns the gNB and its NG Setup Request.
func (f *front) attach(t testing.TB, a *AMF, id, tac uint32) (*testGNB, []byte) {
	t.Helper()
	gEnd, amfEnd := memPipe(8)
	c := &frontConn{memConn: amfEnd, f: f, gnb: len(f.conns)}
	f.conns = append(f.conns, c)
	a.ServeConn(c)
	g := newTestGNB(t, gnbEnd{gEnd, f})
	req := ngSetupRequest(testPLMN, tac, testSlice)
	req.GlobalRANNodeID.GNBID = id
	b, err := ngap.Encode(req)
	if err != nil {
		t.Fatal(err)
	}
	g.sendRaw(0, b)
	expect[*ngap.NGSetupResponse](t, g.recv())
	return g, b
}

// ---- the peers' log: SBI answers (and the callbacks in them) are inputs ----

// peerCall is one answer of a peer to the AMF, and the calls into the AMF
// the peer made while answering (the fake SMF's N1N2MessageTransfer).
type peerCall struct {
	out       []any
	callbacks []func(amfPeer)
}

type amfPeer interface {
	sbi.Communication
	sbi.SMContextStatusNotifier
}

// peerLog stands between the AMF and its peers. Recording, it passes the
// calls on and keeps each answer by operation and key (the SUPI, SUCI or
// reference the call names), in order; playing, it answers from what it
// kept, making the recorded callbacks into the AMF it serves. A UE's calls
// come from its executor one at a time, so a key's order is the UE's.
type peerLog struct {
	hn  *fakeHN
	smf *fakeSMF

	mu        sync.Mutex
	recording bool
	play      bool
	amf       amfPeer // playing: the AMF the callbacks go to
	calls     map[string][]*peerCall
	inFlight  map[string]*peerCall // recording: by SUPI, the SMF call a callback belongs to
	refSUPI   map[string]string
	missing   []string // playing: calls the log had no answer for
}

func newPeerLog(hn *fakeHN, smf *fakeSMF) *peerLog {
	return &peerLog{hn: hn, smf: smf, calls: map[string][]*peerCall{}, inFlight: map[string]*peerCall{},
		refSUPI: map[string]string{}}
}

func (p *peerLog) deps() Deps {
	return Deps{AUSF: p, SDM: p, UECM: p, NSSF: p, SMF: p}
}

// do answers the call named key: from the log when playing, else by call
// (kept when recording). supi names the UE whose SMF callbacks it may make.
func (p *peerLog) do(key, supi string, call func() []any) []any {
	p.mu.Lock()
	if p.play {
		q := p.calls[key]
		if len(q) == 0 {
			// The replay asks what the first run did not: it went
			// elsewhere, which the records show. Every result is the
			// error (and zero where not an error).
			p.missing = append(p.missing, key)
			p.mu.Unlock()
			err := fmt.Errorf("replay: no recorded answer left for %s", key)
			return []any{err, err, err}
		}
		c := q[0]
		p.calls[key] = q[1:]
		a := p.amf
		p.mu.Unlock()
		for _, cb := range c.callbacks {
			cb(a)
		}
		return c.out
	}
	rec := p.recording
	c := &peerCall{}
	if rec && supi != "" {
		p.inFlight[supi] = c
	}
	p.mu.Unlock()
	out := call()
	if rec {
		p.mu.Lock()
		c.out = out
		p.calls[key] = append(p.calls[key], c)
		delete(p.inFlight, supi)
		p.mu.Unlock()
	}
	return out
}

func as[T any](v any) T {
	t, _ := v.(T)
	return t
}

func (p *peerLog) Authenticate(ctx context.Context, req *models.Ausf_UEAU_AuthenticationInfo) (string, *models.Ausf_UEAU_UEAuthenticationCtx, error) {
	o := p.do("auth "+req.SupiOrSuci, "", func() []any {
		id, r, err := p.hn.Authenticate(ctx, req)
		return []any{id, r, err}
	})
	return as[string](o[0]), as[*models.Ausf_UEAU_UEAuthenticationCtx](o[1]), as[error](o[2])
}

func (p *peerLog) Confirm5gAka(ctx context.Context, id string, req *models.Ausf_UEAU_ConfirmationData) (*models.Ausf_UEAU_ConfirmationDataResponse, error) {
	o := p.do("confirm "+id, "", func() []any { r, err := p.hn.Confirm5gAka(ctx, id, req); return []any{r, err} })
	return as[*models.Ausf_UEAU_ConfirmationDataResponse](o[0]), as[error](o[1])
}

func (p *peerLog) GetAmData(ctx context.Context, supi string, plmn identity.PLMN) (*models.Udm_SDM_AccessAndMobilitySubscriptionData, error) {
	o := p.do("am "+supi, "", func() []any { r, err := p.hn.GetAmData(ctx, supi, plmn); return []any{r, err} })
	return as[*models.Udm_SDM_AccessAndMobilitySubscriptionData](o[0]), as[error](o[1])
}

func (p *peerLog) GetNSSAI(ctx context.Context, supi string, plmn identity.PLMN) (*models.Udm_SDM_Nssai, error) {
	o := p.do("nssai "+supi, "", func() []any { r, err := p.hn.GetNSSAI(ctx, supi, plmn); return []any{r, err} })
	return as[*models.Udm_SDM_Nssai](o[0]), as[error](o[1])
}

func (p *peerLog) GetSmData(ctx context.Context, supi string, q sbi.SmDataQuery) ([]models.Udm_SDM_SessionManagementSubscriptionData, error) {
	o := p.do("sm "+supi, "", func() []any { r, err := p.hn.GetSmData(ctx, supi, q); return []any{r, err} })
	return as[[]models.Udm_SDM_SessionManagementSubscriptionData](o[0]), as[error](o[1])
}

func (p *peerLog) GetSmfSelectData(ctx context.Context, supi string, plmn identity.PLMN) (*models.Udm_SDM_SmfSelectionSubscriptionData, error) {
	o := p.do("smfsel "+supi, "", func() []any { r, err := p.hn.GetSmfSelectData(ctx, supi, plmn); return []any{r, err} })
	return as[*models.Udm_SDM_SmfSelectionSubscriptionData](o[0]), as[error](o[1])
}

func (p *peerLog) RegisterAMF3GPPAccess(ctx context.Context, supi string, reg *models.Udm_UECM_Amf3GppAccessRegistration) (bool, error) {
	o := p.do("uecm "+supi, "", func() []any { r, err := p.hn.RegisterAMF3GPPAccess(ctx, supi, reg); return []any{r, err} })
	return as[bool](o[0]), as[error](o[1])
}

func (p *peerLog) UpdateAMF3GPPAccess(ctx context.Context, supi string, mod *models.Udm_UECM_Amf3GppAccessRegistrationModification) error {
	o := p.do("uecmupd "+supi, "", func() []any { return []any{p.hn.UpdateAMF3GPPAccess(ctx, supi, mod)} })
	return as[error](o[0])
}

func (p *peerLog) GetAMF3GPPAccess(ctx context.Context, supi string) (*models.Udm_UECM_Amf3GppAccessRegistration, error) {
	o := p.do("uecmget "+supi, "", func() []any { r, err := p.hn.GetAMF3GPPAccess(ctx, supi); return []any{r, err} })
	return as[*models.Udm_UECM_Amf3GppAccessRegistration](o[0]), as[error](o[1])
}

func (p *peerLog) SelectForRegistration(ctx context.Context, supi string, requested []identity.SNSSAI, subscribed []sbi.SubscribedSNSSAI, tai identity.TAI) (*models.Nssf_NSSel_AuthorizedNetworkSliceInfo, error) {
	o := p.do("nssf "+supi, "", func() []any {
		r, err := p.hn.SelectForRegistration(ctx, supi, requested, subscribed, tai)
		return []any{r, err}
	})
	return as[*models.Nssf_NSSel_AuthorizedNetworkSliceInfo](o[0]), as[error](o[1])
}

func (p *peerLog) CreateSMContext(ctx context.Context, req *sbi.SMContextCreate) (*sbi.SMContextCreated, error) {
	supi := req.Data.Supi
	o := p.do("create "+supi, supi, func() []any {
		r, err := p.smf.CreateSMContext(ctx, req)
		if r != nil {
			p.mu.Lock()
			p.refSUPI[r.Ref] = supi
			p.mu.Unlock()
		}
		return []any{r, err}
	})
	return as[*sbi.SMContextCreated](o[0]), as[error](o[1])
}

func (p *peerLog) supiOf(ref string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refSUPI[ref]
}

func (p *peerLog) UpdateSMContext(ctx context.Context, ref string, req *sbi.SMContextUpdate) (*sbi.SMContextUpdated, error) {
	o := p.do("update "+ref, p.supiOf(ref), func() []any { r, err := p.smf.UpdateSMContext(ctx, ref, req); return []any{r, err} })
	return as[*sbi.SMContextUpdated](o[0]), as[error](o[1])
}

func (p *peerLog) ReleaseSMContext(ctx context.Context, ref string, req *sbi.SMContextRelease) error {
	o := p.do("release "+ref, p.supiOf(ref), func() []any { return []any{p.smf.ReleaseSMContext(ctx, ref, req)} })
	return as[error](o[0])
}

// callbackRec is the AMF as the fake SMF calls it: recording, each call
// joins the SMF call in flight for its UE, to be made again on replay.
type callbackRec struct {
	p   *peerLog
	amf amfPeer
}

func (r callbackRec) note(supi string, cb func(amfPeer)) {
	r.p.mu.Lock()
	if c := r.p.inFlight[supi]; c != nil {
		c.callbacks = append(c.callbacks, cb)
	}
	r.p.mu.Unlock()
}

func (r callbackRec) N1N2MessageTransfer(ctx context.Context, supi string, req *sbi.N1N2Message) (*models.Amf_Comm_N1N2MessageTransferRspData, error) {
	r.note(supi, func(a amfPeer) { a.N1N2MessageTransfer(context.Background(), supi, req) })
	return r.amf.N1N2MessageTransfer(ctx, supi, req)
}

func (r callbackRec) SMContextStatusNotify(ctx context.Context, uri string, n *models.Smf_PDUSess_SmContextStatusNotification) error {
	for supi := range r.p.inFlight {
		if strings.Contains(uri, supi) {
			r.note(supi, func(a amfPeer) { a.SMContextStatusNotify(context.Background(), uri, n) })
		}
	}
	return r.amf.SMContextStatusNotify(ctx, uri, n)
}

// ---- the scenario ----

// replayUE is a test UE and where the test believes it is.
type replayUE struct {
	*testUE
	registered, connected bool
	sessions              []uint8
	gnb                   int // index of its gNB while connected
}

// replayWorld is one AMF on a manual clock with its front end, peers and
// gNBs, and the UEs the scenario drives.
type replayWorld struct {
	t     testing.TB
	a     *AMF
	f     *front
	peers *peerLog
	sink  *recordingSink
	gnbs  []*testGNB
	setup [][]byte // NG Setup Request of each gNB
	ues   []*replayUE
	rng   *rand.Rand
	procs map[string]int
}

var replayT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func replayConfig(c *Config) {
	twoTAConfig(c)
	// Idle UEs lose reachability, then their registration, when the
	// scenario lets the clock jump (TS 24.501 §5.3.7).
	c.Timers.MobileReachable = 3 * time.Second
	c.Timers.ImplicitDeregistration = 2 * time.Second
}

func newReplayWorld(t testing.TB, nUEs int) *replayWorld {
	clock := serial.NewManualClock(replayT0)
	hn := newFakeHN()
	smf := newFakeSMF()
	peers := newPeerLog(hn, smf)
	deps := peers.deps()
	deps.Clock = clock
	cfg := testConfig()
	replayConfig(&cfg)
	a, err := New(cfg, deps, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	smf.amf = callbackRec{peers, a}
	w := &replayWorld{t: t, a: a, f: &front{clock: clock}, peers: peers, sink: newRecordingSink(t),
		rng: rand.New(rand.NewPCG(36, 1)), procs: map[string]int{}}
	a.SetRecordSink(w.sink)
	for i, tac := range []uint32{1, 2} {
		g, b := w.f.attach(t, a, uint32(i+1), tac)
		w.gnbs, w.setup = append(w.gnbs, g), append(w.setup, b)
	}
	for i := range nUEs {
		u := newTestUE(t, w.gnbs[i%2], hn, fmt.Sprintf("%010d", 7000+i))
		if i%2 == 1 {
			u.loc = &loc2
		}
		w.ues = append(w.ues, &replayUE{testUE: u, gnb: i % 2})
	}
	return w
}

// step runs one procedure of a UE the scenario picks (or moves the
// clock), and waits for the AMF to go quiet.
func (w *replayWorld) step() {
	t := w.t
	now := w.f.clock.Now().Add(time.Millisecond)
	if w.rng.IntN(400) == 0 {
		// A long pause: idle UEs' mobile reachable and implicit
		// deregistration timers run out.
		now = now.Add(time.Duration(4+w.rng.IntN(4)) * time.Second)
		w.procs["clock jump"]++
	}
	w.f.tick(now)
	w.f.quiesce(t, w.a)
	u := w.ues[w.rng.IntN(len(w.ues))]
	w.sync(u)
	switch {
	case !u.registered:
		u.register()
		u.registered, u.connected = true, true
		w.procs["registration"]++
	case !u.connected:
		u.serviceRequest(nas.ServiceSignalling, nil, nil)
		ics := expect[*ngap.InitialContextSetupRequest](t, u.recvNGAP())
		expect[*nas.ServiceAccept](t, u.openNAS(ics.NASPDU))
		u.g.send(1, &ngap.InitialContextSetupResponse{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID})
		u.connected = true
		w.procs["service request"]++
	default:
		switch r := w.rng.IntN(10); {
		case r < 3 && len(u.sessions) < 2:
			id := uint8(len(u.sessions) + 1)
			u.establish(id, "internet")
			u.sessions = append(u.sessions, id)
			w.procs["pdu session"]++
		case r < 5 && slices.Contains(u.sessions, 1):
			w.handover(u)
			w.procs["handover"]++
		case r < 9:
			u.g.send(1, &ngap.UEContextReleaseRequest{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID,
				Cause: ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkUserInactivity}})
			u.releaseComplete(expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP()))
			u.connected = false
			w.procs["idle"]++
		default:
			u.sendUL(&nas.DeregistrationRequestUEOriginating{AccessType: nas.Access3GPP,
				NgKSI: nas.NgKSI{KSI: u.sec.NgKSI()}, MobileIdentity: nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *u.guti}})
			expect[*nas.DeregistrationAcceptUEOriginating](t, u.recvNAS())
			u.releaseComplete(expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP()))
			u.registered, u.connected, u.sessions = false, false, nil
			w.procs["deregistration"]++
		}
	}
	w.f.quiesce(t, w.a)
}

// sync takes in what the AMF did to u on its own: an implicit
// deregistration after a clock jump.
func (w *replayWorld) sync(u *replayUE) {
	if !u.registered || u.connected {
		return
	}
	if info, err := w.a.UE(context.Background(), u.supi); err != nil || info.RM != rmRegistered.String() {
		u.registered, u.sessions = false, nil
		w.procs["implicit deregistration"]++
	}
}

// handover moves u (session 1 active) to the other gNB by N2 handover
// (TS 23.502 §4.9.1.3), then registers it in the target's TA.
func (w *replayWorld) handover(u *replayUE) {
	t := w.t
	src, dst := u.gnb, 1-u.gnb
	gs, gt := w.gnbs[src], w.gnbs[dst]
	tai, loc := testTAI, ngap.UserLocationNR{NRCGI: ngap.NRCGI{PLMN: testPLMN, CellID: 0x10}, TAI: testTAI}
	if dst == 1 {
		tai, loc = testTAI2, loc2
	}
	gs.send(1, &ngap.HandoverRequired{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID, HandoverType: ngap.HandoverIntra5GS,
		Cause:                              ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkHandoverDesirableForRadioReason},
		TargetID:                           ngap.TargetRANNodeID{GlobalGNBID: gnbID(uint32(dst + 1)), SelectedTAI: tai},
		Sessions:                           []ngap.PDUSessionResourceItem{{ID: 1, Transfer: []byte("ho-required-transfer")}},
		SourceToTargetTransparentContainer: []byte("s2t")})
	req := expect[*ngap.HandoverRequest](t, gt.recv())
	ranID := gt.nextRAN
	gt.nextRAN++
	gt.send(1, &ngap.HandoverRequestAcknowledge{AMFUENGAPID: req.AMFUENGAPID, RANUENGAPID: ranID,
		Admitted:                           []ngap.PDUSessionResourceItem{{ID: 1, Transfer: []byte("ho-ack-transfer")}},
		TargetToSourceTransparentContainer: []byte("t2s")})
	expect[*ngap.HandoverCommand](t, gs.recv())
	gt.send(1, &ngap.HandoverNotify{AMFUENGAPID: req.AMFUENGAPID, RANUENGAPID: ranID, UserLocation: loc})
	rel := expect[*ngap.UEContextReleaseCommand](t, gs.recv())
	gs.send(1, &ngap.UEContextReleaseComplete{AMFUENGAPID: rel.AMFUENGAPID, RANUENGAPID: rel.RANUENGAPID})
	// The next message comes on the other association, whose reader could
	// hand it to the UE first: one input at a time (replay.go).
	w.f.quiesce(t, w.a)
	u.g, u.amfID, u.ranID, u.loc, u.gnb = gt, req.AMFUENGAPID, ranID, &loc, dst
	// Mobility registration update in the target's TA.
	u.sendUL(u.registrationRequest(nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *u.guti}, nas.RegistrationMobilityUpdating))
	acc := expect[*nas.RegistrationAccept](t, u.recvNAS())
	u.guti = acc.GUTI
	u.sendUL(&nas.RegistrationComplete{})
}

// counts is how many records of each context the sink has got.
func (s *recordingSink) counts() map[uint64]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := map[uint64]int{}
	for id, l := range s.got {
		n[id] = len(l)
	}
	return n
}

// after is the encoding of every record the sink got after it had got
// counts (nil: all), by context ID, each context's deltas in order.
func (s *recordingSink) after(counts map[uint64]int) map[uint64][][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[uint64][][]byte{}
	for id, l := range s.got {
		if len(l) > counts[id] {
			out[id] = l[counts[id]:]
		}
	}
	return out
}

// TestReplayReproducesRecords is issue 36 §1's determinism test: an AMF
// runs a long mix of procedures (registrations, PDU sessions, N2
// handovers with mobility registration updates, idle and service
// requests, deregistrations, and the mobile reachable and implicit
// deregistration timers running out) on a manual clock, every N2 message
// and SBI answer logged with its time; from a checkpoint taken part-way, a
// fresh AMF replays the log, and every UE record delta after the
// checkpoint is byte for byte the first run's. The outputs of the inputs
// marked delivered are not sent again; those of the inputs after are, the
// same bytes.
func TestReplayReproducesRecords(t *testing.T) {
	procs, nUEs := 10000, 300
	if testing.Short() {
		procs, nUEs = 1500, 60
	}
	w := newReplayWorld(t, nUEs)
	for range procs / 5 {
		w.step()
	}
	// The last IDs handed out (context ID, AMF UE NGAP ID) go with a UE
	// that leaves before the checkpoint: the counters are ahead of every
	// ID its records hold.
	u := w.ues[slices.IndexFunc(w.ues, func(u *replayUE) bool { return !u.registered })]
	u.register()
	u.sendUL(&nas.DeregistrationRequestUEOriginating{AccessType: nas.Access3GPP,
		NgKSI: nas.NgKSI{KSI: u.sec.NgKSI()}, MobileIdentity: nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *u.guti}})
	expect[*nas.DeregistrationAcceptUEOriginating](t, u.recvNAS())
	u.releaseComplete(expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP()))
	w.f.quiesce(t, w.a)
	ctx := context.Background()
	cp, err := w.a.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The checkpoint travels encoded, as it would to the engine.
	b, err := wire.Append(nil, cp)
	if err != nil {
		t.Fatal(err)
	}
	cpTime := w.f.clock.Now()
	before := w.sink.counts()
	w.f.mu.Lock()
	first := len(w.f.log)
	firstOut := len(w.f.out)
	w.f.mu.Unlock()
	w.peers.mu.Lock()
	w.peers.recording, w.peers.calls = true, map[string][]*peerCall{}
	w.peers.mu.Unlock()
	for range procs - procs/5 {
		w.step()
	}
	st := w.a.Stats()
	t.Logf("procedures: %v; AMF: %d registrations, %d implicit deregistrations, %d handovers",
		w.procs, st.Registrations, st.ImplicitDeregistrations, st.HandoversCompleted)
	if st.ImplicitDeregistrations == 0 {
		t.Error("no timer ran out: the scenario does not exercise timer expiries")
	}
	log := w.f.log[first:]
	outs := w.f.out[firstOut:]
	delivered := log[len(log)*3/4].stamp // outputs up to here left before the "failure"

	// The replica: restored from the checkpoint, replaying the log.
	var cp2 Checkpoint
	if err := wire.Decode(b, &cp2); err != nil {
		t.Fatal(err)
	}
	clock := serial.NewManualClock(cpTime)
	w.peers.mu.Lock()
	w.peers.play = true
	w.peers.mu.Unlock()
	deps := w.peers.deps()
	deps.Clock = clock
	cfg := testConfig()
	replayConfig(&cfg)
	r, err := New(cfg, deps, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w.peers.amf = r
	sink := newRecordingSink(t)
	r.SetRecordSink(sink)
	if err := r.RestoreCheckpoint(&cp2); err != nil {
		t.Fatal(err)
	}
	r.SetDelivered(delivered)
	rf := &front{clock: clock}
	for i, req := range w.setup {
		gEnd, amfEnd := memPipe(8)
		c := &frontConn{memConn: amfEnd, f: rf, gnb: i}
		rf.conns = append(rf.conns, c)
		g := newTestGNB(t, gEnd)
		go func() {
			for range g.in { // what the replica sends: rf.out has it
			}
		}()
		if err := r.ResumeConn(c, req); err != nil {
			t.Fatal(err)
		}
	}
	want := w.sink.after(before)
	checked := map[uint64]int{}
	for i, in := range log {
		clock.Set(in.at)
		if in.gnb >= 0 {
			rf.deliver(in)
		}
		rf.quiesce(t, r)
		// Each delta as it comes: the first that differs names the input.
		for id, l := range sink.after(nil) {
			for k := checked[id]; k < len(l); k++ {
				if k >= len(want[id]) || !bytes.Equal(l[k], want[id][k]) {
					var x, y UERecord
					if k < len(want[id]) {
						wire.Decode(want[id][k], &x)
					}
					wire.Decode(l[k], &y)
					t.Fatalf("input %d of %d (stamp %d, at %v): UE context %d, delta %d differs:\nfirst run %+v\nreplay    %+v",
						i, len(log), in.stamp, in.at, id, k, x, y)
				}
			}
			checked[id] = len(l)
		}
	}

	if len(w.peers.missing) > 0 {
		t.Errorf("the replay made SBI calls the first run did not: %v", w.peers.missing[:min(5, len(w.peers.missing))])
	}
	got := sink.after(nil)
	if len(want) == 0 {
		t.Fatal("no record changed after the checkpoint")
	}
	deltas, diff := 0, 0
	for id, l := range want {
		deltas += len(l)
		g := got[id]
		if len(g) != len(l) {
			diff++
			if diff <= 3 {
				t.Errorf("UE context %d: %d deltas after the checkpoint in the replay, %d in the first run", id, len(g), len(l))
			}
			continue
		}
		for i := range l {
			if !bytes.Equal(g[i], l[i]) {
				diff++
				if diff <= 3 {
					var x, y UERecord
					wire.Decode(l[i], &x)
					wire.Decode(g[i], &y)
					t.Errorf("UE context %d, delta %d differs:\nfirst run %+v\nreplay    %+v", id, i, x, y)
				}
				break
			}
		}
	}
	for id := range got {
		if want[id] == nil {
			t.Errorf("UE context %d: deltas in the replay only", id)
		}
	}
	if diff > 0 {
		t.Fatalf("%d of %d UE contexts replayed into other records", diff, len(want))
	}
	t.Logf("%d inputs replayed, %d deltas of %d UE contexts identical", len(log), deltas, len(want))

	// Answers already sent are not sent twice; the rest are, identical.
	var wantOut [][]byte
	for _, o := range outs {
		if o.after > delivered {
			wantOut = append(wantOut, o.data)
		}
	}
	var gotOut [][]byte
	for _, o := range rf.out {
		gotOut = append(gotOut, o.data)
	}
	if n := r.stats.replaySuppressed.Load(); n == 0 || len(gotOut) == 0 {
		t.Fatalf("replay suppressed %d messages and sent %d: the log's split into delivered and not is not exercised", n, len(gotOut))
	}
	if !slices.EqualFunc(gotOut, wantOut, bytes.Equal) {
		t.Fatalf("replay sent %d NGAP messages, want the %d the first run sent after stamp %d (same bytes)", len(gotOut), len(wantOut), delivered)
	}
	t.Logf("%d NGAP messages of delivered inputs suppressed, %d sent", r.stats.replaySuppressed.Load(), len(gotOut))
}
