package upfc

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/sbi/wire"
	"github.com/tern5g/tern/upf/rules"
)

var (
	smf2Node  = pfcp.NodeID{FQDN: "smf2.example.org"}
	smfPeer   = netip.MustParseAddrPort("10.0.0.1:8805")
	recovered = time.Unix(1_790_000_000, 0)
	pools     = map[string]netip.Prefix{"internet": netip.MustParsePrefix("10.60.0.0/16"), "ims": netip.MustParsePrefix("10.61.0.0/16")}
)

// peerCP is a ControlPlane that names the SMF's PFCP address, as the UDP
// binding's does.
type peerCP struct {
	*fakeCP
	peer netip.AddrPort
}

func (p peerCP) Peer() netip.AddrPort { return p.peer }

// recordConfig is the configuration of the instances the record tests
// compare: the records' identity must match.
func recordConfig(rec Recorder) Config {
	return Config{NodeID: upfNode, N3Addr: n3Addr, NetworkInstances: []string{"internet", "ims"}, NetworkPools: pools,
		TEIDPlaces: 64, RecoveryTime: recovered, Recorder: rec}
}

// newRecordedUPFC is UPF-C with two associations: smfNode over "UDP"
// (its ControlPlane names its address), smf2Node in-process.
func newRecordedUPFC(t testing.TB, rec Recorder) (*UPFC, *fakeDP, *fakeCP) {
	t.Helper()
	dp := &fakeDP{}
	cp := &fakeCP{reports: make(chan sentReport, 64)}
	c := New(recordConfig(rec), dp, nil)
	ctx := context.Background()
	if r := c.HandleAssociationSetup(ctx, peerCP{cp, smfPeer}, &pfcp.AssociationSetupRequest{NodeID: smfNode,
		RecoveryTime: recovered.Add(-time.Hour), CPFunctionFeatures: 0x0102}); r.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("association setup: %v", r.Cause)
	}
	cp2 := &fakeCP{reports: make(chan sentReport, 64)}
	if r := c.HandleAssociationSetup(ctx, cp2, &pfcp.AssociationSetupRequest{NodeID: smf2Node,
		RecoveryTime: recovered.Add(-2 * time.Hour)}); r.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("association setup: %v", r.Cause)
	}
	return c, dp, cp
}

// ueEstablishment is establishment for UE address ue.
func ueEstablishment(cpSEID uint64, ue string) *pfcp.SessionEstablishmentRequest {
	req := establishment(cpSEID)
	a := netip.MustParseAddr(ue)
	req.CreatePDRs[0].PDI.UEIP = &pfcp.UEIPAddress{IPv4: a}
	req.CreatePDRs[1].PDI.UEIP = &pfcp.UEIPAddress{IPv4: a, Destination: true}
	return req
}

// rich are the sessions richState leaves, by what they show.
type rich struct {
	reported, quota, periodic, cpTEID, stopped, multi uint64
}

