package gnb

import (
	"testing"
	"time"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/ngap"
)

// TestPaging: a Paging reaches exactly the idle UE whose 5G-S-TMSI it
// names, when the gNB's TAI is in its list, with the instant the gNB
// received it.
func TestPaging(t *testing.T) {
	a := newFakeAMF(t)
	g := a.setup(gnbConfig())
	s1 := identity.STMSI{SetID: 0x3F8, TMSI: 1}
	s2 := identity.STMSI{SetID: 0x3F8, TMSI: 2}
	u1, u2 := newUE(), newUE()
	p1, p2 := g.NewPort(u1), g.NewPort(u2)
	p1.SetPagingIdentity(&s1)
	p2.SetPagingIdentity(&s2)
	here := identity.TAI{PLMN: plmn, TAC: 1}
	other := identity.TAI{PLMN: plmn, TAC: 2}
	if g.TAI() != here {
		t.Fatalf("gNB TAI %v", g.TAI())
	}
	// settle waits until the gNB has read n Pagings.
	settle := func(n int64) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Second)
		for g.Counters().Pagings < n {
			if time.Now().After(deadline) {
				t.Fatalf("gNB read %d Pagings, want %d", g.Counters().Pagings, n)
			}
			time.Sleep(time.Millisecond)
		}
	}

	before := time.Now()
	a.send(0, &ngap.Paging{UEPagingIdentity: s2, TAIListForPaging: []identity.TAI{other, here}, PagingPriority: 3})
	u2.wait(t)
	after := time.Now()
	if len(u2.pagedAt) != 1 || u2.pagedAt[0].Before(before) || u2.pagedAt[0].After(after) {
		t.Fatalf("paged at %v, want between %v and %v", u2.pagedAt, before, after)
	}

	// Another TA only, an unknown 5G-S-TMSI: nobody is paged.
	a.send(0, &ngap.Paging{UEPagingIdentity: s1, TAIListForPaging: []identity.TAI{other}})
	a.send(0, &ngap.Paging{UEPagingIdentity: identity.STMSI{SetID: 0x3F8, TMSI: 99}, TAIListForPaging: []identity.TAI{here}})
	settle(3)

	// A UE with a signalling connection is not paged.
	if _, err := p1.SendInitial([]byte{0x7e, 0x00, 0x41}, ngap.RRCMOSignalling, &s1); err != nil {
		t.Fatal(err)
	}
	a.recv()
	a.send(0, &ngap.Paging{UEPagingIdentity: s1, TAIListForPaging: []identity.TAI{here}})
	settle(4)

	// The identity moves with SetPagingIdentity: s1 now names u2's port,
	// which is idle.
	p2.SetPagingIdentity(&s1)
	a.send(0, &ngap.Paging{UEPagingIdentity: s1, TAIListForPaging: []identity.TAI{here}})
	u2.wait(t)
	// nil clears it: u2 no longer answers to s1 or s2.
	p2.SetPagingIdentity(nil)
	a.send(0, &ngap.Paging{UEPagingIdentity: s1, TAIListForPaging: []identity.TAI{here}})
	a.send(0, &ngap.Paging{UEPagingIdentity: s2, TAIListForPaging: []identity.TAI{here}})
	settle(7)

	if c := g.Counters(); c.Pagings != 7 || c.PagedUEs != 2 || c.ErrorIndications != 0 {
		t.Fatalf("counters %+v", c)
	}
	if len(u1.pagedAt) != 0 || len(u2.eventList()) != 2 {
		t.Fatalf("u1 paged %v; u2 events %v", u1.pagedAt, u2.eventList())
	}
}
