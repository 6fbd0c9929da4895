package amf

import (
	"testing"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
)

// FuzzN2Input feeds arbitrary bytes to the AMF as an NGAP PDU from a gNB
// that completed NG Setup, then as the NAS PDU of an Initial UE Message and
// of an Uplink NAS Transport of a UE in authentication. Whatever the input,
// the AMF must not crash and the association must keep working.
func FuzzN2Input(f *testing.F) {
	f.Add([]byte{0x00, 0x15, 0x00, 0x00})
	f.Add([]byte{0x7e, 0x00, 0x41, 0x79, 0x00, 0x0d, 0x01, 0x02, 0xf8, 0x39})
	f.Add([]byte{0x7e, 0x00, 0x57, 0x2d, 0x10, 0x01, 0x02})
	f.Add([]byte{0x7e, 0x02, 0x01, 0x02, 0x03, 0x04, 0x00, 0x7e, 0x00, 0x43})
	f.Add([]byte{0x7e, 0x00, 0x59, 0x15, 0x30, 0x0e})
	if reg, err := nas.Encode(&nas.RegistrationRequest{RegistrationType: nas.RegistrationInitial,
		NgKSI: nas.NgKSI{KSI: nas.KSINoKey}, MobileIdentity: nas.MobileIdentity{Type: nas.IdentityGUTI,
			GUTI: identity.GUTI{GUAMI: identity.GUAMI{PLMN: testPLMN, AMFID: identity.AMFID{RegionID: 0xCA, SetID: 0x3F8}}, TMSI: 1}}}); err == nil {
		f.Add(reg)
	}
	// The mobility messages an AMF receives (handled on the UEs' executors)
	// and a Service Request: seeds for the mutator to start from.
	loc := ngap.UserLocationNR{NRCGI: ngap.NRCGI{PLMN: testPLMN, CellID: 1}, TAI: testTAI}
	for _, m := range []ngap.Message{
		&ngap.PathSwitchRequest{RANUENGAPID: 5, SourceAMFUENGAPID: 1, UserLocation: loc,
			ToBeSwitched: []ngap.PDUSessionResourceItem{{ID: 1, Transfer: []byte{0x00}}}},
		&ngap.HandoverRequired{AMFUENGAPID: 1, RANUENGAPID: 1, Cause: ngap.Cause{Group: ngap.CauseRadioNetwork},
			TargetID:                           ngap.TargetRANNodeID{GlobalGNBID: ngap.GlobalGNBID{PLMN: testPLMN, GNBID: 2, BitLen: 22}, SelectedTAI: testTAI},
			Sessions:                           []ngap.PDUSessionResourceItem{{ID: 1, Transfer: []byte{0x00}}},
			SourceToTargetTransparentContainer: []byte{1}},
		&ngap.HandoverRequestAcknowledge{AMFUENGAPID: 1, RANUENGAPID: 7, Admitted: []ngap.PDUSessionResourceItem{{ID: 1, Transfer: []byte{0}}},
			TargetToSourceTransparentContainer: []byte{1}},
		&ngap.HandoverNotify{AMFUENGAPID: 1, RANUENGAPID: 7, UserLocation: loc},
		&ngap.HandoverCancel{AMFUENGAPID: 1, RANUENGAPID: 1, Cause: ngap.Cause{Group: ngap.CauseRadioNetwork}},
		&ngap.HandoverFailure{AMFUENGAPID: 1, Cause: ngap.Cause{Group: ngap.CauseRadioNetwork}},
	} {
		if b, err := ngap.Encode(m); err == nil {
			f.Add(b)
		}
	}
	if sr, err := nas.Encode(&nas.ServiceRequest{ServiceType: nas.ServiceData, STMSI: identity.STMSI{SetID: 0x3F8, TMSI: 1},
		NASMessageContainer: []byte{1, 2, 3}}); err == nil {
		f.Add(sr)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, hn := newTestAMF(t, nil)
		g := setupGNB(t, a)
		// As an NGAP PDU: either nothing or some answer, never a crash.
		g.sendRaw(0, data)
		// As the initial NAS message of a new UE.
		if len(data) > 0 {
			g.send(1, &ngap.InitialUEMessage{RANUENGAPID: 900, NASPDU: data,
				UserLocation: ngap.UserLocationNR{NRCGI: ngap.NRCGI{PLMN: testPLMN, CellID: 1}, TAI: testTAI}})
		}
		// As an uplink NAS message of a UE waiting for its authentication response.
		u := newTestUE(t, g, hn, "0000000001")
		u.sendInitial(u.registrationRequest(u.suci(), nas.RegistrationInitial), nas.Plain)
		for {
			m := g.recv()
			if dl, ok := m.(*ngap.DownlinkNASTransport); ok && dl.RANUENGAPID == u.ranID {
				u.amfID = dl.AMFUENGAPID
				break
			}
		}
		if len(data) > 0 {
			u.sendULPDU(data)
		}
		// The association still works.
		g.send(0, ngSetupRequest(testPLMN, 1, testSlice))
		for {
			if _, ok := g.recv().(*ngap.NGSetupResponse); ok {
				break
			}
		}
	})
}