// richState drives c (newRecordedUPFC) through real procedures into
// sessions in varied states.
func richState(t testing.TB, c *UPFC, dp *fakeDP, cp *fakeCP) rich {
	t.Helper()
	ctx := context.Background()
	var r rich

	// Traffic, a threshold report (UR-SEQN 0 sent), more traffic not
	// reported yet, an MBR change.
	r.reported = establish(t, c, ueEstablishment(0x11, "10.60.0.1")).UPFSEID.SEID
	forwardTo(t, c, r.reported, 0x100)
	u := urrOf(t, dp, r.reported, 1)
	u.Counters.Add(rules.Uplink, 1000)
	u.Counters.Add(rules.Downlink, 600)
	use := u.Counters.Load()
	c.Report(r.reported, rules.Report{Kind: rules.ReportUsage, Usage: rules.UsageVolumeThreshold, PDRID: 1, URRID: 1,
		Volume: use.Volume, ULPackets: use.ULPackets, DLPackets: use.DLPackets})
	waitReport(t, cp)
	u.Counters.Add(rules.Downlink, 300)
	if m := c.HandleSessionModification(ctx, r.reported, &pfcp.SessionModificationRequest{
		UpdateQERs: []pfcp.UpdateQER{{ID: 1, MBR: &pfcp.BitRate{UL: 4000, DL: 64000}}}}); m.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("QER update: %v", m.Cause)
	}

	// A volume quota used up and reported.
	req := ueEstablishment(0x12, "10.60.0.2")
	req.CreateURRs[0].Triggers = pfcp.TriggerVolumeQuota | pfcp.TriggerVolumeThreshold
	req.CreateURRs[0].VolumeQuota = &pfcp.Volume{Total: 1000, HasTotal: true}
	r.quota = establish(t, c, req).UPFSEID.SEID
	q := urrOf(t, dp, r.quota, 1)
	for range 10 {
		q.Counters.Add(rules.Uplink, 100)
	}
	use = q.Counters.Load()
	c.Report(r.quota, rules.Report{Kind: rules.ReportUsage, Usage: rules.UsageVolumeQuota, PDRID: 1, URRID: 1,
		Volume: use.Volume, ULPackets: use.ULPackets})
	waitReport(t, cp)

	// Periodic reporting running (an hour: it does not fire here).
	req = ueEstablishment(0x13, "10.60.0.3")
	req.CreateURRs[0].Triggers = pfcp.TriggerPeriodic
	req.CreateURRs[0].MeasurementPeriod = time.Hour
	r.periodic = establish(t, c, req).UPFSEID.SEID

	// An F-TEID the CP chose, FARs without a Network Instance (the UE
	// address picks "ims").
	r.cpTEID = establish(t, c, simulatorEstablishment(t, 0x14, 0x5000, "10.61.0.4")).UPFSEID.SEID

	// A tunnel stopped by a GTP-U Error Indication: the FAR buffers.
	r.stopped = establish(t, c, ueEstablishment(0x15, "10.60.0.5")).UPFSEID.SEID
	forwardTo(t, c, r.stopped, 0x300)
	c.Report(r.stopped, rules.Report{Kind: rules.ReportErrorIndication, RemoteTEID: 0x300, RemotePeer: gnbAddr})
	waitReport(t, cp)

	// The other association's session: two uplink PDRs sharing a CHOOSE
	// ID, SDF filters, a closed gate with GBR, a URR without triggers.
	req = ueEstablishment(0x16, "10.60.0.6")
	req.NodeID = smf2Node
	req.CreatePDRs = append(req.CreatePDRs,
		pfcp.CreatePDR{ID: 3, Precedence: 10, FARID: 1, QERIDs: []uint32{2}, PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceAccess,
			FTEID: &pfcp.FTEID{Choose: true, ChooseID: 1}, UEIP: &pfcp.UEIPAddress{IPv4: netip.MustParseAddr("10.60.0.6")}, QFIs: []uint8{5},
			SDFFilters: []pfcp.SDFFilter{{FlowDescription: "permit out 17 from 198.51.100.0/24 5060 to assigned", ID: 7}}},
			OuterHeaderRemoval: ptr(pfcp.OuterHeaderRemovalGTPUUDPIPv4)},
		pfcp.CreatePDR{ID: 4, Precedence: 10, FARID: 2, URRIDs: []uint32{2}, PDI: pfcp.PDI{SourceInterface: pfcp.InterfaceCore,
			UEIP:       &pfcp.UEIPAddress{IPv4: netip.MustParseAddr("10.60.0.6"), Destination: true},
			SDFFilters: []pfcp.SDFFilter{{FlowDescription: "permit out 6 from 203.0.113.0/24 80,443 to assigned"}}}})
	req.CreateQERs = append(req.CreateQERs, pfcp.CreateQER{ID: 2, QFI: 5, Gate: pfcp.GateStatus{ULClosed: true},
		GBR: &pfcp.BitRate{UL: 64, DL: 64}, MBR: &pfcp.BitRate{UL: 128}})
	req.CreateURRs = append(req.CreateURRs, pfcp.CreateURR{ID: 2, Method: pfcp.MethodVolume | pfcp.MethodDuration})
	r.multi = establish(t, c, req).UPFSEID.SEID

	// A rejected establishment and a deleted session move the SEID
	// allocator past IDs no session holds.
	bad := ueEstablishment(0x17, "10.60.0.7")
	bad.CreateFARs = nil
	if resp := c.HandleSessionEstablishment(ctx, bad); resp.Cause == pfcp.CauseRequestAccepted {
		t.Fatal("establishment without FAR accepted")
	}
	gone := establish(t, c, ueEstablishment(0x18, "10.60.0.8")).UPFSEID.SEID
	if resp := c.HandleSessionDeletion(ctx, gone); resp.Cause != pfcp.CauseRequestAccepted {
		t.Fatalf("deletion: %v", resp.Cause)
	}
	return r
}

func encodeRecord(t testing.TB, r *Record) []byte {
	t.Helper()
	b, err := wire.Append(nil, r)
	if err != nil {
		t.Fatalf("encode %+v: %v", r, err)
	}
	return b
}

func encodeRecords(t testing.TB, recs []Record) [][]byte {
	t.Helper()
	out := make([][]byte, len(recs))
	for i := range recs {
		out[i] = encodeRecord(t, &recs[i])
	}
	return out
}

func decodeRecords(t testing.TB, msgs [][]byte) []Record {
	t.Helper()
	out := make([]Record, len(msgs))
	for i, m := range msgs {
		if err := wire.Decode(m, &out[i]); err != nil {
			t.Fatalf("decode record %d: %v", i, err)
		}
	}
	return out
}

func sessionOf(recs []Record, seid uint64) *SessionRecord {
	for _, r := range recs {
		if r.Session != nil && r.Session.SEID == seid {
			return r.Session
		}
	}
	return nil
}

