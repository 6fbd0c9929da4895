package smf

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/nf/pcf"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/wire"
)

// recorded says where a field of the SMF's state structs goes in the
// records (to: record fields as "Type.Field"), or why it is not recorded.
type recorded struct {
	to  []string
	why string
}

func to(fields ...string) recorded { return recorded{to: fields} }
func not(why string) recorded      { return recorded{why: why} }

const plumbing = "plumbing of this process (executor, lock, channel, logger, back pointer)"

// stateFields lists, for every struct the SMF keeps its state in, each
// field's place in the records or why it has none. TestRecordCompleteness
// fails when a field is added to one of these structs and not here.
var stateFields = map[reflect.Type]map[string]recorded{
	reflect.TypeFor[smContext](): {
		"ref":          to("SessionRecord.Ref"),
		"statusURI":    to("SessionRecord.StatusURI"),
		"supi":         not("its UE's: UERecord.SUPI"),
		"psi":          to("SessionRecord.ID"),
		"ue":           not(plumbing),
		"dnn":          to("SessionRecord.DNN"),
		"slice":        to("SessionRecord.SNSSAI"),
		"cpSEID":       to("SessionRecord.CPSEID"),
		"establishing": to("SessionRecord.Establishing"),
		"state":        to("SessionRecord.State"),
		"upCnx":        to("SessionRecord.UpCnx"),
		"pti":          to("SessionRecord.PTI"),
		"ueIP":         to("SessionRecord.UEIP"),
		"typeCause":    to("SessionRecord.TypeCause"),
		"pco":          to("SessionRecord.PCO"),
		"policyID":     to("SessionRecord.PolicyID"),
		"qos":          to("SessionRecord.QoS"),
		"pending":      to("SessionRecord.PendingQoS"),
		"upf":          to("SessionRecord.UPF"),
		"upSEID":       to("SessionRecord.UPSEID"),
		"ulTunnel":     to("SessionRecord.ULTunnel"),
		"dlTunnel":     to("SessionRecord.DLTunnel"),
		"upLife":       to("SessionRecord.UPFLife"),
		"n4Lost":       to("SessionRecord.N4Lost"),
		"asked":        to("SessionRecord.Asked"),
		"n4Deletion":   to("SessionRecord.Deletion"),
		"ulMoved":      to("SessionRecord.ULMoved"),
		"ulMoving":     to("SessionRecord.ULMoving"),
		"held":         to("SessionRecord.Held"),
		"holdTimer":    to("SessionRecord.HoldUntil"),
		"holdWhy":      to("SessionRecord.HoldWhy"),
		"avoid":        to("SessionRecord.Avoid"),
		"waited":       to("SessionRecord.Waited"),
		"dl":           to("SessionRecord.DL"),
		"backoff":      to("SessionRecord.PagingBackoffUntil"),
		"ho":           to("SessionRecord.HO"),
		"hoTarget":     to("SessionRecord.HOTarget"),
		"fwd":          to("SessionRecord.Forwarding"),
		"fwdTimer":     to("SessionRecord.ForwardingUntil"),
		"n1Done":       to("SessionRecord.N1Done"),
		"n2Done":       to("SessionRecord.N2Done"),
		"timer":        to("SessionRecord.Timer", "RetransmissionRecord.Deadline", "RetransmissionRecord.Sends"),
		"cmd":          to("SessionRecord.Command"),
	},
	reflect.TypeFor[qos](): {
		"ambr":   to("QoSRecord.AMBR"),
		"fiveQI": to("QoSRecord.FiveQI"),
		"arp":    to("QoSRecord.ARP"),
	},
	reflect.TypeFor[avoidedUPF](): {
		"upf":   to("AvoidedUPF.UPF"),
		"epoch": to("AvoidedUPF.Epoch"),
	},
	reflect.TypeFor[ueState](): {
		"supi":     to("UERecord.SUPI"),
		"exec":     not(plumbing),
		"out":      not(plumbing + "; what is queued there are outputs of recorded steps"),
		"sessions": to("UERecord.Sessions"),
		"dead":     not("a state that left the table has no session and no record"),
		"seq":      to("UERecord.Seq"),
		"held":     not(plumbing + "; messages to the AMF of the running step, awaiting its record (output commit)"),
	},
	reflect.TypeFor[upfNode](): {
		"name":         to("UPFRecord.Name"),
		"n3":           not("configuration (smf.upfs[].n3)"),
		"up":           not(plumbing),
		"st":           not("whether this process is associated now: a restored SMF is not until Start takes the association up or sets one up"),
		"sessions":     not("derived: the sessions whose UPSEID is set at the UPF"),
		"features":     to("UPFRecord.Features"),
		"epoch":        to("UPFRecord.Epoch"),
		"life":         to("UPFRecord.Life"),
		"unassociated": not("a signal to the supervisor that the UPF's next refusal raises again"),
		"restoration":  not("configuration (smf.upfs[].restoration)"),
		"recovery":     to("UPFRecord.Recovery"),
		"mustRestore":  to("UPFRecord.MustRestore"),
		"associatedAt": not("paces this process's own association attempts"),
		"deletions":    to("UPFRecord.Deletions"),
		"quarantine":   to("UPFRecord.Quarantine"),
		"nodeID":       to("UPFRecord.NodeID"),
		"check":        not(plumbing),
		"recMu":        not(plumbing),
		"seq":          to("UPFRecord.Seq"),
		"restored":     not("the deletions a Restore took over until Start sends them; they are in Deletions meanwhile"),
	},
	reflect.TypeFor[n4Life](): {
		"ctx":    not("whether the life ended: one whose number is not its UPF's Life has"),
		"cancel": not(plumbing),
		"gen":    to("UPFRecord.Life", "SessionRecord.UPFLife", "DeletionRecord.Life", "DeletedSession.Life"),
	},
	reflect.TypeFor[n4Deletion](): {
		"upf":  not("the UPF whose record lists it, or its session's"),
		"seid": to("DeletionRecord.SEID", "DeletedSession.SEID"),
		"life": to("DeletionRecord.Life", "DeletedSession.Life"),
		"supi": to("DeletionRecord.SUPI"),
		"psi":  to("DeletionRecord.PSI"),
		"mu":   not(plumbing),
		"done": to("DeletedSession.Done"),
		"gone": to("DeletedSession.Gone"),
		"dnn":  to("DeletionRecord.DNN"),
		"ip":   to("DeletionRecord.UEIP"),
	},
	reflect.TypeFor[deletionQueue](): {
		"mu":      not(plumbing),
		"queue":   not("those of pending not sent yet"),
		"workers": not(plumbing),
		"pending": to("UPFRecord.Deletions"),
	},
	reflect.TypeFor[quarantine](): {
		"mu":    not(plumbing),
		"addrs": to("UPFRecord.Quarantine"),
	},
	reflect.TypeFor[quarantined](): {
		"dnn": to("HeldAddress.DNN"),
		"ip":  to("HeldAddress.IP"),
	},
	reflect.TypeFor[ipPool](): {
		"prefix": not("configuration (smf.dnns[].pool)"),
		"base":   not("configuration (smf.dnns[].pool)"),
		"size":   not("configuration (smf.dnns[].pool)"),
		"mu":     not(plumbing),
		"used":   not("derived: the addresses the records hold (sessions, quarantine, deletions)"),
		"next":   to("PoolRecord.Next"),
		"inUse":  not("derived: the addresses the records hold"),
	},
	reflect.TypeFor[SMF](): {
		"cfg":      to("Checkpoint.Pools", "AllocatorRecord.Pools", "PoolRecord.DNN", "Checkpoint.UPFs"),
		"deps":     not(plumbing),
		"log":      not(plumbing),
		"apiRoot":  not("configuration (smf.apiRoot)"),
		"group":    not(plumbing),
		"start":    to("Checkpoint.RecoveryTime"),
		"ues":      to("Checkpoint.UEs"),
		"contexts": not("index by SM context ref, rebuilt from the sessions"),
		"seids":    not("index by CP F-SEID, rebuilt from the sessions"),
		"nextRef":  to("Checkpoint.NextRef", "AllocatorRecord.NextRef"),
		"nextSEID": to("Checkpoint.NextSEID", "AllocatorRecord.NextSEID"),
		"allocMu":  not(plumbing),
		"procs":    not(plumbing),
		"waiting":  not("derived: the sessions whose record says Held"),
		"recorder": not(plumbing),
		"mu":       not(plumbing),
		"started":  not("the lifecycle of this process"),
		"restored": not("the lifecycle of this process"),
		"stats":    not("statistics of this process; Restore recounts its gauges (contexts, N4 sessions, policies, deletions)"),
	},
}

