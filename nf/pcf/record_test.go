package pcf

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/internal/recordtest"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/wire"
)

// policyFields maps every field of policy to its PolicyRecord fields.
// TestRecordCompleteness fails when a field is added to policy and not
// here.
var policyFields = map[string][]string{
	"id":        {"ID"},
	"supi":      {"SUPI"},
	"psi":       {"PDUSessionID"},
	"dnn":       {"DNN"},
	"slice":     {"SNSSAI"},
	"decision":  {"SessionAMBR", "FiveQI", "ARP"}, // what decision() builds it from; TestRestoredPCFGoesOn compares whole decisions
	"notifyURI": {"NotifyURI"},
}

// TestRecordCompleteness: every field of policy goes to fields of
// PolicyRecord, and every record field is fed: a field added to the
// association and not to its record fails here.
func TestRecordCompleteness(t *testing.T) {
	rt := reflect.TypeFor[PolicyRecord]()
	pt := reflect.TypeFor[policy]()
	fed := map[string]bool{}
	for f := range pt.Fields() {
		to, ok := policyFields[f.Name]
		if !ok {
			t.Errorf("policy.%s is not recorded: add it to PolicyRecord (record.go) and to policyFields", f.Name)
		}
		for _, name := range to {
			if _, ok := rt.FieldByName(name); !ok {
				t.Errorf("policy.%s maps to PolicyRecord.%s, which does not exist", f.Name, name)
			}
			fed[name] = true
		}
	}
	for name := range policyFields {
		if _, ok := pt.FieldByName(name); !ok {
			t.Errorf("policyFields lists policy.%s, which does not exist", name)
		}
	}
	for f := range rt.Fields() {
		if !fed[f.Name] {
			t.Errorf("PolicyRecord.%s is fed by no field of policy", f.Name)
		}
	}
}

// recording is a Recorder that keeps every delta, and the latest record
// of each association as a store would.
type recording struct {
	mu      sync.Mutex
	deltas  int
	deleted []string
	latest  map[string][]byte
}