// Every record of sessions in varied states encodes with wire and decodes
// to an equal record, which encodes to the same bytes.
func TestRecordsRoundTrip(t *testing.T) {
	c, dp, cp := newRecordedUPFC(t, nil)
	ids := richState(t, c, dp, cp)
	recs := c.Records()
	if len(recs) != 1+2+6 {
		t.Fatalf("%d records, want the node, 2 associations and 6 sessions", len(recs))
	}

	// The states are the ones meant.
	if n := recs[0].Node; n == nil || n.Seq == 0 || !n.Recovery.Equal(recovered) || n.NextSEID == 0 || n.NextTEID == 0 {
		t.Errorf("node record %+v", recs[0].Node)
	}
	if a := recs[1].Association; a == nil || a.NodeID != smfNode || a.Peer != smfPeer || a.Features != 0x0102 || a.Seq != 1 {
		t.Errorf("association record %+v", recs[1].Association)
	}
	if a := recs[2].Association; a == nil || a.NodeID != smf2Node || a.Peer.IsValid() {
		t.Errorf("association record %+v", recs[2].Association)
	}
	rep := sessionOf(recs, ids.reported)
	if u := rep.URRs[0]; u.SEQN != 1 || u.Unreported != (rules.Usage{Volume: rules.Volume{Total: 300, DL: 300}, DLPackets: 1}) || u.Start.IsZero() {
		t.Errorf("reported URR %+v", u)
	}
	if rep.QERs[0].MBR.DL != 64000 || rep.FARs[1].Forwarding.OuterHeaderCreation.TEID != 0x100 || rep.PDRs[0].TEID == 0 || !rep.PDRs[0].Rule.PDI.FTEID.Choose {
		t.Errorf("reported session's rules %+v", rep)
	}
	if u := sessionOf(recs, ids.quota).URRs[0]; !u.QuotaSpent || u.SEQN != 1 {
		t.Errorf("quota URR %+v", u)
	}
	if u := sessionOf(recs, ids.periodic).URRs[0]; u.PeriodicDue.Before(time.Now().Add(59 * time.Minute)) {
		t.Errorf("periodic URR %+v", u)
	}
	if s := sessionOf(recs, ids.cpTEID); s.PDRs[0].TEID != 0x5000 || s.PDRs[0].Rule.PDI.FTEID.Choose || s.FARs[0].Forwarding.NetworkInstance != "ims" {
		t.Errorf("session with the CP's F-TEID %+v", s)
	}
	if s := sessionOf(recs, ids.stopped); s.FARs[1].ApplyAction&pfcp.ActionBuffer == 0 {
		t.Errorf("stopped tunnel's FAR %+v", s.FARs[1])
	}
	if s := sessionOf(recs, ids.multi); s.Association != smf2Node.String() || len(s.PDRs) != 4 || s.PDRs[0].TEID != s.PDRs[2].TEID ||
		len(s.URRs) != 2 || s.BAR == nil {
		t.Errorf("multi-rule session %+v", s)
	}

	for i, b := range encodeRecords(t, recs) {
		var got Record
		if err := wire.Decode(b, &got); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, recs[i]) {
			t.Errorf("record %d decodes to\n%+v\nwant\n%+v", i, got, recs[i])
		}
		if again := encodeRecord(t, &got); !bytes.Equal(again, b) {
			t.Errorf("record %d encodes differently after a round trip", i)
		}
	}
}

// recordMap says, for every field of UPF-C's state, which record field
// holds it; recordExcluded why a field is not recorded. The completeness
// test walks the state types: a field added to one of them and to neither
// table fails it.
var recordMap = map[string]string{
	"UPFC.recovery": "NodeRecord.Recovery",
	"UPFC.assocs":   "AssociationRecord",
	"UPFC.sessions": "SessionRecord",
	"UPFC.nextSEID": "NodeRecord.NextSEID",
	"UPFC.nextTEID": "NodeRecord.NextTEID",
	"UPFC.seq":      "NodeRecord.Seq",

	"association.nodeID":   "AssociationRecord.NodeID",
	"association.peer":     "AssociationRecord.Peer",
	"association.recovery": "AssociationRecord.Recovery",
	"association.features": "AssociationRecord.Features",
	"association.seq":      "AssociationRecord.Seq",

	"session.seid":    "SessionRecord.SEID",
	"session.cpFSEID": "SessionRecord.CPFSEID",
	"session.assoc":   "SessionRecord.Association",
	"session.pdrs":    "SessionRecord.PDRs",
	"session.fars":    "SessionRecord.FARs",
	"session.qers":    "SessionRecord.QERs",
	"session.urrs":    "SessionRecord.URRs",
	"session.bar":     "SessionRecord.BAR",
	"session.seq":     "SessionRecord.Seq",

	"pdrState.spec": "PDRRecord.Rule",
	"pdrState.teid": "PDRRecord.TEID",
	"farState.spec": "SessionRecord.FARs",
	"qerState.spec": "SessionRecord.QERs",
	"urrState.spec": "URRRecord.Rule",
	// The usage since base is what is recorded; a restored URR counts
	// on from it with base at zero.
	"urrState.counters": "URRRecord.Unreported",
	"urrState.track":    "URRRecord",

	"urrTrack.seqn":       "URRRecord.SEQN",
	"urrTrack.start":      "URRRecord.Start",
	"urrTrack.base":       "URRRecord.Unreported",
	"urrTrack.quotaSpent": "URRRecord.QuotaSpent",
	"urrTrack.due":        "URRRecord.PeriodicDue",
}

var recordExcluded = map[string]string{
	"UPFC.cfg":      "configuration, given to New; the identity peers hold (Node ID, N3 and N4 addresses) is in NodeRecord and checked by Restore",
	"UPFC.dp":       "plumbing: the data path",
	"UPFC.log":      "plumbing: the logger",
	"UPFC.features": "derived from the configuration",
	"UPFC.mu":       "plumbing: the lock",
	"UPFC.teids":    "derived: the PDRs' TEIDs (PDRRecord.TEID)",
	"UPFC.places":   "derived from teids",
	"UPFC.restored": "a statistic of this process",
	"UPFC.repeated": "a statistic of this process",
	"UPFC.byCP":     "derived: the sessions' associations and CP F-SEIDs (SessionRecord.Association, CPFSEID)",
	"UPFC.step":     "plumbing: what the running step changed, empty between steps",
	"UPFC.reports":  "reports in flight: raised again from the state (dueReports, NOCP) or by path supervision",
	"UPFC.held":     "reports in flight, waiting for Attach",

	"association.cp": "the connection: detached on restore, bound by Attach",

	"session.cpSEID":   "derived: CPFSEID.SEID",
	"session.snapshot": "derived: compiled from the rules",

	"pdrState.filters": "derived: parsed from the PDI's SDF filters",
	"qerState.mbrUL":   "derived from the MBR; the bucket's fill is not recorded (record.go)",
	"qerState.mbrDL":   "derived from the MBR; the bucket's fill is not recorded (record.go)",
	"urrTrack.period":  "derived from the URR's PERIO and Measurement Period",
	"urrTrack.timer":   "plumbing: re-armed from PeriodicDue",
}