// recordTypes are the record types, by name.
var recordTypes = map[string]reflect.Type{}

func init() {
	for _, v := range []any{Checkpoint{}, PoolRecord{}, AllocatorRecord{}, UERecord{}, SessionRecord{}, QoSRecord{}, RetransmissionRecord{},
		AvoidedUPF{}, DeletedSession{}, UPFRecord{}, HeldAddress{}, DeletionRecord{}} {
		t := reflect.TypeOf(v)
		recordTypes[t.Name()] = t
	}
}

// TestRecordCompleteness: every field of the SMF's state structs is
// either mapped to record fields that exist or listed with a reason, and
// every record field is fed by some field: a field added to a context
// and not to its record fails here.
func TestRecordCompleteness(t *testing.T) {
	fed := make(map[string]bool)
	for st, fields := range stateFields {
		seen := make(map[string]bool)
		for f := range st.Fields() {
			seen[f.Name] = true
			r, ok := fields[f.Name]
			switch {
			case !ok:
				t.Errorf("%s.%s is neither recorded nor excluded: map it to its record field (record.go) or give the reason it is not recorded (stateFields)", st.Name(), f.Name)
			case len(r.to) == 0 && r.why == "":
				t.Errorf("%s.%s is excluded without a reason", st.Name(), f.Name)
			}
			for _, path := range r.to {
				typ, field, _ := strings.Cut(path, ".")
				rt, ok := recordTypes[typ]
				if !ok {
					t.Errorf("%s.%s maps to %s: no record type %s", st.Name(), f.Name, path, typ)
					continue
				}
				if _, ok := rt.FieldByName(field); !ok {
					t.Errorf("%s.%s maps to %s: %s has no field %s", st.Name(), f.Name, path, typ, field)
				}
				fed[path] = true
			}
		}
		for name := range fields {
			if !seen[name] {
				t.Errorf("stateFields lists %s.%s, which does not exist", st.Name(), name)
			}
		}
	}
	for name, rt := range recordTypes {
		for f := range rt.Fields() {
			if !fed[name+"."+f.Name] {
				t.Errorf("record field %s.%s is fed by no field of the SMF's state", name, f.Name)
			}
		}
	}
}

