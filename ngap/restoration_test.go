package ngap

import (
	"reflect"
	"strings"
	"testing"

	"github.com/free5gc/ngap/ie"
	f5 "github.com/free5gc/ngap/message"

	"github.com/tern5g/tern/identity"
)

// sampleRestorationMessages returns NG Reset and RAN Configuration Update
// messages, each with all its optional IEs and with none.
func sampleRestorationMessages(diag *CriticalityDiagnostics) []Message {
	drx := PagingDRX256
	ttw := TimeToWait20s
	gid := GlobalGNBID{PLMN: plmn3, GNBID: 0x3FFFFF, BitLen: 22}
	return []Message{
		// whole NG interface
		&NGReset{Cause: Cause{CauseMisc, MiscOMIntervention}},
		// part of it: both IDs, AMF UE NGAP ID only, RAN UE NGAP ID only
		&NGReset{Cause: Cause{CauseTransport, TransportUnspecified}, Connections: []UEConnection{
			{AMFUENGAPID: i64(1<<40 - 1), RANUENGAPID: i64(1<<32 - 1)},
			{AMFUENGAPID: i64(7)},
			{RANUENGAPID: i64(0)},
		}},
		&NGResetAcknowledge{},
		&NGResetAcknowledge{Connections: []UEConnection{{AMFUENGAPID: i64(3), RANUENGAPID: i64(5)}, {RANUENGAPID: i64(9)}},
			CriticalityDiagnostics: diag},
		&RANConfigurationUpdate{},
		&RANConfigurationUpdate{
			RANNodeName: "tern-gnb-2",
			SupportedTAs: []SupportedTA{
				{TAC: 2, BroadcastPLMNs: []BroadcastPLMN{{PLMN: plmn, Slices: []identity.SNSSAI{sl1}}}},
				{TAC: 0xFFFFFF, BroadcastPLMNs: []BroadcastPLMN{{PLMN: plmn3, Slices: []identity.SNSSAI{sl2}}, {PLMN: plmn, Slices: []identity.SNSSAI{sl1, sl2}}}},
			},
			DefaultPagingDRX: &drx,
			GlobalRANNodeID:  &gid,
		},
		&RANConfigurationUpdateAcknowledge{},
		&RANConfigurationUpdateAcknowledge{CriticalityDiagnostics: diag},
		&RANConfigurationUpdateFailure{Cause: Cause{CauseMisc, MiscUnknownPLMNOrSNPN}},
		&RANConfigurationUpdateFailure{Cause: Cause{CauseProtocol, ProtocolSemanticError}, TimeToWait: &ttw, CriticalityDiagnostics: diag},
	}
}

// TestRestorationFree5GCReadsOurs checks the choice and list that only
// these messages carry as free5gc's decoder reads them: Reset Type
// NG interface / part of NG interface with each item's IDs, and the
// acknowledged list.
func TestRestorationFree5GCReadsOurs(t *testing.T) {
	msgs := sampleRestorationMessages(nil)
	parse := func(m Message) f5.Message {
		t.Helper()
		b, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		x, err := f5.Parse(b)
		if err != nil {
			t.Fatalf("free5gc Parse(%T): %v", m, err)
		}
		return x
	}
	all := expectF5[*f5.NGReset](t, parse(msgs[0]))
	if _, ok := all.ResetType.Choice.(*ie.ResetAll); !ok {
		t.Errorf("whole-interface reset reads as %T", all.ResetType.Choice)
	}
	part := expectF5[*f5.NGReset](t, parse(msgs[1]))
	l, ok := part.ResetType.Choice.(*ie.UEAssociatedLogicalNGConnectionList)
	if !ok || len(l.List) != 3 {
		t.Fatalf("partial reset reads as %+v", part.ResetType.Choice)
	}
	if it := l.List[0]; it.AMFUENGAPID == nil || it.AMFUENGAPID.Value != 1<<40-1 || it.RANUENGAPID == nil || it.RANUENGAPID.Value != 1<<32-1 {
		t.Errorf("item 0: %+v", it)
	}
	if it := l.List[1]; it.AMFUENGAPID == nil || it.AMFUENGAPID.Value != 7 || it.RANUENGAPID != nil {
		t.Errorf("item 1: %+v", it)
	}
	if it := l.List[2]; it.AMFUENGAPID != nil || it.RANUENGAPID == nil || it.RANUENGAPID.Value != 0 {
		t.Errorf("item 2: %+v", it)
	}
	if ack := expectF5[*f5.NGResetAcknowledge](t, parse(msgs[2])); ack.UEAssociatedLogicalNGConnectionList != nil {
		t.Error("acknowledge of a whole reset carries a list")
	}
	ack := expectF5[*f5.NGResetAcknowledge](t, parse(msgs[3]))
	if ack.UEAssociatedLogicalNGConnectionList == nil || len(ack.UEAssociatedLogicalNGConnectionList.List) != 2 {
		t.Errorf("acknowledged list %+v", ack.UEAssociatedLogicalNGConnectionList)
	}
	upd := expectF5[*f5.RANConfigurationUpdate](t, parse(msgs[5]))
	if upd.SupportedTAList == nil || len(upd.SupportedTAList.List) != 2 || upd.DefaultPagingDRX == nil || upd.GlobalRANNodeID == nil {
		t.Errorf("RAN configuration update %+v", upd)
	}
}