// A field of UPF-C's state that is neither recorded nor excluded with a
// reason fails: "fails when a field is added to a context but not to its
// record" (issue 36 §1).
func TestRecordCompleteness(t *testing.T) {
	contexts := []reflect.Type{reflect.TypeFor[UPFC](), reflect.TypeFor[association](), reflect.TypeFor[session](),
		reflect.TypeFor[pdrState](), reflect.TypeFor[farState](), reflect.TypeFor[qerState](), reflect.TypeFor[urrState](),
		reflect.TypeFor[urrTrack]()}
	records := map[string]reflect.Type{}
	for _, r := range []reflect.Type{reflect.TypeFor[NodeRecord](), reflect.TypeFor[AssociationRecord](), reflect.TypeFor[SessionRecord](),
		reflect.TypeFor[PDRRecord](), reflect.TypeFor[URRRecord]()} {
		records[r.Name()] = r
	}
	seen := map[string]bool{}
	for _, ct := range contexts {
		for f := range ct.Fields() {
			key := ct.Name() + "." + f.Name
			seen[key] = true
			to, mapped := recordMap[key]
			why, excluded := recordExcluded[key]
			switch {
			case mapped && excluded:
				t.Errorf("%s is both recorded (%s) and excluded (%s)", key, to, why)
			case !mapped && !excluded:
				t.Errorf("%s is neither in a record (recordMap) nor excluded with a reason (recordExcluded)", key)
			case excluded && strings.TrimSpace(why) == "":
				t.Errorf("%s is excluded without a reason", key)
			case mapped:
				typ, field, _ := strings.Cut(to, ".")
				rt, ok := records[typ]
				if !ok {
					t.Errorf("%s maps to %s: no record type %s", key, to, typ)
				} else if _, ok := rt.FieldByName(field); field != "" && !ok {
					t.Errorf("%s maps to %s: %s has no field %s", key, to, typ, field)
				}
			}
		}
	}
	for _, table := range []map[string]string{recordMap, recordExcluded} {
		for key := range table {
			if !seen[key] {
				t.Errorf("%s is in a table but is no field of the state", key)
			}
		}
	}
}

// left is what remains of a threshold or quota v of URR u: v minus the
// counts, per field that v has.
func left(v rules.Volume, u *rules.URR) [3]int64 {
	n := u.Counters.Load().Volume
	var out [3]int64
	for i, f := range [][2]uint64{{v.Total, n.Total}, {v.UL, n.UL}, {v.DL, n.DL}} {
		if f[0] != 0 {
			out[i] = int64(f[0]) - int64(f[1])
		}
	}
	return out
}

// freshUPFC is a new instance with the configuration of newRecordedUPFC,
// holding nothing.
func freshUPFC(rec Recorder) (*UPFC, *fakeDP) {
	dp := &fakeDP{}
	cfg := recordConfig(rec)
	cfg.RecoveryTime = recovered.Add(time.Hour) // its own would be later; Restore takes the records'
	return New(cfg, dp, nil), dp
}

