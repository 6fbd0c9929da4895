package core

import (
	"bytes"
	"context"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/nf/amf"
	"github.com/tern5g/tern/nf/ausf"
	"github.com/tern5g/tern/nf/pcf"
	"github.com/tern5g/tern/nf/smf"
	"github.com/tern5g/tern/nf/udm"
	"github.com/tern5g/tern/sbi/wire"
)

func TestUnitStateAdd(t *testing.T) {
	enc := func(v any) []byte {
		b, err := wire.Append(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	rt := time.Date(2026, 12, 7, 1, 2, 3, 0, time.UTC)
	var st UnitState
	for _, r := range []RawRecord{
		{KindUnit, unitKey, enc(&unitRecord{SMFRecoveryTime: rt})},
		{KindAMFUE, []byte{0, 0, 0, 0, 0, 0, 0, 7}, enc(&amf.UERecord{ID: 7, Seq: 3, SUPI: "imsi-001010000000001"})},
		{KindSMFUE, []byte("imsi-001010000000001"), enc(&smf.UERecord{SUPI: "imsi-001010000000001", Seq: 2})},
		{KindSMFUPF, []byte("upf"), enc(&smf.UPFRecord{Name: "upf"})},
		{KindSMFAlloc, smfAllocKey, enc(&smf.AllocatorRecord{NextRef: 9, NextSEID: 11, Pools: []smf.PoolRecord{{DNN: "internet"}}})},
		{KindAUSF, []byte("ab"), enc(&ausf.ContextRecord{ID: "ab", SUPI: "imsi-001010000000001"})},
		{KindPCF, []byte("3"), enc(&pcf.PolicyRecord{ID: "3", SUPI: "imsi-001010000000001"})},
		{KindUDM, []byte("imsi-001010000000001"), enc(&udm.UERecord{SUPI: "imsi-001010000000001"})},
		// A record of one kind stored under another does not decode.
		{KindAMFUE, []byte{0, 0, 0, 0, 0, 0, 0, 8}, enc(&smf.UPFRecord{Name: "upf"})},
		{KindSMFUE, []byte("x"), []byte{1, 2, 3}},
	} {
		if err := st.Add(r.Kind, r.Key, r.Rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Add(99, nil, nil); err == nil {
		t.Error("a record of an unknown kind accepted")
	}
	if st.Refused != 2 {
		t.Errorf("refused %d, want 2", st.Refused)
	}
	if len(st.AMF) != 1 || st.AMF[0].ID != 7 || st.AMF[0].Seq != 3 {
		t.Errorf("AMF records %+v", st.AMF)
	}
	if len(st.SMF.UEs) != 1 || len(st.SMF.UPFs) != 1 || !st.SMF.RecoveryTime.Equal(rt) ||
		st.SMF.NextRef != 9 || st.SMF.NextSEID != 11 || len(st.SMF.Pools) != 1 {
		t.Errorf("SMF checkpoint %+v", st.SMF)
	}
	if len(st.AUSF) != 1 || st.AUSF[0].ID != "ab" {
		t.Errorf("AUSF records %+v", st.AUSF)
	}
	if len(st.PCF) != 1 || st.PCF[0].ID != "3" {
		t.Errorf("PCF records %+v", st.PCF)
	}
	if len(st.UDM) != 1 || st.UDM[0].SUPI != "imsi-001010000000001" {
		t.Errorf("UDM records %+v", st.UDM)
	}
	if len(st.Raw) != 8 {
		t.Errorf("%d raw records kept, want the 8 that decoded", len(st.Raw))
	}
}

func TestRecorderKeysAndTombstones(t *testing.T) {
	m := &mapStore{m: map[string][]byte{}}
	r := &recorder{store: m}
	ueRec := &amf.UERecord{ID: 1, Seq: 1, SUPI: "imsi-001010000000001"}
	ueEnc, err := wire.Append(nil, ueRec)
	if err != nil {
		t.Fatal(err)
	}
	r.UERecord(ueRec, ueEnc)
	r.RecordedUE(&smf.UERecord{SUPI: "imsi-001010000000001", Seq: 1, Sessions: []smf.SessionRecord{{ID: 1}}})
	r.RecordedContext(&ausf.ContextRecord{ID: "ab"})
	r.RecordedPolicy(&pcf.PolicyRecord{ID: "3"})
	udmRecorder{r}.RecordedUE(&udm.UERecord{SUPI: "imsi-001010000000001", AuthEvent: &models.Udm_UEAU_AuthEvent{}})
	if len(m.m) != 5 {
		t.Fatalf("%d records stored, want 5", len(m.m))
	}
	// The AMF's record is stored as the AMF encoded it.
	if got := m.m[string([]byte{KindAMFUE, 0, 0, 0, 0, 0, 0, 0, 1})]; !bytes.Equal(got, ueEnc) {
		t.Errorf("AMF record stored as %x, want the AMF's encoding %x", got, ueEnc)
	}
	// A deleted context's tombstone (RM "gone", which TestRecordEnumValues
	// in nf/amf pins at 2) and a UE without sessions delete their keys.
	gone := &amf.UERecord{ID: 1, Seq: 2}
	gone.State.RM = 2
	if !gone.Gone() {
		t.Fatal("the test's tombstone is no tombstone")
	}
	r.UERecord(gone, nil)
	r.RecordedUE(&smf.UERecord{SUPI: "imsi-001010000000001", Seq: 2})
	r.EndedContext("ab")
	r.DeletedPolicy("3")
	udmRecorder{r}.RecordedUE(&udm.UERecord{SUPI: "imsi-001010000000001"})
	if len(m.m) != 0 {
		t.Fatalf("%d records left after the tombstones, want 0", len(m.m))
	}
	if r.failed.Load() != 0 {
		t.Fatalf("%d failures", r.failed.Load())
	}
}

type mapStore struct{ m map[string][]byte }

func (s *mapStore) Put(kind uint8, key, rec []byte) error {
	// A store copies: the caller's buffers are its own again on return.
	s.m[string(append([]byte{kind}, key...))] = bytes.Clone(rec)
	return nil
}

func (s *mapStore) Delete(kind uint8, key []byte) error {
	delete(s.m, string(append([]byte{kind}, key...)))
	return nil
}

// countingStore is a RecordStore that counts what it is given.
type countingStore struct{ puts, deletes int }

func (s *countingStore) Put(uint8, []byte, []byte) error { s.puts++; return nil }
func (s *countingStore) Delete(uint8, []byte) error      { s.deletes++; return nil }

// TestUnrecordedUnit: a unit built Unrecorded (the replication cost's
// reference: resiliency off behind the front end) has no record store and
// puts nothing; one with a store puts its unit record when it starts; a
// unit needs one or the other, and an unrecorded standby cannot take
// over.
func TestUnrecordedUnit(t *testing.T) {
	unit := func(t *testing.T) config.Config {
		cfg := unitConfig(t, filepath.Join(t.TempDir(), "subscribers.db"), 0)
		cfg.UPF.Embedded = false
		n4 := freeport.Loopback()
		cfg.SMF.NodeID, cfg.SMF.N4Address = n4.String(), n4.String()
		// The UPF is the supervisor's in a replicated core: N4 over PFCP
		// to an address nobody answers on here.
		cfg.SMF.UPFs = append(cfg.SMF.UPFs[:0:0], cfg.SMF.UPFs...)
		for i := range cfg.SMF.UPFs {
			cfg.SMF.UPFs[i].N4 = netip.AddrPortFrom(freeport.Loopback(), 8805).String()
		}
		return cfg
	}
	t.Run("recorded", func(t *testing.T) {
		st := &countingStore{}
		c, err := New(unit(t), nil, WithUnit(Unit{Records: st}))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if st.puts == 0 {
			t.Error("a recorded unit started without putting its unit record")
		}
	})
	t.Run("unrecorded", func(t *testing.T) {
		c, err := New(unit(t), nil, WithUnit(Unit{Unrecorded: true}))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if c.rec != nil {
			t.Error("an unrecorded unit has a recorder")
		}
	})
	t.Run("both or neither", func(t *testing.T) {
		if _, err := New(unit(t), nil, WithUnit(Unit{})); err == nil {
			t.Error("a unit with neither a record store nor Unrecorded built")
		}
		if _, err := New(unit(t), nil, WithUnit(Unit{Records: &countingStore{}, Unrecorded: true})); err == nil {
			t.Error("an unrecorded unit with a record store built")
		}
	})
	t.Run("standby", func(t *testing.T) {
		c, err := New(unit(t), nil, WithUnit(Unit{Unrecorded: true, Standby: true}))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Takeover(context.Background(), &UnitState{}); err == nil {
			t.Error("an unrecorded standby took over")
		}
	})
}

// TestStopRecording: after StopRecording nothing reaches the store, puts
// or deletes, through any NF's recorder.
func TestStopRecording(t *testing.T) {
	m := &mapStore{m: map[string][]byte{}}
	r := &recorder{store: m}
	ueRec := &amf.UERecord{ID: 1, Seq: 1, SUPI: "imsi-001010000000001"}
	ueEnc, err := wire.Append(nil, ueRec)
	if err != nil {
		t.Fatal(err)
	}
	r.UERecord(ueRec, ueEnc)
	r.RecordedUE(&smf.UERecord{SUPI: "imsi-001010000000001", Seq: 1, Sessions: []smf.SessionRecord{{ID: 1}}})
	before := len(m.m)
	(&Core{rec: r}).StopRecording()
	r.UERecord(&amf.UERecord{ID: 2, Seq: 1}, ueEnc)
	r.RecordedUE(&smf.UERecord{SUPI: "imsi-001010000000001", Seq: 2}) // would delete
	r.RecordedContext(&ausf.ContextRecord{ID: "ab"})
	r.RecordedPolicy(&pcf.PolicyRecord{ID: "3"})
	udmRecorder{r}.RecordedUE(&udm.UERecord{SUPI: "imsi-001010000000002"})
	if len(m.m) != before || before != 2 {
		t.Fatalf("%d records after StopRecording, %d before: want the 2 before, untouched", len(m.m), before)
	}
}