func expectF5[T f5.Message](t *testing.T, x f5.Message) T {
	t.Helper()
	v, ok := x.(T)
	if !ok {
		t.Fatalf("free5gc reads %T", x)
	}
	return v
}

func TestRestorationEncodeRejectsBadInput(t *testing.T) {
	bad := []Message{
		// a partial reset lists at least one connection (TS 38.413 §9.2.6.11)
		&NGReset{Cause: Cause{CauseMisc, MiscOMIntervention}, Connections: []UEConnection{}},
		&NGReset{Cause: Cause{CauseMisc, MiscOMIntervention}, Connections: []UEConnection{{}}},
		&NGReset{Cause: Cause{CauseMisc, MiscOMIntervention}, Connections: []UEConnection{{AMFUENGAPID: i64(1 << 40)}}},
		&NGReset{Cause: Cause{CauseMisc, MiscOMIntervention}, Connections: []UEConnection{{RANUENGAPID: i64(-1)}}},
		&NGReset{Cause: Cause{Group: 9}},
		&NGResetAcknowledge{Connections: []UEConnection{{}}},
		&RANConfigurationUpdate{SupportedTAs: []SupportedTA{}},
		&RANConfigurationUpdate{SupportedTAs: []SupportedTA{{TAC: 1}}},
		&RANConfigurationUpdate{GlobalRANNodeID: &GlobalGNBID{PLMN: plmn, GNBID: 1, BitLen: 21}},
		&RANConfigurationUpdateFailure{Cause: Cause{Group: 9}},
	}
	for _, m := range bad {
		if _, err := Encode(m); err == nil {
			t.Errorf("Encode(%+v) succeeded", m)
		}
	}
}

// TestRestorationDecodeRejects: a partial reset with an empty list, which
// free5gc builds but TS 38.413 §9.2.6.11 does not allow (1..65536 items),
// is a semantic error of the NG Reset procedure.
func TestRestorationDecodeRejects(t *testing.T) {
	x := &f5.NGReset{
		Cause:     &ie.Cause{Choice: &ie.CauseMisc{Value: ie.CauseMiscPresentOmIntervention}},
		ResetType: &ie.ResetType{Choice: &ie.UEAssociatedLogicalNGConnectionList{}},
	}
	b, err := x.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	de := decodeErr(t, b)
	if de.Cause != (Cause{CauseProtocol, ProtocolSemanticError}) || !de.ProcedureKnown || de.ProcedureCode != ProcNGReset {
		t.Errorf("got %+v", de)
	}
}

// TestTsharkDissectsRestoration has Wireshark read NG Reset and RAN
// Configuration Update: nothing malformed, and the reset type, the listed
// IDs and the supported TAs read as we meant them.
func TestTsharkDissectsRestoration(t *testing.T) {
	pc := ProcNGReset
	msgs := sampleRestorationMessages(&CriticalityDiagnostics{ProcedureCode: &pc})
	pkts := tsharkDissect(t, msgs, "ngap.procedureCode", "_ws.malformed", "_ws.expert.message",
		"ngap.ResetType", "ngap.AMF_UE_NGAP_ID", "ngap.RAN_UE_NGAP_ID", "ngap.tAC", "ngap.PagingDRX", "ngap.RANNodeName")
	checkTsharkClean(t, msgs, pkts)
	want := [][]string{
		{"0", "", "", "", "", ""},
		{"1", "1099511627775,7", "4294967295,0", "", "", ""},
		{"", "", "", "", "", ""},
		{"", "3", "5,9", "", "", ""},
		{"", "", "", "", "", ""},
		{"", "", "", "2,16777215", "3", "tern-gnb-2"},
	}
	for i, w := range want {
		if got := pkts[i][3:]; !reflect.DeepEqual(got, w) {
			t.Errorf("%T #%d: tshark reads %q, want %q", msgs[i], i, strings.Join(got, "|"), strings.Join(w, "|"))
		}
	}
}

// TestNGResetItemWithoutIDs: an item that names no ID decodes (TS 38.413
// §8.7.4.2.1 lets the answer leave it out), but tern never sends one.
func TestNGResetItemWithoutIDs(t *testing.T) {
	x := &f5.NGReset{
		Cause: &ie.Cause{Choice: &ie.CauseMisc{Value: ie.CauseMiscPresentOmIntervention}},
		ResetType: &ie.ResetType{Choice: &ie.UEAssociatedLogicalNGConnectionList{
			List: []ie.UEAssociatedLogicalNGConnectionItem{{}, {RANUENGAPID: &ie.RANUENGAPID{Value: 4}}}}},
	}
	b, err := x.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	want := &NGReset{Cause: Cause{CauseMisc, MiscOMIntervention}, Connections: []UEConnection{{}, {RANUENGAPID: i64(4)}}}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("got %+v, want %+v", m, want)
	}
	if _, err := Encode(m); err == nil {
		t.Error("an item without IDs encodes")
	}
}