// Records restored into a fresh instance are that instance's records,
// byte for byte; the restored sessions serve PFCP; the allocators go on
// where the recorded instance's were and hand out nothing a restored
// session holds.
func TestRestoreEquivalence(t *testing.T) {
	a, dpA, cpA := newRecordedUPFC(t, nil)
	ids := richState(t, a, dpA, cpA)
	encA := encodeRecords(t, a.Records())

	b, dpB := freshUPFC(nil)
	if err := b.Restore(decodeRecords(t, encA)); err != nil {
		t.Fatalf("restore: %v", err)
	}
	encB := encodeRecords(t, b.Records())
	if len(encB) != len(encA) {
		t.Fatalf("%d records restored, %d recorded", len(encB), len(encA))
	}
	for i := range encA {
		if !bytes.Equal(encA[i], encB[i]) {
			t.Errorf("record %d differs after restore:\n%+v\nrecorded\n%+v", i, decodeRecords(t, encB[i:i+1])[0], decodeRecords(t, encA[i:i+1])[0])
		}
	}
	if !b.RecoveryTime().Equal(a.RecoveryTime()) {
		t.Errorf("restored Recovery Time Stamp %v, recorded %v", b.RecoveryTime(), a.RecoveryTime())
	}
	stA, stB := a.Stats(), b.Stats()
	if stB.Associations != stA.Associations || stB.Sessions != stA.Sessions || stB.PDRs != stA.PDRs || stB.TEIDs != stA.TEIDs ||
		stB.URRs != stA.URRs || stB.BARs != stA.BARs {
		t.Errorf("restored stats %+v, recorded %+v", stB, stA)
	}
	held := map[uint32]bool{}
	for seid, sa := range dpA.installed {
		sb := dpB.get(seid)
		if sb == nil || !slices.Equal(sb.TEIDs, sa.TEIDs) || sb.UEIPv4 != sa.UEIPv4 || sb.CPSEID != sa.CPSEID || len(sb.PDRs) != len(sa.PDRs) {
			t.Errorf("data path snapshot of %#x: restored %+v, recorded %+v", seid, sb, sa)
			continue
		}
		for i, p := range sa.PDRs {
			q := sb.PDRs[i]
			if q.ID != p.ID || !reflect.DeepEqual(q.FAR, p.FAR) || len(q.URRs) != len(p.URRs) {
				t.Errorf("session %#x PDR %d: restored %+v FAR %+v, recorded %+v FAR %+v", seid, p.ID, q, q.FAR, p, p.FAR)
			}
			for j, u := range p.URRs {
				// The counters restart from the usage not reported: what
				// is left to each threshold and quota is the same.
				v := q.URRs[j]
				if left(v.Threshold, v) != left(u.Threshold, u) || left(v.Quota, v) != left(u.Quota, u) || v.QuotaSpent != u.QuotaSpent ||
					v.QuotaExhausted(rules.Uplink) != u.QuotaExhausted(rules.Uplink) {
					t.Errorf("session %#x URR %d: restored %+v, recorded %+v", seid, u.ID, v, u)
				}
			}
		}
		for _, teid := range sa.TEIDs {
			held[teid] = true
		}
	}

	// A PFCP modification of a restored session: the gNB tunnel moves, and
	// the Query URR reports what the recorded instance counted and had
	// not reported, with the next UR-SEQN.
	ctx := context.Background()
	m := b.HandleSessionModification(ctx, ids.reported, &pfcp.SessionModificationRequest{
		UpdateFARs: []pfcp.UpdateFAR{{ID: 2, Forwarding: &pfcp.UpdateForwardingParameters{NoDestination: true,
			OuterHeaderCreation: &pfcp.OuterHeaderCreation{Description: pfcp.OuterHeaderCreationGTPUUDPIPv4, TEID: 0x101, IPv4: gnbAddr}}}},
		QueryURRs: []uint32{1},
	})
	if m.Cause != pfcp.CauseRequestAccepted || len(m.UsageReports) != 1 {
		t.Fatalf("modification of a restored session: %v %+v", m.Cause, m.UsageReports)
	}
	if ur := m.UsageReports[0]; ur.URSEQN != 1 || ur.Volume.Total != 300 || ur.Volume.DL != 300 || ur.Volume.UL != 0 {
		t.Errorf("usage report of a restored URR %+v, want UR-SEQN 1 and the 300 bytes not reported", ur)
	}
	if f := dlFAR(t, dpB, ids.reported); f.Encap == nil || f.Encap.TEID != 0x101 {
		t.Errorf("restored session's downlink FAR after modification %+v", f)
	}
	if d := b.HandleSessionDeletion(ctx, ids.multi); d.Cause != pfcp.CauseRequestAccepted || len(d.UsageReports) != 2 {
		t.Errorf("deletion of a restored session: %v %+v", d.Cause, d.UsageReports)
	}
	// A goes the same way, so that both hold the same TEIDs.
	forwardTo(t, a, ids.reported, 0x101)
	a.HandleSessionDeletion(ctx, ids.multi)

	// The allocators go on where A's were: the same request gets the
	// same SEID and F-TEID from both, none that a restored session holds.
	for i := range 200 {
		ra := establish(t, a, ueEstablishment(uint64(0x1000+i), "10.60.1.1"))
		rb := establish(t, b, ueEstablishment(uint64(0x1000+i), "10.60.1.1"))
		teid := rb.CreatedPDRs[0].LocalFTEID.TEID
		if rb.UPFSEID.SEID != ra.UPFSEID.SEID || teid != ra.CreatedPDRs[0].LocalFTEID.TEID {
			t.Fatalf("establishment %d: restored instance allocated SEID %#x TEID %#x, recorded one %#x %#x",
				i, rb.UPFSEID.SEID, teid, ra.UPFSEID.SEID, ra.CreatedPDRs[0].LocalFTEID.TEID)
		}
		if held[teid] || dpA.get(rb.UPFSEID.SEID) == nil {
			t.Fatalf("establishment %d: TEID %#x or SEID %#x of a restored session handed out", i, teid, rb.UPFSEID.SEID)
		}
	}
	// The TEID a restored session's CP chose stays its own.
	resp := b.HandleSessionEstablishment(ctx, simulatorEstablishment(t, 0x2000, 0x5000, "10.61.0.9"))
	checkReject(t, "a restored session's TEID", resp.Cause, resp.OffendingIE, resp.FailedRuleID,
		expect{cause: pfcp.CauseRuleCreationModificationFailure, rule: ruleID(pfcp.RuleTypePDR, 1)})
}