// ---- a rich SMF ----

// recordConfig: two UPFs (upf2 alone serves ims), restoration by CHOOSE
// at upf1 (restored sessions move their uplink), and timers long enough
// to stay running through a test.
func recordConfig() Config {
	cfg := testConfig()
	cfg.UPFs = []UPFConfig{
		{Name: "upf1", N4: "direct", N3: "10.100.3.2", DNNs: []string{"internet", "tiny", "enterprise"}, Restoration: RestorationChoose},
		{Name: "upf2", N4: "direct", N3: "10.100.3.3", DNNs: []string{"ims"}},
	}
	cfg.Timers.T3591, cfg.Timers.T3592 = time.Hour, time.Hour
	cfg.Timers.UPFWait = time.Hour
	cfg.Timers.Heartbeat = time.Hour // the supervisors act when told (check)
	cfg.Timers.PFCPTimeout = time.Minute
	cfg.Mobility.PagingBackoff = time.Hour
	cfg.Mobility.ForwardingHold = time.Hour
	return cfg
}

func supi(n int) string { return fmt.Sprintf("imsi-20893000000%04d", n) }

// The UEs of richSMF, by what they are doing.
var (
	ueMoving     = supi(1)  // uplink moved by upf1's restoration, the 5G-AN being told
	ueMoved      = supi(2)  // uplink moved, to tell once its activation is done
	ueLost       = supi(3)  // at upf2, whose restoration found it gone again
	ueHeld       = supi(4)  // establishment waiting for a UPF
	ueTwo        = supi(5)  // two sessions, IPv4v6 asked for, ePCO; psi 2 holds tiny's only address
	ueDiscarding = supi(6)  // idle, its paging failed: downlink dropped until the backoff ends
	ueModifying  = supi(7)  // modification answered by the UE, not yet by the 5G-AN; a change pending
	uePrepared   = supi(8)  // N2 handover prepared with indirect forwarding
	ueForwarding = supi(9)  // N2 handover completed, forwarding rules held
	ueReleasing  = supi(10) // network-requested release, 5G-AN answered, UE not yet
	ueWaitingN2  = supi(11) // Accept sent, setup response not yet
	ueQuarantine = supi(12) // released; its address held back (deletion refused)
	ueDeleting   = supi(13) // released; its deletion pending at upf1, holding its address
)

// rich is an SMF driven into many states at once.
type rich struct {
	*harness
	upf2 *fakeUPF
	cfg  Config
}

func (h *harness) update(t testing.TB, ref string, req *sbi.SMContextUpdate) *sbi.SMContextUpdated {
	t.Helper()
	up, err := h.smf.UpdateSMContext(context.Background(), ref, req)
	if err != nil {
		t.Fatalf("UpdateSMContext %s: %v", ref, err)
	}
	return up
}

func upCnx(st models.Smf_PDUSess_UpCnxState) *sbi.SMContextUpdate {
	return &sbi.SMContextUpdate{Data: &models.Smf_PDUSess_SmContextUpdateData{UpCnxState: st}}
}

// check wakes u's supervisor for a heartbeat now.
func (s *SMF) checkUPF(name string) {
	select {
	case s.upfNamed(name).check <- struct{}{}:
	default:
	}
}

// session reads one session's record.
func (h *harness) session(t testing.TB, supi string, psi uint8) SessionRecord {
	t.Helper()
	r, err := h.smf.RecordUE(context.Background(), supi)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range r.Sessions {
		if s.ID == psi {
			return s
		}
	}
	t.Fatalf("%s has no session %d", supi, psi)
	return SessionRecord{}
}

