package ausf

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/internal/recordtest"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/wire"
	"github.com/tern5g/tern/store"
)

// contextFields maps every field of authContext to its ContextRecord
// field, or gives the reason it has none. TestRecordCompleteness fails
// when a field is added to authContext and not here.
var contextFields = map[string]string{
	"supi":     "SUPI",
	"snn":      "ServingNetworkName",
	"xresStar": "XRESStar",
	"kseaf":    "KSEAF",
	"expires":  "Expires",
	"result":   "Result",
	"resStar":  "ResStar",
}

// fedElsewhere are record fields that no authContext field feeds.
var fedElsewhere = map[string]string{
	"ID": "the context's key in AUSF.ctxs",
}

// TestRecordCompleteness: every field of authContext goes to a field of
// ContextRecord, and every record field is fed: a field added to the
// context and not to its record fails here.
func TestRecordCompleteness(t *testing.T) {
	rt := reflect.TypeFor[ContextRecord]()
	fed := map[string]bool{}
	for f := range reflect.TypeFor[authContext]().Fields() {
		to, ok := contextFields[f.Name]
		if !ok {
			t.Errorf("authContext.%s is not recorded: add it to ContextRecord (record.go) and to contextFields", f.Name)
			continue
		}
		if _, ok := rt.FieldByName(to); !ok {
			t.Errorf("authContext.%s maps to ContextRecord.%s, which does not exist", f.Name, to)
		}
		fed[to] = true
	}
	for name := range contextFields {
		if _, ok := reflect.TypeFor[authContext]().FieldByName(name); !ok {
			t.Errorf("contextFields lists authContext.%s, which does not exist", name)
		}
	}
	for f := range rt.Fields() {
		if !fed[f.Name] && fedElsewhere[f.Name] == "" {
			t.Errorf("ContextRecord.%s is fed by no field of authContext", f.Name)
		}
	}
}

// recording is a Recorder that keeps every delta, and the latest record
// of each context as a store would.
type recording struct {
	mu     sync.Mutex
	deltas []ContextRecord
	ended  []string
	latest map[string][]byte // encoded
}

