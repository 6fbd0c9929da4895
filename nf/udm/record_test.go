package udm

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/internal/recordtest"
	"github.com/tern5g/tern/nf/udr"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/wire"
	"github.com/tern5g/tern/security/kdf"
	"github.com/tern5g/tern/store"
)

const notRecorded = "configuration or plumbing of this process: a restored UDM has its own"

// udmFields says, for every field of UDM, which UERecord field holds it
// or why none does. TestRecordCompleteness fails when a field is added to
// UDM and not here.
var udmFields = map[string]struct{ to, why string }{
	"cfg":        {why: notRecorded},
	"hnKeys":     {why: notRecorded},
	"schemes":    {why: notRecorded},
	"udr":        {why: notRecorded},
	"log":        {why: notRecorded},
	"rand":       {why: notRecorded},
	"mu":         {why: notRecorded},
	"amf3GPP":    {to: "AMF3GPP"},
	"authEvents": {to: "AuthEvent"},
	"notifier":   {why: "the unit's AMF, set again by SetAMF in the new unit"},
	"smf":        {why: "the unit's SMF, set again by SetSMF in the new unit"},
	"rec":        {why: notRecorded},
}

// TestRecordCompleteness: every field of UDM is recorded or excluded with
// a reason, and every UERecord field is fed (SUPI: the maps' key).
func TestRecordCompleteness(t *testing.T) {
	rt := reflect.TypeFor[UERecord]()
	fed := map[string]bool{"SUPI": true}
	for f := range reflect.TypeFor[UDM]().Fields() {
		m, ok := udmFields[f.Name]
		switch {
		case !ok:
			t.Errorf("UDM.%s is neither recorded nor excluded: add it to UERecord (record.go) or give the reason in udmFields", f.Name)
		case m.to != "":
			if _, ok := rt.FieldByName(m.to); !ok {
				t.Errorf("UDM.%s maps to UERecord.%s, which does not exist", f.Name, m.to)
			}
			fed[m.to] = true
		case m.why == "":
			t.Errorf("UDM.%s excluded without a reason", f.Name)
		}
	}
	for name := range udmFields {
		if _, ok := reflect.TypeFor[UDM]().FieldByName(name); !ok {
			t.Errorf("udmFields lists UDM.%s, which does not exist", name)
		}
	}
	for f := range rt.Fields() {
		if !fed[f.Name] {
			t.Errorf("UERecord.%s is fed by no field of UDM", f.Name)
		}
	}
}

// recording is a Recorder that keeps the latest record of each UE as a
// store would (an empty record deletes it).
type recording struct {
	mu     sync.Mutex
	deltas int
	latest map[string][]byte
}

func (r *recording) RecordedUE(u *UERecord) {
	b, err := wire.Append(nil, u)
	if err != nil {
		panic(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deltas++
	if r.latest == nil {
		r.latest = map[string][]byte{}
	}
	if u.Empty() {
		delete(r.latest, u.SUPI)
		return
	}
	r.latest[u.SUPI] = b
}

func (r *recording) stored(t testing.TB) []UERecord {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []UERecord
	for _, b := range r.latest {
		var u UERecord
		if err := wire.Decode(b, &u); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b UERecord) int { return cmpString(a.SUPI, b.SUPI) })
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// fakeAMF is the AMF the UDM notifies.
type fakeAMF struct {
	mu      sync.Mutex
	dereg   []string // callback URIs
	changed []string // SUPIs
}

func (a *fakeAMF) DeregistrationNotify(ctx context.Context, uri string, d *models.Udm_UECM_DeregistrationData) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.dereg = append(a.dereg, uri)
	return nil
}

func (a *fakeAMF) SubscriptionDataChanged(ctx context.Context, supi string, n *models.Udm_SDM_ModificationNotification) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.changed = append(a.changed, supi)
	return nil
}

// udmScene is a UDM on three subscribers: the first registered by its AMF,
// its registration modified, and authenticated; the second authenticated
// only; the third registered and deregistered (it left the UDM).
type udmScene struct {
	u    *UDM
	udr  *udr.UDR
	rec  *recording
	supi [3]string
}