// Restore refuses records that could not come from an instance like this
// one, and then holds nothing.
func TestRestoreRejectsBadRecords(t *testing.T) {
	a, dpA, cpA := newRecordedUPFC(t, nil)
	ids := richState(t, a, dpA, cpA)
	enc := encodeRecords(t, a.Records())
	idx := func(recs []Record, seid uint64) int {
		return slices.IndexFunc(recs, func(r Record) bool { return r.Session != nil && r.Session.SEID == seid })
	}
	cases := []struct {
		name    string
		corrupt func(recs []Record) []Record
	}{
		{"no node record", func(recs []Record) []Record { return recs[1:] }},
		{"two node records", func(recs []Record) []Record { return append(recs, recs[0]) }},
		{"another UPF's", func(recs []Record) []Record {
			recs[0].Node.NodeID = pfcp.NodeID{IP: netip.MustParseAddr("10.0.0.99")}
			return recs
		}},
		{"another N3 address", func(recs []Record) []Record {
			recs[0].Node.N3Addr = netip.MustParseAddr("10.100.3.99")
			return recs
		}},
		{"an empty record", func(recs []Record) []Record { return append(recs, Record{}) }},
		{"a record of two objects", func(recs []Record) []Record {
			recs[1].Session = recs[len(recs)-1].Session
			return recs
		}},
		{"a tombstone", func(recs []Record) []Record {
			recs[idx(recs, ids.quota)].Session.Deleted = true
			return recs
		}},
		{"session of an association not restored", func(recs []Record) []Record {
			return slices.Delete(recs, 2, 3) // smf2's association
		}},
		{"session twice", func(recs []Record) []Record { return append(recs, recs[len(recs)-1]) }},
		{"a TEID in two sessions", func(recs []Record) []Record {
			recs[idx(recs, ids.quota)].Session.PDRs[0].TEID = recs[idx(recs, ids.reported)].Session.PDRs[0].TEID
			return recs
		}},
		{"a PDR naming a FAR that is not there", func(recs []Record) []Record {
			recs[idx(recs, ids.periodic)].Session.PDRs[1].Rule.FARID = 99
			return recs
		}},
		{"a CP F-TEID that is not the TEID", func(recs []Record) []Record {
			recs[idx(recs, ids.cpTEID)].Session.PDRs[0].TEID = 0x5001
			return recs
		}},
		{"a CHOOSE F-TEID without its TEID", func(recs []Record) []Record {
			recs[idx(recs, ids.reported)].Session.PDRs[0].TEID = 0
			return recs
		}},
		{"periodic reporting without its deadline", func(recs []Record) []Record {
			recs[idx(recs, ids.periodic)].Session.URRs[0].PeriodicDue = time.Time{}
			return recs
		}},
		{"an SDF filter that does not parse", func(recs []Record) []Record {
			recs[idx(recs, ids.multi)].Session.PDRs[2].Rule.PDI.SDFFilters[0].FlowDescription = "permit sideways"
			return recs
		}},
		{"a FAR that forwards nowhere", func(recs []Record) []Record {
			recs[idx(recs, ids.stopped)].Session.FARs[0].Forwarding = nil
			return recs
		}},
	}
	for _, tc := range cases {
		b, dpB := freshUPFC(nil)
		err := b.Restore(tc.corrupt(decodeRecords(t, enc)))
		if !errors.Is(err, ErrBadRecord) {
			t.Errorf("%s: restore error %v, want ErrBadRecord", tc.name, err)
		}
		if st := b.Stats(); st.Associations != 0 || st.Sessions != 0 || st.TEIDs != 0 {
			t.Errorf("%s: a refused restore left %+v", tc.name, st)
		}
		if installs, _, _ := dpB.counts(); installs != 0 {
			t.Errorf("%s: a refused restore installed %d sessions", tc.name, installs)
		}
	}
	// Not into an instance that holds something.
	if err := a.Restore(decodeRecords(t, enc)); err == nil {
		t.Error("restore into a serving instance accepted")
	}
}

// recorder keeps the deltas a UPF-C hands it, encoded as they were.
type recorder struct {
	mu    sync.Mutex
	recs  []Record
	enc   [][]byte
	check func(Record) // called with UPF-C's lock held
}

