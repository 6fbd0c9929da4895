package classify_test

import (
	"errors"
	"testing"

	"github.com/tern5g/tern/classify"
)

// RankedTuple keeps PDRs with PDI fields and plain SDF rules in two
// engines: IDs must stay unique across both, deletes must find either,
// and the better rule wins whichever engine holds it.
func TestRankedTupleEnginesShareIDsAndRanks(t *testing.T) {
	ue := classify.PrefixFrom4(0x0a000001, 32)
	pdr := classify.Rule{ID: 1, Precedence: 20, Has: classify.FieldTEID | classify.FieldSourceInterface, TEID: 7, UEIP: ue}
	sdf := classify.Rule{ID: 2, Precedence: 10, DstIP: classify.PrefixFrom4(0x0a000000, 8)}
	c, err := classify.NewRankedTuple([]classify.Rule{pdr, sdf})
	if err != nil {
		t.Fatal(err)
	}
	h := classify.Header{UEIP: ue.Addr, DstIP: ue.Addr, SrcIP: classify.AddrFrom4(0x08080808), TEID: 7}
	if id, ok := c.Lookup(&h); !ok || id != 2 {
		t.Fatalf("lookup: got %d,%v, want the SDF rule 2", id, ok)
	}
	dupPlain := sdf
	dupPlain.ID = 1 // ID of the PDR, in the other engine
	if err := c.Insert(dupPlain); !errors.Is(err, classify.ErrDuplicateID) {
		t.Errorf("plain rule with a PDR's ID: %v, want ErrDuplicateID", err)
	}
	dupPDR := pdr
	dupPDR.ID = 2
	if err := c.Insert(dupPDR); !errors.Is(err, classify.ErrDuplicateID) {
		t.Errorf("PDR with a plain rule's ID: %v, want ErrDuplicateID", err)
	}
	if err := c.Delete(2); err != nil {
		t.Fatal(err)
	}
	if id, ok := c.Lookup(&h); !ok || id != 1 {
		t.Fatalf("after deleting 2: got %d,%v, want the PDR 1", id, ok)
	}
	better := pdr
	better.ID, better.Precedence = 3, 5
	if err := c.Insert(better); err != nil {
		t.Fatal(err)
	}
	if id, ok := c.Lookup(&h); !ok || id != 3 {
		t.Fatalf("after inserting 3: got %d,%v, want 3", id, ok)
	}
	if n := c.Len(); n != 2 {
		t.Errorf("Len %d, want 2", n)
	}
	for _, id := range []uint32{1, 3} {
		if err := c.Delete(id); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Delete(1); !errors.Is(err, classify.ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
	if _, ok := c.Lookup(&h); ok || c.Len() != 0 {
		t.Errorf("emptied classifier still matches or counts %d rules", c.Len())
	}
}
