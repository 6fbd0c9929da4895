package amf

import (
	"testing"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
)

// TestReleaseCommandOncePerConnection reproduces, deterministically, the
// interleaving a multi-stream association produces: after a gNB-initiated
// release (TS 23.502 §4.2.6) the gNB's UE Context Release Complete and the
// UE's next Initial UE Message (a GUTI mobility registration, TS 23.502
// §4.2.2.2.2) travel on different SCTP streams, and the AMF receives the
// Initial UE Message first. The old connection already has its Release
// Command, so the AMF must not send a second one (TS 38.413 §8.3.3).
func TestReleaseCommandOncePerConnection(t *testing.T) {
	a, hn := newTestAMF(t, nil)
	g := setupGNB(t, a)
	u := newTestUE(t, g, hn, "0000000001")
	u.register()
	waitFor(t, "registered", func() bool { return a.Stats().Registrations == 1 })

	inactivity := ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkUserInactivity}
	g.send(1, &ngap.UEContextReleaseRequest{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID, Cause: inactivity})
	cmd := expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP())

	// The new Initial UE Message overtakes the Release Complete. memConn
	// delivers in send order, so the AMF sees exactly this order.
	u.sendInitial(u.registrationRequest(nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *u.guti},
		nas.RegistrationMobilityUpdating), nas.IntegrityProtected)
	g.send(2, &ngap.UEContextReleaseComplete{AMFUENGAPID: cmd.AMFUENGAPID, RANUENGAPID: cmd.RANUENGAPID})

	// The next message must be the Registration Accept on the new
	// connection; before the fix it was a second Release Command for the
	// old one, which the gNB (having freed the IDs) answered with an Error
	// Indication.
	m := g.recv()
	if dup, ok := m.(*ngap.UEContextReleaseCommand); ok {
		t.Fatalf("second UE Context Release Command for %d/%d", dup.AMFUENGAPID, dup.RANUENGAPID)
	}
	ics := expect[*ngap.InitialContextSetupRequest](t, m)
	if ics.AMFUENGAPID == cmd.AMFUENGAPID || ics.RANUENGAPID != u.ranID {
		t.Fatalf("Initial Context Setup for %d/%d, want a new AMF UE NGAP ID and RAN UE NGAP ID %d",
			ics.AMFUENGAPID, ics.RANUENGAPID, u.ranID)
	}
	u.amfID, u.lastICS = ics.AMFUENGAPID, ics
	u.acceptRegistration(u.openNAS(ics.NASPDU))
	waitFor(t, "second registration", func() bool { return a.Stats().Registrations == 2 })

	// A mobility registration from CM-IDLE without a follow-on request
	// ends with the release of its connection (TS 24.501 §5.5.1.3.4),
	// once; nothing else may be queued toward the gNB.
	rel := expect[*ngap.UEContextReleaseCommand](t, g.recv())
	if rel.AMFUENGAPID != ics.AMFUENGAPID || rel.Cause != causeNASNormalRelease {
		t.Fatalf("release %+v, want the new connection's, normal release", rel)
	}
	select {
	case extra := <-g.in:
		msg, _ := ngap.Decode(extra.Data)
		t.Fatalf("unexpected message after re-registration: %T %+v", msg, msg)
	default:
	}
	s := a.Stats()
	if s.UEContextReleases != 1 || s.ErrorIndications != 0 || s.RegisteredUEs != 1 || s.UEContexts != 1 {
		t.Errorf("stats %+v", s)
	}
	if r := a.ranUEs.Get(cmd.AMFUENGAPID); r != nil {
		t.Error("released connection still in the table")
	}
}