func (r *recording) RecordedContext(c *ContextRecord) {
	b, err := wire.Append(nil, c)
	if err != nil {
		panic(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deltas = append(r.deltas, *c)
	if r.latest == nil {
		r.latest = map[string][]byte{}
	}
	r.latest[c.ID] = b
}

func (r *recording) EndedContext(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = append(r.ended, id)
	delete(r.latest, id)
}

// stored decodes the latest records, by ID.
func (r *recording) stored(t *testing.T) []ContextRecord {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []ContextRecord
	for _, id := range slices.Sorted(mapsKeys(r.latest)) {
		var c ContextRecord
		if err := wire.Decode(r.latest[id], &c); err != nil {
			t.Fatalf("record %s: %v", id, err)
		}
		out = append(out, c)
	}
	return out
}

func mapsKeys(m map[string][]byte) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// scene is an AUSF with contexts in every state: waiting for their
// confirmation, confirmed with success, confirmed with failure, expired.
type scene struct {
	c   *core
	rec *recording
	now time.Time
	// The contexts by state, with the RES* each UE computes.
	pending, succeeded, failed, expired string
	resStar                             map[string][]byte
}

func newScene(t testing.TB) *scene {
	t.Helper()
	s := &scene{c: newCore(t), rec: &recording{}, now: time.Unix(1_000_000, 0), resStar: map[string][]byte{}}
	s.c.ausf.now = func() time.Time { return s.now }
	s.c.ausf.SetRecorder(s.rec)
	start := func(n int) string {
		supi := store.DemoSUPI(n)
		id, actx, err := s.c.authenticate(t, supi, nil)
		if err != nil {
			t.Fatal(err)
		}
		if s.rec.latest[id] == nil {
			t.Fatalf("Authenticate answered before its context %s was recorded", id)
		}
		ue, err := s.c.answer(t, s.c.usimFor(t, supi), actx)
		if err != nil {
			t.Fatal(err)
		}
		s.resStar[id] = ue.resStar
		return id
	}
	s.expired = start(1)
	s.now = s.now.Add(DefaultContextTTL / 4)
	s.pending = start(1)
	s.succeeded = start(2)
	s.failed = start(3)
	if r, err := s.c.confirm(t, s.succeeded, s.resStar[s.succeeded]); err != nil || r.AuthResult != models.Ausf_UEAU_AuthResult_SUCCESS {
		t.Fatalf("confirmation: %+v %v", r, err)
	}
	wrong := bytes.Clone(s.resStar[s.failed])
	wrong[0] ^= 1
	s.resStar[s.failed] = wrong
	if r, err := s.c.confirm(t, s.failed, wrong); err != nil || r.AuthResult != models.Ausf_UEAU_AuthResult_FAILURE {
		t.Fatalf("confirmation with a wrong RES*: %+v %v", r, err)
	}
	s.now = s.now.Add(DefaultContextTTL*3/4 + time.Second) // the first context is past its deadline
	return s
}

// restored builds a fresh AUSF on the same UDM and restores recs into it.
func (s *scene) restored(t *testing.T, recs []ContextRecord) *AUSF {
	t.Helper()
	b, err := New(Config{ServingPLMNs: []string{"20893"}}, s.c.udm, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.now = func() time.Time { return s.now }
	if err := b.Restore(recs); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	return b
}

func encodeAll(t testing.TB, recs []ContextRecord) [][]byte { return recordtest.Encode(t, recs) }

// TestRecordsRoundTrip: the records of contexts in every state encode and
// decode equal, every record field is set by some of them, the last delta
// of each context is its record, and a fresh AUSF restored from them
// gives back byte for byte the same records.
func TestRecordsRoundTrip(t *testing.T) {
	s := newScene(t)
	recs := s.c.ausf.Records()
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4", len(recs))
	}
	for i, b := range encodeAll(t, recs) {
		var got ContextRecord
		if err := wire.Decode(b, &got); err != nil || !reflect.DeepEqual(got, recs[i]) {
			t.Fatalf("round trip of %s: %+v, %v", recs[i].ID, got, err)
		}
	}
	for f := range reflect.TypeFor[ContextRecord]().Fields() {
		if !slices.ContainsFunc(recs, func(r ContextRecord) bool { return !reflect.ValueOf(r).FieldByName(f.Name).IsZero() }) {
			t.Errorf("ContextRecord.%s is zero in every record: the round trip does not cover it", f.Name)
		}
	}
	if got := s.rec.stored(t); !reflect.DeepEqual(got, recs) {
		t.Fatalf("the last deltas are not the records:\n%+v\n%+v", got, recs)
	}
	// Created, then confirmed: two deltas each for the confirmed ones.
	if len(s.rec.deltas) != 6 {
		t.Errorf("%d deltas, want 6 (4 created, 2 confirmed)", len(s.rec.deltas))
	}
	b := s.restored(t, recs)
	if !slices.EqualFunc(encodeAll(t, b.Records()), encodeAll(t, recs), bytes.Equal) {
		t.Fatalf("restored records differ:\n%+v\n%+v", b.Records(), recs)
	}
}

// TestRestoredAUSFGoesOn: what a unit that took over needs of the AUSF.
// A context waiting for its confirmation is confirmed at the restored
// AUSF (the registration in flight goes on); a confirmation repeated
// after the dead AUSF had answered it (the AMF had not recorded its
// step) gets the same answer, KSEAF included; another RES* gets none; an
// expired context is not found, and the next authentication sweeps it
// and tells the Recorder.
func TestRestoredAUSFGoesOn(t *testing.T) {
	s := newScene(t)
	want, err := s.c.confirm(t, s.succeeded, s.resStar[s.succeeded]) // the answer the dead AUSF gave
	if err != nil {
		t.Fatal(err)
	}
	b := s.restored(t, s.rec.stored(t))
	rec := &recording{}
	b.SetRecorder(rec)
	confirm := func(id string, resStar []byte) (*models.Ausf_UEAU_ConfirmationDataResponse, error) {
		h := hex.EncodeToString(resStar)
		return b.Confirm5gAka(context.Background(), id, &models.Ausf_UEAU_ConfirmationData{ResStar: &h})
	}
	if r, err := confirm(s.pending, s.resStar[s.pending]); err != nil || r.AuthResult != models.Ausf_UEAU_AuthResult_SUCCESS || r.Kseaf == "" {
		t.Fatalf("the context in flight at the restored AUSF: %+v, %v", r, err)
	}
	if rec.latest[s.pending] == nil {
		t.Error("the confirmation at the restored AUSF was not recorded")
	}
	if r, err := confirm(s.succeeded, s.resStar[s.succeeded]); err != nil || !reflect.DeepEqual(r, want) {
		t.Fatalf("repeated confirmation at the restored AUSF: %+v, %v; want %+v", r, err, want)
	}
	if r, err := confirm(s.failed, s.resStar[s.failed]); err != nil || r.AuthResult != models.Ausf_UEAU_AuthResult_FAILURE {
		t.Fatalf("repeated failed confirmation: %+v, %v", r, err)
	}
	other := bytes.Clone(s.resStar[s.failed])
	other[1] ^= 1
	if _, err := confirm(s.failed, other); !errors.Is(err, sbi.ErrContextNotFound) {
		t.Fatalf("a second guess at the restored AUSF: %v, want CONTEXT_NOT_FOUND", err)
	}
	if _, err := confirm(s.expired, s.resStar[s.expired]); !errors.Is(err, sbi.ErrContextNotFound) {
		t.Fatalf("expired context: %v, want CONTEXT_NOT_FOUND", err)
	}
	if _, _, err := b.Authenticate(context.Background(), &models.Ausf_UEAU_AuthenticationInfo{SupiOrSuci: store.DemoSUPI(1), ServingNetworkName: s.c.snn}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rec.ended, []string{s.expired}) {
		t.Errorf("contexts ended by the sweep: %v, want [%s]", rec.ended, s.expired)
	}
}

// TestRestoreRefuses: records no AUSF could have written are refused with
// ErrBadRecord, and the AUSF is left empty; so is a restore into an AUSF
// that holds contexts.
func TestRestoreRefuses(t *testing.T) {
	s := newScene(t)
	good := s.c.ausf.Records()
	for name, spoil := range map[string]func(*ContextRecord){
		"short id":         func(r *ContextRecord) { r.ID = r.ID[:30] },
		"id not hex":       func(r *ContextRecord) { r.ID = strings.Repeat("z", 32) },
		"no SUPI":          func(r *ContextRecord) { r.SUPI = "" },
		"bad SNN":          func(r *ContextRecord) { r.ServingNetworkName = "internet" },
		"short XRES*":      func(r *ContextRecord) { r.XRESStar = r.XRESStar[:15] },
		"short KSEAF":      func(r *ContextRecord) { r.KSEAF = nil },
		"no deadline":      func(r *ContextRecord) { r.Expires = time.Time{} },
		"unknown result":   func(r *ContextRecord) { r.Result = 3 },
		"RES* unconfirmed": func(r *ContextRecord) { r.Result, r.ResStar = resultNone, "00" },
	} {
		recs := slices.Clone(good)
		recs[1].XRESStar, recs[1].KSEAF = bytes.Clone(recs[1].XRESStar), bytes.Clone(recs[1].KSEAF)
		spoil(&recs[1])
		b, err := New(Config{ServingPLMNs: []string{"20893"}}, s.c.udm, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Restore(recs); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%s: Restore: %v, want ErrBadRecord", name, err)
		}
		if n := len(b.Records()); n != 0 {
			t.Errorf("%s: %d contexts after a refused restore", name, n)
		}
	}
	b := s.restored(t, nil)
	if err := b.Restore(append(good, good[0])); !errors.Is(err, ErrBadRecord) {
		t.Errorf("a context twice: %v, want ErrBadRecord", err)
	}
	if err := s.c.ausf.Restore(good); err == nil {
		t.Error("restore into an AUSF with contexts accepted")
	}
}

// TestCorruptedRecordRefused: a record with any one byte changed either
// does not decode or, decoded, is still a record Restore checks: never a
// panic, and never a context Restore takes with another ID than the
// one written unless it passes the checks.
func TestCorruptedRecordRefused(t *testing.T) {
	s := newScene(t)
	recs := s.c.ausf.Records()
	enc := encodeAll(t, recs)[0]
	refused := recordtest.Corruptions(t, enc, func(r ContextRecord) error {
		a, err := New(Config{ServingPLMNs: []string{"20893"}}, s.c.udm, nil)
		if err != nil {
			t.Fatal(err)
		}
		return a.Restore([]ContextRecord{r})
	}, ErrBadRecord)
	// The header (layout hash) and the lengths alone refuse many.
	if refused < 11 {
		t.Errorf("only %d of %d corruptions refused", refused, len(enc))
	}
}

// FuzzContextRecord feeds bytes to the decoding of a context record and
// what decodes to Restore: neither panics, a decoded record survives
// another round trip, and Restore takes it or refuses it with
// ErrBadRecord. The seeds are the records of a scene.
func FuzzContextRecord(f *testing.F) {
	s := newScene(f)
	for _, b := range encodeAll(f, s.c.ausf.Records()) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r ContextRecord
		if err := wire.Decode(b, &r); err != nil {
			return
		}
		again, err := wire.Append(nil, &r)
		if err != nil {
			t.Fatal(err)
		}
		var r2 ContextRecord
		if err := wire.Decode(again, &r2); err != nil || !reflect.DeepEqual(r, r2) {
			t.Fatalf("a decoded record does not survive a round trip: %v", err)
		}
		a, err := New(Config{ServingPLMNs: []string{"20893"}}, s.c.udm, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Restore([]ContextRecord{r}); err != nil && !errors.Is(err, ErrBadRecord) {
			t.Fatalf("Restore: %v, want nil or ErrBadRecord", err)
		}
	})
}
