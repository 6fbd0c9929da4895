package smf

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/nf/pcf"
	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/sbi"
)

// commitRecorder keeps the last record of each UE and how many it got.
// It takes a while over each record, as a replica's store would: a
// message that left before the record of its step would be seen during
// that while.
type commitRecorder struct {
	mu    sync.Mutex
	last  map[string]*UERecord
	count map[string]int
}

func (r *commitRecorder) RecordedUE(rec *UERecord) {
	time.Sleep(2 * time.Millisecond)
	r.mu.Lock()
	r.last[rec.SUPI] = rec
	r.count[rec.SUPI]++
	r.mu.Unlock()
}

func (r *commitRecorder) RecordedUPF(*UPFRecord) {}

func (r *commitRecorder) RecordedAllocators(*AllocatorRecord) {}

func (r *commitRecorder) records(supi string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count[supi]
}

// commitAMF is the AMF's side, checking every message the SMF sends it
// against the records committed so far.
type commitAMF struct {
	*fakeAMF
	t     testing.TB
	rec   *commitRecorder
	mu    sync.Mutex
	setup int // establishment transfers checked
	notes int // status notifications checked
}

func (a *commitAMF) N1N2MessageTransfer(ctx context.Context, supi string, req *sbi.N1N2Message) (*models.Amf_Comm_N1N2MessageTransferRspData, error) {
	c := req.Data.N2InfoContainer
	if c != nil && c.SmInfo != nil && c.SmInfo.N2InfoContent != nil &&
		c.SmInfo.N2InfoContent.NgapIeType == models.Amf_Comm_NgapIeType_PDU_RES_SETUP_REQ {
		// The establishment's Accept and setup request: the record of the
		// N4 step that made them holds the UPF's F-SEID.
		a.rec.mu.Lock()
		ok := false
		if r := a.rec.last[supi]; r != nil {
			for _, s := range r.Sessions {
				ok = ok || s.ID == uint8(req.Data.PduSessionId) && s.UPSEID != 0
			}
		}
		a.rec.mu.Unlock()
		if !ok {
			a.t.Errorf("%s/%d: PDU session setup sent to the AMF before the record of its PFCP session", supi, req.Data.PduSessionId)
		}
		a.mu.Lock()
		a.setup++
		a.mu.Unlock()
	}
	return a.fakeAMF.N1N2MessageTransfer(ctx, supi, req)
}

func (a *commitAMF) SMContextStatusNotify(ctx context.Context, uri string, n *models.Smf_PDUSess_SmContextStatusNotification) error {
	// The release: no committed record holds the session any more.
	a.rec.mu.Lock()
	for _, r := range a.rec.last {
		for _, s := range r.Sessions {
			if s.StatusURI == uri {
				a.t.Errorf("release of %s notified before the record without the session", uri)
			}
		}
	}
	a.rec.mu.Unlock()
	a.mu.Lock()
	a.notes++
	a.mu.Unlock()
	return a.fakeAMF.SMContextStatusNotify(ctx, uri, n)
}

// TestOutputCommitSMF: with a Recorder, the SBI answers (CreateSMContext,
// UpdateSMContext, ReleaseSMContext) are given after the record of the
// step that made them, and the messages to the AMF (the establishment's
// transfer, the release notification) leave after the record of their
// step. PFCP requests are awaited inside their step (n4.go), so they
// cannot wait for its record: see docs/resiliency.md.
func TestOutputCommitSMF(t *testing.T) {
	rec := &commitRecorder{last: map[string]*UERecord{}, count: map[string]int{}}
	amf := &commitAMF{fakeAMF: newFakeAMF(t), t: t, rec: rec}
	p, err := pcf.New(pcf.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	upf := newFakeUPF()
	s, err := New(testConfig(), Deps{AMF: amf, AMFStatus: amf, SDM: &fakeSDM{}, PCF: p,
		UPFs: map[string]pfcp.UserPlane{"upf1": upf}, Recorder: rec}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.SetNotifier(s)
	amf.fakeAMF.smf = s
	t.Cleanup(func() { s.Close() })
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := &harness{smf: s, amf: amf.fakeAMF, upf: upf, pcf: p}
	ctx := context.Background()

	// answered checks that an answer came after a record of the step
	// that gave it.
	answered := func(what string, before int) {
		t.Helper()
		if rec.records(testSUPI) <= before {
			t.Errorf("%s answered before the record of its step", what)
		}
	}
	n := rec.records(testSUPI)
	created, err := s.CreateSMContext(ctx, createReq(testSUPI, 1, "internet", sliceA, estRequest(t, 1, 1, 0, nil)))
	if err != nil {
		t.Fatal(err)
	}
	answered("CreateSMContext", n)
	amf.setRef(testSUPI, 1, created.Ref)
	amf.next(t)
	for _, req := range []*sbi.SMContextUpdate{setupResponse(t, 1),
		{Data: &models.Smf_PDUSess_SmContextUpdateData{UpCnxState: models.Smf_PDUSess_UpCnxState_DEACTIVATED}}} {
		n = rec.records(testSUPI)
		if _, err := s.UpdateSMContext(ctx, created.Ref, req); err != nil {
			t.Fatal(err)
		}
		answered("UpdateSMContext", n)
	}
	n = rec.records(testSUPI)
	if err := s.ReleaseSMContext(ctx, created.Ref, &sbi.SMContextRelease{}); err != nil {
		t.Fatal(err)
	}
	answered("ReleaseSMContext", n)

	// A second session, released by the UE through the AMF: its release
	// is notified (TS 23.502 §4.3.4.2 step 11).
	ref2, _, _ := h.establish(t, testSUPI, 2, "internet")
	n = rec.records(testSUPI)
	if _, err := s.UpdateSMContext(ctx, ref2, n1Update(t, &nas.PDUSessionReleaseRequest{SMHeader: nas.SMHeader{SessionID: 2, TransactionID: 4}})); err != nil {
		t.Fatal(err)
	}
	answered("UpdateSMContext (release request)", n)
	if _, err := s.UpdateSMContext(ctx, ref2, releaseResponse(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateSMContext(ctx, ref2, n1Update(t, &nas.PDUSessionReleaseComplete{SMHeader: nas.SMHeader{SessionID: 2, TransactionID: 4}})); err != nil {
		t.Fatal(err)
	}
	amf.note(t)
	amf.mu.Lock()
	defer amf.mu.Unlock()
	if amf.setup != 2 || amf.notes != 1 {
		t.Errorf("checked %d setups and %d notifications, want 2 and 1", amf.setup, amf.notes)
	}
}