func (r *recording) RecordedPolicy(p *PolicyRecord) {
	b, err := wire.Append(nil, p)
	if err != nil {
		panic(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deltas++
	if r.latest == nil {
		r.latest = map[string][]byte{}
	}
	r.latest[p.ID] = b
}

func (r *recording) DeletedPolicy(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deleted = append(r.deleted, id)
	delete(r.latest, id)
}

// stored decodes the latest records, by ID.
func (r *recording) stored(t testing.TB) []PolicyRecord {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []PolicyRecord
	for _, b := range r.latest {
		var p PolicyRecord
		if err := wire.Decode(b, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b PolicyRecord) int {
		x, _ := strconv.Atoi(a.ID)
		y, _ := strconv.Atoi(b.ID)
		return x - y
	})
	return out
}

// pcfScene is a PCF whose associations went through every change: created
// from the subscription, from local policy, changed by UpdatePolicy and by
// an SMF's update with a changed subscription, replaced for their session,
// deleted.
type pcfScene struct {
	p   *PCF
	rec *recording
	smf *recorder
	// ids of the live associations by name
	plain, local, updated, resubscribed, replacement string
}

func newPCFScene(t testing.TB) *pcfScene {
	t.Helper()
	cfg := Config{DNNs: []DNNPolicy{{DNN: "ims", FiveQI: 5, ARPPriority: 2, SessionAMBRUplink: "10 Mbps", SessionAMBRDownlink: "20 Mbps"}}}
	p, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &pcfScene{p: p, rec: &recording{}, smf: &recorder{}}
	p.SetRecorder(s.rec)
	p.SetNotifier(s.smf)
	ctx := context.Background()
	create := func(supi string, psi int32, dnn string) string {
		id, _, err := p.CreateSMPolicy(ctx, ctxData(supi, psi, dnn))
		if err != nil {
			t.Fatal(err)
		}
		if s.rec.latest[id] == nil {
			t.Fatalf("CreateSMPolicy answered before association %s was recorded", id)
		}
		return id
	}
	s.plain = create("imsi-1", 1, "internet")
	s.local = create("imsi-1", 2, "ims")
	s.updated = create("imsi-2", 1, "internet")
	s.resubscribed = create("imsi-3", 1, "internet")
	gone := create("imsi-4", 1, "internet")
	create("imsi-5", 1, "internet")
	s.replacement = create("imsi-5", 1, "internet") // replaces the one before
	if err := p.UpdatePolicy(ctx, "imsi-2", 1, Change{SessionAMBR: &models.Ambr{Uplink: "5 Mbps", Downlink: "6 Mbps"}, FiveQI: 7, ARPPriority: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpdateSMPolicy(ctx, s.resubscribed, &models.Pcf_SMPolCtrl_SmPolicyUpdateContextData{
		SubsSessAmbr: &models.Ambr{Uplink: "300 Mbps", Downlink: "400 Mbps"}}); err != nil {
		t.Fatal(err)
	}
	if err := p.DeleteSMPolicy(ctx, gone, nil); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *pcfScene) restored(t testing.TB, recs []PolicyRecord) *PCF {
	t.Helper()
	b, err := New(Config{DNNs: []DNNPolicy{{DNN: "ims", FiveQI: 5}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Restore(recs); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	return b
}

func encodePolicies(t testing.TB, recs []PolicyRecord) [][]byte { return recordtest.Encode(t, recs) }

// TestRecordsRoundTrip: the records of associations in every state encode
// and decode equal, every record field is set by some of them, the last
// delta of each association is its record (deleted and replaced ones have
// none), and a fresh PCF restored from them gives back byte for byte the
// same records.
func TestRecordsRoundTrip(t *testing.T) {
	s := newPCFScene(t)
	recs := s.p.Records()
	if len(recs) != 5 {
		t.Fatalf("%d records, want 5", len(recs))
	}
	for i, b := range encodePolicies(t, recs) {
		var got PolicyRecord
		if err := wire.Decode(b, &got); err != nil || !reflect.DeepEqual(got, recs[i]) {
			t.Fatalf("round trip of %s: %+v, %v", recs[i].ID, got, err)
		}
	}
	for f := range reflect.TypeFor[PolicyRecord]().Fields() {
		if !slices.ContainsFunc(recs, func(r PolicyRecord) bool { return !reflect.ValueOf(r).FieldByName(f.Name).IsZero() }) {
			t.Errorf("PolicyRecord.%s is zero in every record", f.Name)
		}
	}
	if got := s.rec.stored(t); !reflect.DeepEqual(got, recs) {
		t.Fatalf("the last deltas are not the records:\n%+v\n%+v", got, recs)
	}
	// 7 created, 2 changed; one deleted, one replaced.
	if s.rec.deltas != 9 || len(s.rec.deleted) != 2 {
		t.Errorf("%d deltas, %d deletions; want 9 and 2", s.rec.deltas, len(s.rec.deleted))
	}
	b := s.restored(t, recs)
	if !slices.EqualFunc(encodePolicies(t, b.Records()), encodePolicies(t, recs), bytes.Equal) {
		t.Fatalf("restored records differ:\n%+v\n%+v", b.Records(), recs)
	}
}

// TestRestoredPCFGoesOn: what a unit that took over needs of the PCF.
// Each restored association has the decision it had; the SMF's update and
// deletion of a session established before the takeover find its
// association (they were 404 before the PCF's records), the operator's
// policy change reaches the SMF, and new associations get IDs past every
// restored one.
func TestRestoredPCFGoesOn(t *testing.T) {
	s := newPCFScene(t)
	b := s.restored(t, s.rec.stored(t))
	rec := &recording{}
	b.SetRecorder(rec)
	smf := &recorder{}
	b.SetNotifier(smf)
	for id, pol := range s.p.policies {
		got := b.policies[id]
		if got == nil || !reflect.DeepEqual(got.decision, pol.decision) || !reflect.DeepEqual(*got, *pol) {
			t.Errorf("association %s restored as %+v, want %+v", id, got, pol)
		}
	}
	if !maps.Equal(b.bySession, s.p.bySession) {
		t.Errorf("sessions %v, want %v", b.bySession, s.p.bySession)
	}
	ctx := context.Background()
	if d, err := b.UpdateSMPolicy(ctx, s.updated, &models.Pcf_SMPolCtrl_SmPolicyUpdateContextData{}); err != nil || d.SessRules[SessRuleID].AuthDefQos.Var5qi != 7 {
		t.Fatalf("update of a restored association: %+v, %v", d, err)
	}
	if err := b.UpdatePolicy(ctx, "imsi-1", 2, Change{FiveQI: 6}); err != nil || len(smf.ids) != 1 || smf.ids[0] != s.local {
		t.Fatalf("policy change of a restored association: %v, notified %v", err, smf.ids)
	}
	if rec.latest[s.local] == nil {
		t.Error("the change at the restored PCF was not recorded")
	}
	if err := b.DeleteSMPolicy(ctx, s.plain, nil); err != nil {
		t.Fatalf("deletion of a restored association: %v", err)
	}
	if err := b.DeleteSMPolicy(ctx, s.plain, nil); !errors.Is(err, sbi.ErrContextNotFound) {
		t.Fatalf("second deletion: %v, want CONTEXT_NOT_FOUND", err)
	}
	id, _, err := b.CreateSMPolicy(ctx, ctxData("imsi-9", 1, "internet"))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := strconv.Atoi(id); n <= 7 {
		t.Fatalf("new association %s: want an ID past the restored ones (7)", id)
	}
}

// TestRestoreRefuses: a record no PCF could have written is refused with
// ErrBadRecord and nothing is restored; so is a restore into a PCF that
// holds associations.
func TestRestoreRefuses(t *testing.T) {
	s := newPCFScene(t)
	good := s.p.Records()
	for name, spoil := range map[string]func(*PolicyRecord){
		"ID not a number": func(r *PolicyRecord) { r.ID = "x1" },
		"ID 0":            func(r *PolicyRecord) { r.ID = "0" },
		"ID 01":           func(r *PolicyRecord) { r.ID = "01" },
		"no SUPI":         func(r *PolicyRecord) { r.SUPI = "" },
		"PDU session 16":  func(r *PolicyRecord) { r.PDUSessionID = 16 },
		"no DNN":          func(r *PolicyRecord) { r.DNN = "" },
		"no URI":          func(r *PolicyRecord) { r.NotifyURI = "" },
		"bad AMBR":        func(r *PolicyRecord) { r.SessionAMBR.Uplink = "fast" },
		"5QI 0":           func(r *PolicyRecord) { r.FiveQI = 0 },
		"ARP 16":          func(r *PolicyRecord) { r.ARP.PriorityLevel = 16 },
		"ID twice":        func(r *PolicyRecord) { r.ID = good[0].ID },
		"session twice":   func(r *PolicyRecord) { r.SUPI, r.PDUSessionID = good[0].SUPI, good[0].PDUSessionID },
	} {
		recs := slices.Clone(good)
		spoil(&recs[1])
		b, err := New(Config{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Restore(recs); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%s: Restore: %v, want ErrBadRecord", name, err)
		}
		if n := len(b.Records()); n != 0 {
			t.Errorf("%s: %d associations after a refused restore", name, n)
		}
	}
	if err := s.p.Restore(good); err == nil {
		t.Error("restore into a PCF with associations accepted")
	}
}

// TestCorruptedRecordRefused: a record with a byte changed does not
// decode, or decodes to one that Restore takes or refuses with
// ErrBadRecord, never anything else.
func TestCorruptedRecordRefused(t *testing.T) {
	s := newPCFScene(t)
	enc := encodePolicies(t, s.p.Records())[1]
	refused := recordtest.Corruptions(t, enc, func(r PolicyRecord) error {
		p, _ := New(Config{}, nil)
		return p.Restore([]PolicyRecord{r})
	}, ErrBadRecord)
	if refused < 11 {
		t.Errorf("only %d of %d corruptions refused", refused, len(enc))
	}
}

// FuzzPolicyRecord feeds bytes to the decoding of a policy record and
// what decodes to Restore: neither panics, a decoded record survives
// another round trip, and Restore takes it or refuses it with
// ErrBadRecord.
func FuzzPolicyRecord(f *testing.F) {
	s := newPCFScene(f)
	for _, b := range encodePolicies(f, s.p.Records()) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r PolicyRecord
		if err := wire.Decode(b, &r); err != nil {
			return
		}
		again, err := wire.Append(nil, &r)
		if err != nil {
			t.Fatal(err)
		}
		var r2 PolicyRecord
		if err := wire.Decode(again, &r2); err != nil || !reflect.DeepEqual(r, r2) {
			t.Fatalf("a decoded record does not survive a round trip: %v", err)
		}
		p, err := New(Config{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Restore([]PolicyRecord{r}); err != nil && !errors.Is(err, ErrBadRecord) {
			t.Fatalf("Restore: %v, want nil or ErrBadRecord", err)
		}
	})
}