func newRich(t testing.TB) *rich {
	t.Helper()
	cfg := recordConfig()
	upf1, upf2 := newFakeUPF(), newFakeUPF()
	h := buildHarness(t, cfg, pcf.Config{}, map[string]*fakeUPF{"upf1": upf1, "upf2": upf2})
	if err := h.smf.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := &rich{harness: h, upf2: upf2, cfg: cfg}
	ctx := context.Background()
	s := h.smf

	// upf1 restarts under two sessions; CHOOSE gives them new uplinks.
	h.establish(t, ueMoving, 1, "internet")
	ref, _, _ := h.establish(t, ueMoved, 1, "internet")
	h.update(t, ref, upCnx(models.Smf_PDUSess_UpCnxState_DEACTIVATED))
	h.update(t, ref, upCnx(models.Smf_PDUSess_UpCnxState_ACTIVATING))
	upf1.restart()
	s.checkUPF("upf1")
	waitFor(t, "upf1's restoration", func() bool { return s.Stats().UplinksMoved == 2 && s.UPFStates()["upf1"] == "up" })
	if tr := h.amf.next(t); tr.supi != ueMoving || tr.n2Type != models.Amf_Comm_NgapIeType_PDU_RES_MOD_REQ {
		t.Fatalf("transfer %+v, want the moved uplink for %s", tr, ueMoving)
	}

	// upf2: one session established; then it stops answering
	// establishments, which holds one; then it restarts, and its
	// restoration finds it gone again.
	h.establish(t, ueLost, 1, "ims")
	upf2.mu.Lock()
	upf2.dropEstablishments = true
	upf2.mu.Unlock()
	if _, err := s.CreateSMContext(ctx, createReq(ueHeld, 1, "ims", sliceA, estRequest(t, 1, nas.PDUSessionTypeIPv4, 0, nil))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "an establishment waiting", func() bool { return s.Stats().Waiting == 1 })
	upf2.restart()
	s.checkUPF("upf2")
	waitFor(t, "upf2's interrupted restoration", func() bool { return s.Stats().SessionsKept == 1 })
	upf2.setDown(true)

	// Two sessions, the UE asking for IPv4v6 and DNS in the ePCO.
	pco := []byte{0x80, 0x00, 0x0D, 0x00}
	created, err := s.CreateSMContext(ctx, createReq(ueTwo, 1, "internet", sliceA, estRequest(t, 1, nas.PDUSessionTypeIPv4v6, nas.SSCMode1, pco)))
	if err != nil {
		t.Fatal(err)
	}
	h.amf.setRef(ueTwo, 1, created.Ref)
	h.amf.next(t)
	h.update(t, created.Ref, setupResponse(t, 1))
	h.establish(t, ueTwo, 2, "tiny")

	// Paging failed: downlink dropped for the backoff.
	ref, _, _ = h.establish(t, ueDiscarding, 1, "internet")
	h.update(t, ref, upCnx(models.Smf_PDUSess_UpCnxState_DEACTIVATED))
	s.HandleSessionReport(ctx, h.session(t, ueDiscarding, 1).CPSEID, &pfcp.SessionReportRequest{ReportType: pfcp.ReportDLDR})
	tr := h.amf.next(t)
	if err := s.N1N2TransferFailureNotify(ctx, tr.failureURI, &models.Amf_Comm_N1N2MsgTxfrFailureNotification{
		Cause: models.Amf_Comm_N1N2MessageTransferCause_UE_NOT_RESPONDING}); err != nil {
		t.Fatal(err)
	}

	// A PCF-initiated modification the UE completed, the 5G-AN not yet,
	// with a second change waiting for it.
	ref, _, _ = h.establish(t, ueModifying, 1, "internet")
	if err := h.pcf.UpdatePolicy(ctx, ueModifying, 1, pcf.Change{SessionAMBR: &models.Ambr{Uplink: "100 Mbps", Downlink: "200 Mbps"}, FiveQI: 8}); err != nil {
		t.Fatal(err)
	}
	h.amf.next(t)
	if err := h.pcf.UpdatePolicy(ctx, ueModifying, 1, pcf.Change{FiveQI: 7}); err != nil {
		t.Fatal(err)
	}
	h.update(t, ref, n1Update(t, &nas.PDUSessionModificationComplete{SMHeader: nas.SMHeader{SessionID: 1}}))

	// N2 handovers with indirect forwarding: one prepared, one done.
	fwd := targetFwd
	ref, _, _ = h.establish(t, uePrepared, 1, "internet")
	n2Prepare(t, h, ref, &fwd)
	ref, _, _ = h.establish(t, ueForwarding, 1, "internet")
	n2Prepare(t, h, ref, &fwd)
	h.update(t, ref, hoStateUpdate(models.Smf_PDUSess_HoState_COMPLETED))

	// A deletion upf1 refuses: the address is held back.
	upf1.mu.Lock()
	upf1.deleteCause = pfcp.CauseRequestRejected
	upf1.mu.Unlock()
	ref, _, _ = h.establish(t, ueQuarantine, 1, "internet")
	if err := s.ReleaseSMContext(ctx, ref, &sbi.SMContextRelease{}); err != nil {
		t.Fatal(err)
	}
	h.settle(t)
	upf1.mu.Lock()
	upf1.deleteCause = 0
	upf1.holdDeletes, upf1.gate = true, make(chan struct{})
	upf1.mu.Unlock()
	t.Cleanup(func() { r.openDeletions() })

	// A network-requested release the 5G-AN answered; its deletion, and
	// that of a context the AMF released, pending at upf1.
	ref, _, _ = h.establish(t, ueReleasing, 1, "internet")
	if err := s.Release(ctx, ueReleasing, 1); err != nil {
		t.Fatal(err)
	}
	h.amf.next(t)
	h.update(t, ref, releaseResponse(t))
	ref, _, _ = h.establish(t, ueDeleting, 1, "internet")
	if err := s.ReleaseSMContext(ctx, ref, &sbi.SMContextRelease{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "two deletions at upf1", func() bool { return upf1.holds() == 2 })

	// An Accept sent, the setup response not yet.
	created, err = s.CreateSMContext(ctx, createReq(ueWaitingN2, 1, "internet", sliceA, estRequest(t, 1, nas.PDUSessionTypeIPv4, 0, nil)))
	if err != nil {
		t.Fatal(err)
	}
	h.amf.setRef(ueWaitingN2, 1, created.Ref)
	h.amf.next(t)
	return r
}

// openDeletions lets upf1 answer deletions again.
func (r *rich) openDeletions() {
	r.upf.mu.Lock()
	defer r.upf.mu.Unlock()
	if r.upf.holdDeletes {
		r.upf.holdDeletes = false
		close(r.upf.gate)
	}
}

func encode(t testing.TB, v any) []byte {
	t.Helper()
	b, err := wire.Append(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// zeroEverywhere names the fields of the struct type rt that are zero in every
// value of vals.
func zeroEverywhere[T any](vals []T) []string {
	var zero []string
	rt := reflect.TypeFor[T]()
	for i := range rt.NumField() {
		if !slices.ContainsFunc(vals, func(v T) bool { return !reflect.ValueOf(v).Field(i).IsZero() }) {
			zero = append(zero, rt.Field(i).Name)
		}
	}
	return zero
}

func sessionsOf(cp *Checkpoint) []SessionRecord {
	var all []SessionRecord
	for _, u := range cp.UEs {
		all = append(all, u.Sessions...)
	}
	return all
}

// TestRecordsRoundTrip: the records of an SMF in many states at once
// (sessions establishing, waiting for a UPF, active, idle with paging
// failed, modifying with a change pending, releasing with T3592
// running, in N2 handover, moved by a UPF's restoration, lost with it;
// UPFs with a quarantine, pending deletions, a restoration waiting)
// encode with package wire and decode to equal records. Every field of
// the records is set somewhere in them, so that the round trip, and the
// restore of TestRestoreEquivalence, cover every field.
func TestRecordsRoundTrip(t *testing.T) {
	r := newRich(t)
	cp, err := r.smf.Records(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Asked is set between two steps only in a restored SMF whose UPF is
	// not up yet (otherwise inside a step, recordIntent):
	// TestTakeoverAsksTheSameUPF round-trips and restores it.
	if z := slices.DeleteFunc(zeroEverywhere(sessionsOf(cp)), func(f string) bool { return f == "Asked" }); len(z) != 0 {
		t.Errorf("session record fields zero in every session, so not covered: %v", z)
	}
	if z := zeroEverywhere(cp.UPFs); len(z) != 0 {
		t.Errorf("UPF record fields zero in every UPF, so not covered: %v", z)
	}
	if z := zeroEverywhere([]Checkpoint{*cp}); len(z) != 0 {
		t.Errorf("checkpoint fields zero: %v", z)
	}
	msg := encode(t, cp)
	var got Checkpoint
	if err := wire.Decode(msg, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&got, cp) {
		t.Errorf("checkpoint differs after a round trip:\n got %+v\nwant %+v", got, *cp)
	}
	for _, u := range cp.UEs {
		var ue UERecord
		if err := wire.Decode(encode(t, &u), &ue); err != nil || !reflect.DeepEqual(ue, u) {
			t.Errorf("%s: UE record differs after a round trip (%v):\n got %+v\nwant %+v", u.SUPI, err, ue, u)
		}
	}
	for _, u := range cp.UPFs {
		var upf UPFRecord
		if err := wire.Decode(encode(t, &u), &upf); err != nil || !reflect.DeepEqual(upf, u) {
			t.Errorf("%s: UPF record differs after a round trip (%v)", u.Name, err)
		}
	}
	// The record of one UE is the one in the checkpoint.
	one, err := r.smf.RecordUE(context.Background(), ueReleasing)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(cp.UEs, func(u UERecord) bool { return u.SUPI == ueReleasing })
	if !bytes.Equal(encode(t, one), encode(t, &cp.UEs[i])) {
		t.Errorf("RecordUE %+v, checkpoint %+v", one, cp.UEs[i])
	}
	t.Logf("%d UEs, %d sessions, %d UPFs: %d bytes", len(cp.UEs), len(sessionsOf(cp)), len(cp.UPFs), len(msg))
}

// restoreInto builds a new SMF on r's fakes and PCF (A closed: its UPFs,
// AMF and PCF outlive it), restores cp into it and returns it unstarted.
func (r *rich) restoreInto(t *testing.T, cp *Checkpoint) *SMF {
	t.Helper()
	r.smf.Close()
	b, err := New(r.cfg, Deps{AMF: r.amf, AMFStatus: r.amf, SDM: r.sdm, PCF: r.pcf,
		UPFs: map[string]pfcp.UserPlane{"upf1": r.upf, "upf2": r.upf2}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := b.Restore(cp); err != nil {
		t.Fatal(err)
	}
	r.pcf.SetNotifier(b)
	r.amf.smf = b
	r.smf = b
	return b
}

// TestRestoreEquivalence: the records of instance A restored into a new
// instance B give back byte for byte the same records; B then carries on
// with the restored sessions (procedures complete, N4 requests reach the
// UPF sessions A established, without a new association) and hands out
// no ref, F-SEID or address a restored object holds.
func TestRestoreEquivalence(t *testing.T) {
	r := newRich(t)
	ctx := context.Background()
	cp, err := r.smf.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := encode(t, cp)
	assocs := func() int {
		r.upf.mu.Lock()
		defer r.upf.mu.Unlock()
		return r.upf.assocs
	}
	assocsBefore := assocs()
	ipsBefore := r.smf.Stats().IPs

	b := r.restoreInto(t, cp)
	back, err := b.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := encode(t, back); !bytes.Equal(got, want) {
		t.Errorf("restored records differ from the checkpoint:\n got %+v\nwant %+v", back, cp)
	}
	st := b.Stats()
	if n := len(sessionsOf(cp)); st.Contexts != n || st.Waiting != 1 || st.N4Deleting != 2 || st.QuarantinedIPs != 1 {
		t.Errorf("restored stats %+v, want %d contexts, 1 waiting, 2 deletions, 1 address held back", st, n)
	}
	if !reflect.DeepEqual(st.IPs, ipsBefore) {
		t.Errorf("addresses allocated by DNN: %v after the restore, %v before (sessions, quarantine and deletions hold them)", st.IPs, ipsBefore)
	}

	// B takes upf1's association up (upf2 does not answer) and sends the
	// deletions again.
	r.openDeletions()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if st := b.UPFStates(); st["upf1"] != "up" || st["upf2"] != "down" {
		t.Errorf("UPFs %v after Start", st)
	}
	if n := assocs(); n != assocsBefore {
		t.Errorf("B set up %d associations with upf1, which would have deleted its sessions; want it to take the association up", n-assocsBefore)
	}
	r.settle(t)
	deleted := cp.UPFs[0].Deletions
	r.upf.mu.Lock()
	got := slices.Clone(r.upf.deletes)
	r.upf.mu.Unlock()
	for _, d := range deleted {
		if !slices.Contains(got, d.SEID) {
			t.Errorf("pending deletion of F-SEID %#x not sent by B (sent %#x)", d.SEID, got)
		}
	}

	// No address, ref or F-SEID of a restored object is handed out: tiny's
	// only address is held by ueTwo's second session.
	if _, err := b.CreateSMContext(ctx, createReq(supi(100), 1, "tiny", sliceA, estRequest(t, 1, nas.PDUSessionTypeIPv4, 0, nil))); err == nil {
		t.Error("B allocated tiny's only address, which a restored session holds")
	}
	held := make(map[netip.Addr]bool)
	refs := make(map[string]bool)
	seids := make(map[uint64]bool)
	for _, s := range sessionsOf(cp) {
		held[s.UEIP], refs[s.Ref], seids[s.CPSEID] = true, true, true
	}
	for _, u := range cp.UPFs {
		for _, q := range u.Quarantine {
			held[q.IP] = true
		}
	}
	for i := range 20 {
		ref, acc, _ := r.establish(t, supi(200+i), 1, "internet")
		s := r.session(t, supi(200+i), 1)
		if held[acc.PDUAddress.IPv4] || refs[ref] || seids[s.CPSEID] {
			t.Fatalf("new session got address %v, ref %s, F-SEID %d: one is a restored object's", acc.PDUAddress.IPv4, ref, s.CPSEID)
		}
	}

	// Procedures on restored sessions complete.
	relRef := r.session(t, ueReleasing, 1).Ref
	r.update(t, relRef, n1Update(t, &nas.PDUSessionReleaseComplete{SMHeader: nas.SMHeader{SessionID: 1}}))
	if n := r.amf.note(t); n.supi != ueReleasing {
		t.Errorf("status notification for %s, want %s", n.supi, ueReleasing)
	}
	if _, err := b.RecordUE(ctx, ueReleasing); err == nil {
		t.Errorf("%s still held after its release completed", ueReleasing)
	}
	two := r.session(t, ueTwo, 1)
	r.update(t, two.Ref, upCnx(models.Smf_PDUSess_UpCnxState_DEACTIVATED))
	if a := r.upf.lastMod(t).UpdateFARs[0].ApplyAction; a == nil || *a != pfcp.ActionBuffer|pfcp.ActionNotifyCP {
		t.Errorf("AN release of a restored session: DL FAR %v at upf1, want BUFF|NOCP", a)
	}
	mod := r.session(t, ueModifying, 1)
	r.update(t, mod.Ref, modifyResponse(t))
	if tr := r.amf.next(t); tr.supi != ueModifying {
		t.Errorf("transfer %+v, want the pending change's command for %s", tr, ueModifying)
	} else if cmd, ok := tr.n1.(*nas.PDUSessionModificationCommand); !ok || cmd.QoSFlowDescriptions[0].FiveQI != 7 {
		t.Errorf("pending change's command %+v", tr.n1)
	}
	if err := b.ReleaseSMContext(ctx, r.session(t, ueTwo, 2).Ref, &sbi.SMContextRelease{}); err != nil {
		t.Fatal(err)
	}
	r.settle(t)
	r.establish(t, supi(100), 1, "tiny") // the address is free again
}

// TestRestoreCountersPastRecords: counters recorded behind the contexts
// (a checkpoint whose counters were read before a context was created)
// still never hand out a restored ref or F-SEID; the restored SMF's PFCP
// Recovery Time Stamp is the recorded one, which the UPFs know.
func TestRestoreCountersPastRecords(t *testing.T) {
	r := newRich(t)
	ctx := context.Background()
	cp, err := r.smf.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cp.NextRef, cp.NextSEID = 0, 0
	cp.RecoveryTime = cp.RecoveryTime.Add(-time.Hour)
	b := r.restoreInto(t, cp)
	if !b.RecoveryTime().Equal(cp.RecoveryTime) {
		t.Errorf("restored Recovery Time Stamp %v, recorded %v", b.RecoveryTime(), cp.RecoveryTime)
	}
	r.openDeletions()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	refs := make(map[string]bool)
	seids := make(map[uint64]bool)
	for _, s := range sessionsOf(cp) {
		refs[s.Ref], seids[s.CPSEID] = true, true
	}
	ref, _, _ := r.establish(t, supi(300), 1, "internet")
	if s := r.session(t, supi(300), 1); refs[ref] || seids[s.CPSEID] {
		t.Errorf("new session got ref %s, F-SEID %d: a restored session's", ref, s.CPSEID)
	}
}

// TestRestoreRefuses: a checkpoint that names what B does not have or
// holds one thing twice is refused whole, and B can take a good one
// afterwards.
func TestRestoreRefuses(t *testing.T) {
	r := newRich(t)
	cp, err := r.smf.Records(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r.smf.Close()
	good := encode(t, cp)
	copyOf := func() *Checkpoint {
		var c Checkpoint
		if err := wire.Decode(good, &c); err != nil {
			t.Fatal(err)
		}
		return &c
	}
	b, err := New(r.cfg, Deps{AMF: r.amf, AMFStatus: r.amf, SDM: r.sdm, PCF: r.pcf,
		UPFs: map[string]pfcp.UserPlane{"upf1": r.upf, "upf2": r.upf2}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, c := range []struct {
		name    string
		corrupt func(*Checkpoint)
	}{
		{"nil", nil},
		{"address held twice", func(c *Checkpoint) { c.UEs[1].Sessions[0].UEIP = c.UEs[0].Sessions[0].UEIP }},
		{"quarantined address in use", func(c *Checkpoint) { c.UPFs[0].Quarantine[0].IP = c.UEs[0].Sessions[0].UEIP }},
		{"address outside the pool", func(c *Checkpoint) { c.UEs[0].Sessions[0].UEIP = netip.MustParseAddr("192.0.2.1") }},
		{"unknown DNN", func(c *Checkpoint) { c.UEs[0].Sessions[0].DNN = "nowhere" }},
		{"unknown UPF", func(c *Checkpoint) { c.UPFs[1].Name = "upf9" }},
		{"life of the future", func(c *Checkpoint) { c.UEs[0].Sessions[0].UPFLife = 99 }},
		{"state released", func(c *Checkpoint) { c.UEs[0].Sessions[0].State = uint8(stReleased) }},
		{"ref twice", func(c *Checkpoint) { c.UEs[1].Sessions[0].Ref = c.UEs[0].Sessions[0].Ref }},
		{"SUPI twice", func(c *Checkpoint) { c.UEs[1].SUPI = c.UEs[0].SUPI }},
		{"PDU session ID 0", func(c *Checkpoint) { c.UEs[0].Sessions[0].ID = 0 }},
		{"timer without command", func(c *Checkpoint) {
			for i, s := range c.UEs {
				if s.SUPI == ueReleasing {
					c.UEs[i].Sessions[0].Command = nil
				}
			}
		}},
	} {
		var bad *Checkpoint
		if c.corrupt != nil {
			bad = copyOf()
			c.corrupt(bad)
		}
		if err := b.Restore(bad); err == nil {
			t.Errorf("%s: restored", c.name)
		} else {
			t.Logf("%s: %v", c.name, err)
		}
	}
	if st := b.Stats(); st.Contexts != 0 || st.IPs["internet"] != 0 || st.QuarantinedIPs != 0 || b.ues.Len() != 0 {
		t.Fatalf("refused restores left state behind: %+v", st)
	}
	if err := b.Restore(copyOf()); err != nil {
		t.Fatalf("good checkpoint after refused ones: %v", err)
	}
	if err := b.Restore(copyOf()); err == nil {
		t.Error("restored twice")
	}
}

// TestRestoredTimerPastFiresAtOnce: a timer whose deadline passed while
// the records moved fires at once in B, on the UE's executor: T3592
// resends the release command and counts the send.
func TestRestoredTimerPastFiresAtOnce(t *testing.T) {
	r := newRich(t)
	ctx := context.Background()
	cp, err := r.smf.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(cp.UEs, func(u UERecord) bool { return u.SUPI == ueReleasing })
	rel := &cp.UEs[i].Sessions[0]
	rel.Timer.Deadline = time.Now().Add(-time.Minute).UTC()
	sends := rel.Timer.Sends
	r.restoreInto(t, cp)
	tr := r.amf.next(t)
	if _, ok := tr.n1.(*nas.PDUSessionReleaseCommand); !ok || tr.supi != ueReleasing {
		t.Fatalf("transfer %+v, want the release command resent to %s", tr, ueReleasing)
	}
	s := r.session(t, ueReleasing, 1)
	if s.Timer.Sends != sends+1 || !s.Timer.Deadline.After(time.Now().Add(time.Hour-time.Minute)) {
		t.Errorf("T3592 after the expiry: %+v, want %d sends and the next expiry in an hour", s.Timer, sends+1)
	}
}

// ---- deltas ----

// deltas is a Recorder that keeps what it is given.
type deltas struct {
	mu    sync.Mutex
	ues   map[string][]*UERecord
	upfs  map[string][]*UPFRecord
	alloc []*AllocatorRecord
}

func (d *deltas) RecordedAllocators(r *AllocatorRecord) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.alloc = append(d.alloc, r)
}

func (d *deltas) RecordedUE(r *UERecord) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ues[r.SUPI] = append(d.ues[r.SUPI], r)
}

func (d *deltas) RecordedUPF(r *UPFRecord) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.upfs[r.Name] = append(d.upfs[r.Name], r)
}

// TestDeltas: every step of a procedure hands the Recorder the UE's
// record with the next Seq, the last equal to the record taken
// afterwards; a UPF's changes (a deletion pending, then ended) likewise;
// the UE's last record after its release has no session.
func TestDeltas(t *testing.T) {
	d := &deltas{ues: make(map[string][]*UERecord), upfs: make(map[string][]*UPFRecord)}
	h := &harness{amf: newFakeAMF(t), sdm: &fakeSDM{}, upf: newFakeUPF()}
	p, err := pcf.New(pcf.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.pcf = p
	s, err := New(testConfig(), Deps{AMF: h.amf, AMFStatus: h.amf, SDM: h.sdm, PCF: p,
		UPFs: map[string]pfcp.UserPlane{"upf1": h.upf}, Recorder: d}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p.SetNotifier(s)
	h.smf, h.amf.smf = s, s
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ref, _, _ := h.establish(t, testSUPI, 1, "internet")
	h.update(t, ref, upCnx(models.Smf_PDUSess_UpCnxState_DEACTIVATED))
	h.update(t, ref, upCnx(models.Smf_PDUSess_UpCnxState_ACTIVATING))
	h.update(t, ref, setupResponse(t, 1))

	rec, err := s.RecordUE(ctx, testSUPI)
	if err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	got := slices.Clone(d.ues[testSUPI])
	d.mu.Unlock()
	if len(got) < 5 {
		t.Fatalf("%d records for 5 steps (create, establish N4, setup response, AN release, activation, setup response)", len(got))
	}
	for i, r := range got {
		if r.Seq != uint64(i+1) {
			t.Errorf("record %d has Seq %d, want %d", i, r.Seq, i+1)
		}
	}
	if last := got[len(got)-1]; !bytes.Equal(encode(t, last), encode(t, rec)) {
		t.Errorf("last record %+v, taken afterwards %+v", last, rec)
	}
	if up := got[len(got)-1].Sessions[0].UpCnx; up != models.Smf_PDUSess_UpCnxState_ACTIVATED {
		t.Errorf("last record's user plane %s", up)
	}

	if err := s.ReleaseSMContext(ctx, ref, &sbi.SMContextRelease{}); err != nil {
		t.Fatal(err)
	}
	h.settle(t)
	d.mu.Lock()
	gotUE := d.ues[testSUPI][len(d.ues[testSUPI])-1]
	upfs := slices.Clone(d.upfs["upf1"])
	d.mu.Unlock()
	if len(gotUE.Sessions) != 0 || gotUE.Seq != uint64(len(got)+1) {
		t.Errorf("record after the release %+v, want Seq %d without sessions", gotUE, len(got)+1)
	}
	cp, err := s.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cp.UEs) != 0 {
		t.Errorf("UEs after the release: %+v", cp.UEs)
	}
	pending := slices.IndexFunc(upfs, func(r *UPFRecord) bool { return len(r.Deletions) == 1 })
	if pending < 0 {
		t.Errorf("no UPF record showed the deletion pending: %+v", upfs)
	}
	for i := 1; i < len(upfs); i++ {
		if upfs[i].Seq != upfs[i-1].Seq+1 {
			t.Errorf("UPF record %d has Seq %d after %d", i, upfs[i].Seq, upfs[i-1].Seq)
		}
	}
	if last := upfs[len(upfs)-1]; len(last.Deletions) != 0 || !bytes.Equal(encode(t, last), encode(t, &cp.UPFs[0])) {
		t.Errorf("last UPF record %+v, taken afterwards %+v", last, cp.UPFs[0])
	}
}

// TestNoRecorderNoCost: without a Recorder the end of a step allocates
// nothing (BenchmarkEstablishRelease and BenchmarkIdleActive give the
// whole procedures' figures).
func TestNoRecorderNoCost(t *testing.T) {
	h := newHarness(t, testConfig(), pcf.Config{})
	h.establish(t, testSUPI, 1, "internet")
	allocs, err := callUE(context.Background(), h.smf, testSUPI, func(u *ueState) (float64, error) {
		return testing.AllocsPerRun(100, func() { h.smf.endStep(u) }), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if allocs != 0 {
		t.Errorf("endStep without a Recorder: %v allocations", allocs)
	}
}

// ---- fuzzing ----

// FuzzDecodeCheckpoint: decoding records never panics, whatever the
// bytes; what decodes is checked by Restore's check, which must not panic
// either (a corrupted record is refused, not trusted). Seeds: a
// checkpoint of the rich SMF and each of its records.
func FuzzDecodeCheckpoint(f *testing.F) {
	h := newRich(f)
	cp, err := h.smf.Records(context.Background())
	if err != nil {
		f.Fatal(err)
	}
	seed := func(v any) {
		b, err := wire.Append(nil, v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	seed(cp)
	for i := range cp.UEs {
		seed(&cp.UEs[i])
	}
	for i := range cp.UPFs {
		seed(&cp.UPFs[i])
	}
	// The rich SMF's goroutines would move the coverage the fuzzer
	// watches: the checks run on an SMF of the same configuration that
	// was never started.
	h.smf.Close()
	check, err := New(h.cfg, Deps{AMF: h.amf, AMFStatus: h.amf, SDM: h.sdm, PCF: h.pcf}, nil)
	if err != nil {
		f.Fatal(err)
	}
	defer check.Close()
	f.Fuzz(func(t *testing.T, b []byte) {
		var c Checkpoint
		if wire.Decode(b, &c) == nil {
			_ = check.checkCheckpoint(&c)
		}
		var u UERecord
		_ = wire.Decode(b, &u)
		var p UPFRecord
		_ = wire.Decode(b, &p)
	})
}