func newUDMScene(t testing.TB) *udmScene {
	t.Helper()
	st, err := store.OpenOptions(filepath.Join(t.TempDir(), "db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.PutAll(store.DefaultSubscribers(3), false); err != nil {
		t.Fatal(err)
	}
	r, err := udr.New(udr.Config{}, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	u, err := New(Config{}, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &udmScene{u: u, udr: r, rec: &recording{}}
	u.SetRecorder(s.rec)
	for i := range s.supi {
		s.supi[i] = store.DemoSUPI(i + 1)
	}
	ctx := context.Background()
	for _, i := range []int{0, 2} {
		if _, err := u.RegisterAMF3GPPAccess(ctx, s.supi[i], registration("amf-1")); err != nil {
			t.Fatal(err)
		}
		if s.rec.latest[s.supi[i]] == nil {
			t.Fatalf("the registration of %s was answered before it was recorded", s.supi[i])
		}
	}
	guami := registration("").Guami
	if err := u.UpdateAMF3GPPAccess(ctx, s.supi[0], &models.Udm_UECM_Amf3GppAccessRegistrationModification{
		Guami: guami, Pei: "imeisv-4370816125816151", UeSrvccCapability: true,
		BackupAmfInfo:       []models.BackupAmfInfo{{BackupAmf: "amf-2"}},
		EpsInterworkingInfo: &models.Udm_UECM_EpsInterworkingInfo{EpsIwkPgws: map[string]models.Udm_UECM_EpsIwkPgw{"internet": {PgwFqdn: "pgw.example", SmfInstanceId: "smf-1"}}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := u.UpdateAMF3GPPAccess(ctx, s.supi[2], &models.Udm_UECM_Amf3GppAccessRegistrationModification{Guami: guami, PurgeFlag: true}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 7, 1, 2, 3, 4, time.FixedZone("x", 3600))
	for _, i := range []int{0, 1} {
		if err := u.ConfirmAuth(ctx, s.supi[i], &models.Udm_UEAU_AuthEvent{NfInstanceId: "ausf-1", Success: i == 0, TimeStamp: &at,
			AuthType: models.Udm_UEAU_AuthType_5_G_AKA, ServingNetworkName: kdf.ServingNetworkName(plmn)}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func (s *udmScene) restored(t testing.TB, recs []UERecord) (*UDM, *fakeAMF) {
	t.Helper()
	b, err := New(Config{}, s.udr, nil)
	if err != nil {
		t.Fatal(err)
	}
	amf := &fakeAMF{}
	b.SetAMF(amf)
	if err := b.Restore(recs); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	return b, amf
}

func encodeUEs(t testing.TB, recs []UERecord) [][]byte { return recordtest.Encode(t, recs) }

// TestRecordsRoundTrip: the UDM's records encode and decode equal, the
// last delta of each UE is its record (a UE deregistered has none), and a
// fresh UDM restored from them gives back byte for byte the same records.
func TestRecordsRoundTrip(t *testing.T) {
	s := newUDMScene(t)
	recs := s.u.Records()
	if len(recs) != 2 || recs[0].SUPI != s.supi[0] || recs[1].SUPI != s.supi[1] || recs[0].AMF3GPP == nil || recs[1].AMF3GPP != nil {
		t.Fatalf("records %+v", recs)
	}
	for i, b := range encodeUEs(t, recs) {
		var got UERecord
		if err := wire.Decode(b, &got); err != nil || !reflect.DeepEqual(got, recs[i]) {
			t.Fatalf("round trip of %s: %+v, %v", recs[i].SUPI, got, err)
		}
	}
	if got := s.rec.stored(t); !reflect.DeepEqual(got, recs) {
		t.Fatalf("the last deltas are not the records:\n%+v\n%+v", got, recs)
	}
	if s.rec.deltas != 6 {
		t.Errorf("%d deltas, want 6 (2 registrations, 2 modifications, 2 results)", s.rec.deltas)
	}
	b, _ := s.restored(t, recs)
	if !slices.EqualFunc(encodeUEs(t, b.Records()), encodeUEs(t, recs), bytes.Equal) {
		t.Fatalf("restored records differ:\n%+v\n%+v", b.Records(), recs)
	}
}

// TestRestoredUDMGoesOn: what a unit that took over needs of the UDM. The
// serving AMF's registration is there: its deregistration (the PATCH with
// purgeFlag) succeeds where a UDM without the records answered 404, and a
// withdrawn subscription reaches the AMF's callback; the last
// authentication result is there.
func TestRestoredUDMGoesOn(t *testing.T) {
	s := newUDMScene(t)
	b, amf := s.restored(t, s.rec.stored(t))
	rec := &recording{}
	b.SetRecorder(rec)
	ctx := context.Background()
	want, _ := s.u.GetAMF3GPPAccess(ctx, s.supi[0])
	if got, err := b.GetAMF3GPPAccess(ctx, s.supi[0]); err != nil || got.AmfInstanceId != "amf-1" || got.Pei != want.Pei || !got.RegistrationTime.Equal(*want.RegistrationTime) {
		t.Fatalf("restored registration %+v, %v; want %+v", got, err, want)
	}
	if ev, ok := b.LastAuthEvent(s.supi[1]); !ok || ev.Success || ev.NfInstanceId != "ausf-1" {
		t.Fatalf("restored authentication result %+v %v", ev, ok)
	}
	b.SubscriberChanged(ctx, s.supi[0], true)
	if len(amf.dereg) != 1 || amf.dereg[0] != "http://amf.example/dereg" {
		t.Fatalf("deregistration notifications %v, want the registration's callback", amf.dereg)
	}
	if got := rec.stored(t); len(got) != 1 || got[0].SUPI != s.supi[0] || got[0].AMF3GPP != nil || got[0].AuthEvent == nil {
		t.Errorf("records after the withdrawal %+v: want %s's authentication result alone", got, s.supi[0])
	}
	c, _ := s.restored(t, s.rec.stored(t))
	if err := c.UpdateAMF3GPPAccess(ctx, s.supi[0], &models.Udm_UECM_Amf3GppAccessRegistrationModification{Guami: registration("").Guami, PurgeFlag: true}); err != nil {
		t.Fatalf("deregistration at the restored UDM: %v", err)
	}
	if _, err := c.GetAMF3GPPAccess(ctx, s.supi[0]); !errors.Is(err, sbi.ErrContextNotFound) {
		t.Fatalf("after the deregistration: %v, want CONTEXT_NOT_FOUND", err)
	}
}

// TestRestoreRefuses: a record no UDM could have written is refused with
// ErrBadRecord and nothing is restored; so is a restore into a UDM that
// holds state.
func TestRestoreRefuses(t *testing.T) {
	s := newUDMScene(t)
	good := s.u.Records()
	for name, spoil := range map[string]func(*UERecord){
		"bad SUPI":         func(r *UERecord) { r.SUPI = "imsi-1" },
		"empty":            func(r *UERecord) { r.AMF3GPP, r.AuthEvent = nil, nil },
		"twice":            func(r *UERecord) { r.SUPI = good[1].SUPI },
		"other SUPI":       func(r *UERecord) { r.AMF3GPP.Supi = good[1].SUPI },
		"no callback":      func(r *UERecord) { r.AMF3GPP.DeregCallbackUri = "" },
		"no time":          func(r *UERecord) { r.AMF3GPP.RegistrationTime = nil },
		"event without NF": func(r *UERecord) { r.AuthEvent.NfInstanceId = "" },
		"removal":          func(r *UERecord) { r.AuthEvent.AuthRemovalInd = true },
	} {
		recs := slices.Clone(good)
		r := recs[0]
		reg, ev := *r.AMF3GPP, *r.AuthEvent
		r.AMF3GPP, r.AuthEvent = &reg, &ev
		spoil(&r)
		recs[0] = r
		b, err := New(Config{}, s.udr, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Restore(recs); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%s: Restore: %v, want ErrBadRecord", name, err)
		}
		if n := len(b.Records()); n != 0 {
			t.Errorf("%s: %d UEs after a refused restore", name, n)
		}
	}
	if err := s.u.Restore(good); err == nil {
		t.Error("restore into a UDM with state accepted")
	}
}

// TestCorruptedRecordRefused: a record with a byte changed does not decode
// or decodes to one Restore takes or refuses with ErrBadRecord.
func TestCorruptedRecordRefused(t *testing.T) {
	s := newUDMScene(t)
	enc := encodeUEs(t, s.u.Records())[0]
	refused := recordtest.Corruptions(t, enc, func(r UERecord) error {
		u, _ := New(Config{}, s.udr, nil)
		return u.Restore([]UERecord{r})
	}, ErrBadRecord)
	if refused < 11 {
		t.Errorf("only %d of %d corruptions refused", refused, len(enc))
	}
}

// FuzzUERecord feeds bytes to the decoding of a UE record and what decodes
// to Restore: neither panics, a decoded record survives another round
// trip, and Restore takes it or refuses it with ErrBadRecord.
func FuzzUERecord(f *testing.F) {
	s := newUDMScene(f)
	for _, b := range encodeUEs(f, s.u.Records()) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r UERecord
		if err := wire.Decode(b, &r); err != nil {
			return
		}
		again, err := wire.Append(nil, &r)
		if err != nil {
			t.Fatal(err)
		}
		var r2 UERecord
		if err := wire.Decode(again, &r2); err != nil || !reflect.DeepEqual(r, r2) {
			t.Fatalf("a decoded record does not survive a round trip: %v", err)
		}
		u, err := New(Config{}, s.udr, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := u.Restore([]UERecord{r}); err != nil && !errors.Is(err, ErrBadRecord) {
			t.Fatalf("Restore: %v, want nil or ErrBadRecord", err)
		}
	})
}