func (r *recorder) Record(x Record) {
	b, err := wire.Append(nil, &x)
	if err != nil {
		panic(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, x)
	r.enc = append(r.enc, b)
	if r.check != nil {
		r.check(x)
	}
}

func (r *recorder) take() ([]Record, [][]byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	recs, enc := r.recs, r.enc
	r.recs, r.enc = nil, nil
	return recs, enc
}

// sessionDeltas are the deltas of session seid among recs.
func sessionDeltas(recs []Record, seid uint64) []*SessionRecord {
	var out []*SessionRecord
	for _, r := range recs {
		if r.Session != nil && r.Session.SEID == seid {
			out = append(out, r.Session)
		}
	}
	return out
}

// Each step hands the Recorder the records of what it changed, versions
// counting up by one, before its answer or report leaves; the last delta
// of an object is its record; a delete is a tombstone.
func TestRecorderDeltas(t *testing.T) {
	rec := &recorder{}
	c, dp, cp := newRecordedUPFC(t, rec)
	ctx := context.Background()
	recs, _ := rec.take()
	if len(recs) != 2 || recs[0].Association == nil || recs[0].Association.Seq != 1 || recs[1].Association == nil ||
		recs[1].Association.NodeID != smf2Node {
		t.Fatalf("association setups recorded %+v", recs)
	}

	seid := establish(t, c, ueEstablishment(0x21, "10.60.0.1")).UPFSEID.SEID
	recs, _ = rec.take()
	if len(recs) != 2 || recs[0].Node == nil || recs[0].Node.Seq != 1 || recs[1].Session == nil || recs[1].Session.Seq != 1 {
		t.Fatalf("establishment recorded %+v, want the allocators' node record and the session's first", recs)
	}
	forwardTo(t, c, seid, 0x100)
	// A rejected modification changes nothing: no delta.
	if m := c.HandleSessionModification(ctx, seid, &pfcp.SessionModificationRequest{
		UpdateFARs: []pfcp.UpdateFAR{{ID: 9, ApplyAction: ptr(pfcp.ActionDrop)}}}); m.Cause == pfcp.CauseRequestAccepted {
		t.Fatal("update of an unknown FAR accepted")
	}
	// A usage report is recorded before it leaves for the SMF.
	var mu sync.Mutex
	var order []string
	note := func(what string) {
		mu.Lock()
		order = append(order, what)
		mu.Unlock()
	}
	cp.sending = func() { note("report") }
	rec.mu.Lock()
	rec.check = func(r Record) {
		if r.Session != nil && len(r.Session.URRs) > 0 && r.Session.URRs[0].SEQN == 1 {
			note("record")
		}
	}
	rec.mu.Unlock()
	u := urrOf(t, dp, seid, 1)
	u.Counters.Add(rules.Uplink, 700)
	c.Report(seid, rules.Report{Kind: rules.ReportUsage, Usage: rules.UsageVolumeThreshold, PDRID: 1, URRID: 1, Volume: rules.Volume{Total: 700, UL: 700}, ULPackets: 1})
	waitReport(t, cp)
	mu.Lock()
	if len(order) == 0 || order[0] != "record" {
		t.Errorf("events %v: the report left before its record", order)
	}
	mu.Unlock()

	recs, enc := rec.take()
	deltas := sessionDeltas(recs, seid)
	if len(deltas) != 2 || len(recs) != 2 {
		t.Fatalf("modification and report recorded %+v, want one session delta each", recs)
	}
	for i, d := range deltas {
		if d.Seq != uint64(2+i) {
			t.Errorf("delta %d has Seq %d, want %d", i, d.Seq, 2+i)
		}
	}
	if deltas[1].URRs[0].SEQN != 1 {
		t.Errorf("the report's delta %+v", deltas[1].URRs[0])
	}
	all := c.Records()
	var now []byte
	for i := range all {
		if all[i].Session != nil && all[i].Session.SEID == seid {
			now = encodeRecord(t, &all[i])
		}
	}
	if !bytes.Equal(enc[len(enc)-1], now) {
		t.Errorf("last delta\n%+v\nis not the session's record\n%+v", deltas[1], sessionOf(all, seid))
	}

	// Deletion: a tombstone with the next version. Release: the
	// association's tombstone after its sessions'.
	c.HandleSessionDeletion(ctx, seid)
	recs, _ = rec.take()
	if len(recs) != 1 || recs[0].Session == nil || !recs[0].Session.Deleted || recs[0].Session.Seq != 4 || recs[0].Session.SEID != seid {
		t.Errorf("deletion recorded %+v", recs)
	}
	other := establish(t, c, ueEstablishment(0x22, "10.60.0.2")).UPFSEID.SEID
	rec.take()
	if r := c.HandleAssociationRelease(ctx, &pfcp.AssociationReleaseRequest{NodeID: smfNode}); r.Cause != pfcp.CauseRequestAccepted {
		t.Fatal(r.Cause)
	}
	recs, _ = rec.take()
	if len(recs) != 2 || recs[0].Session == nil || !recs[0].Session.Deleted || recs[0].Session.SEID != other ||
		recs[1].Association == nil || !recs[1].Association.Deleted || recs[1].Association.Seq != 2 || recs[1].Association.NodeID != smfNode {
		t.Errorf("association release recorded %+v", recs)
	}
}

// Without a Recorder a step's bookkeeping allocates nothing (the
// benchmark's allocs per op are unchanged by the records: 144).
func TestStepWithoutRecorderAllocatesNothing(t *testing.T) {
	c, _, _ := newRecordedUPFC(t, nil)
	seid := establish(t, c, ueEstablishment(0x31, "10.60.0.1")).UPFSEID.SEID
	c.mu.Lock()
	defer c.mu.Unlock()
	step := func() {
		c.beginStep()
		c.nextSEID++
		c.touched(seid)
		c.touched(seid)
		c.endStep()
	}
	step()
	if a := testing.AllocsPerRun(100, step); a != 0 {
		t.Errorf("a step allocates %v times without a Recorder", a)
	}
}

// A restored instance's associations are detached until Attach: the
// reports the data path raises meanwhile wait for it. Then those go out,
// and the reports the records show due: a periodic report whose deadline
// passed (with the usage counted before the takeover), a volume threshold
// and a volume quota the data path crossed and UPF-C never reported; one
// report for a crossing, whichever way it was raised.
func TestRestoreRaisesDueReports(t *testing.T) {
	a, dpA, _ := newRecordedUPFC(t, nil)
	req := ueEstablishment(0x41, "10.60.0.1")
	req.CreateURRs[0].Triggers = pfcp.TriggerPeriodic
	req.CreateURRs[0].MeasurementPeriod = 200 * time.Millisecond
	periodic := establish(t, a, req).UPFSEID.SEID
	urrOf(t, dpA, periodic, 1).Counters.Add(rules.Uplink, 123)

	req = ueEstablishment(0x42, "10.60.0.2")
	req.CreateURRs[0].Triggers = pfcp.TriggerVolumeThreshold | pfcp.TriggerVolumeQuota
	req.CreateURRs[0].VolumeThreshold = &pfcp.Volume{Total: 500, HasTotal: true}
	req.CreateURRs[0].VolumeQuota = &pfcp.Volume{UL: 800, HasUL: true}
	crossed := establish(t, a, req).UPFSEID.SEID
	urrOf(t, dpA, crossed, 1).Counters.Add(rules.Uplink, 900) // crossed both; the reports never built

	req = ueEstablishment(0x43, "10.60.0.3")
	req.CreateURRs[0].VolumeThreshold = &pfcp.Volume{Total: 500, HasTotal: true}
	later := establish(t, a, req).UPFSEID.SEID
	urrOf(t, dpA, later, 1).Counters.Add(rules.Downlink, 400)

	recs := decodeRecords(t, encodeRecords(t, a.Records()))
	a.HandleAssociationRelease(context.Background(), &pfcp.AssociationReleaseRequest{NodeID: smfNode}) // stops A's timer

	time.Sleep(300 * time.Millisecond) // the periodic deadline passes
	b, dpB := freshUPFC(nil)
	if err := b.Restore(recs); err != nil {
		t.Fatal(err)
	}
	if !urrOf(t, dpB, crossed, 1).QuotaExhausted(rules.Uplink) {
		t.Error("restored URR past its quota lets packets through")
	}
	// Detached: the data path buffers a downlink packet and crosses a
	// threshold; the restored periodic timer fires.
	b.Report(crossed, rules.Report{Kind: rules.ReportDownlinkData, PDRID: 2})
	u := urrOf(t, dpB, later, 1)
	d, tot := u.Counters.Add(rules.Downlink, 200)
	if u.Crossings(rules.Downlink, d, tot, 200) != rules.UsageVolumeThreshold {
		t.Fatal("restored threshold not crossed at 600 bytes")
	}
	use := u.Counters.Load()
	b.Report(later, rules.Report{Kind: rules.ReportUsage, Usage: rules.UsageVolumeThreshold, PDRID: 2, URRID: 1,
		Volume: use.Volume, DLPackets: use.DLPackets})
	time.Sleep(50 * time.Millisecond)
	if st := b.Stats(); st.ReportsSent+st.ReportsDropped+st.ReportsFailed != 0 {
		t.Errorf("reports before Attach: %+v", st)
	}

	cp := &fakeCP{reports: make(chan sentReport, 8)}
	if err := b.Attach(smfNode, cp); err != nil {
		t.Fatal(err)
	}
	if err := b.Attach(smfNode, cp); err == nil {
		t.Error("second Attach accepted")
	}
	var got []sentReport
	for range 4 {
		got = append(got, waitReport(t, cp))
	}
	if r := got[0]; r.cpSEID != 0x42 || r.req.ReportType != pfcp.ReportDLDR {
		t.Errorf("first report after Attach %#x %+v, want the Downlink Data Report held", r.cpSEID, r.req)
	}
	if r := got[1]; r.cpSEID != 0x43 || len(r.req.UsageReports) != 1 || r.req.UsageReports[0].Volume.Total != 600 || r.req.UsageReports[0].URSEQN != 0 {
		t.Errorf("second report after Attach %#x %+v, want the threshold report held, with the 600 bytes", r.cpSEID, r.req.UsageReports)
	}
	if r := got[2]; r.cpSEID != 0x41 || len(r.req.UsageReports) != 1 || r.req.UsageReports[0].Trigger != pfcp.UsageTriggerPeriodic ||
		r.req.UsageReports[0].Volume.Total != 123 {
		t.Errorf("third report after Attach %#x %+v, want the periodic report due", r.cpSEID, r.req.UsageReports)
	}
	if r := got[3]; r.cpSEID != 0x42 || len(r.req.UsageReports) != 1 ||
		r.req.UsageReports[0].Trigger != pfcp.UsageTriggerVolumeThreshold|pfcp.UsageTriggerVolumeQuota || r.req.UsageReports[0].Volume.Total != 900 {
		t.Errorf("fourth report after Attach %#x %+v, want the threshold and quota report due", r.cpSEID, r.req.UsageReports)
	}
	if u := urrOf(t, dpB, crossed, 1); !u.QuotaSpent || u.Threshold.Total != 1400 {
		t.Errorf("after the report the quota is spent and the threshold moves on: %+v", u)
	}
	// The periodic timer runs on from the takeover; nothing else comes.
	if r := waitReport(t, cp); r.cpSEID != 0x41 || r.req.UsageReports[0].URSEQN != 1 {
		t.Errorf("next report %#x %+v, want the next periodic one", r.cpSEID, r.req.UsageReports)
	}
	b.HandleSessionDeletion(context.Background(), periodic)
}

// FuzzRecordDecode: no input makes decoding a Record, or restoring what
// decodes (with a node and the associations its sessions need), panic;
// what restores records again. Seeds are the records of richState.
func FuzzRecordDecode(f *testing.F) {
	c, dp, cp := newRecordedUPFC(f, nil)
	richState(f, c, dp, cp)
	recs := c.Records()
	base := recs[:3] // the node and both associations
	for _, b := range encodeRecords(f, recs) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		var r Record
		if err := wire.Decode(msg, &r); err != nil {
			if !errors.Is(err, wire.ErrMalformed) && !errors.Is(err, wire.ErrLayoutMismatch) {
				t.Fatalf("decode error of another kind: %v", err)
			}
			return
		}
		in := append(slices.Clone(base), r)
		b, _ := freshUPFC(nil)
		if err := b.Restore(in); err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("restore error of another kind: %v", err)
			}
			return
		}
		for _, got := range b.Records() {
			encodeRecord(t, &got)
			if got.Session != nil {
				b.HandleSessionDeletion(context.Background(), got.Session.SEID) // stops its timers
			}
		}
	})
}
