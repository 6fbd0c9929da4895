package sim

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sctp"
	"github.com/tern5g/tern/security/kdf"
	"github.com/tern5g/tern/security/milenage"
	"github.com/tern5g/tern/security/suci"
)

// testCore is a minimal AMF+AUSF+UDM for exercising the simulator end to end
// without the real core: NG Setup, registration with SUCI (5G AKA with
// resync, NIA2/NEA2 security mode), registration with a known 5G-GUTI
// (integrity checked with the kept context, Identity Request otherwise),
// UE-originating deregistration and, for idle mode (idle_test.go), the
// service request (Service Accept in an Initial Context Setup with the
// sessions to activate, or Service Reject), paging and network-initiated
// deregistration. Every subscriber shares K/OPc.
type testCore struct {
	t        *testing.T
	l        sctp.Listener
	cfg      sctp.Config
	k, opc   []byte
	plmn     identity.PLMN
	guami    identity.GUAMI
	hnKeys   []suci.HomeNetworkKey
	dropDupe bool

	mu       sync.Mutex
	gnbs     []sendFunc               // each association's sender, for Paging
	sqn      map[string]uint64        // supi -> last SQN used
	contexts map[uint32]*coreSecurity // 5G-TMSI -> kept context
	nextTMSI uint32
	nextAMF  int64
	ues      map[int64]*coreUE // AMF UE NGAP ID -> UE
	upf      *testUPF          // PDU sessions (session_test.go); nil = none
	idle     idleCore          // idle mode (idle_test.go)
	ho       hoCore            // handover (handover_test.go)
	wg       sync.WaitGroup

	// errMu guards errs apart from mu: fail is called with mu held.
	errMu sync.Mutex
	errs  []error
}

type coreSecurity struct {
	supi string
	sec  *nas.SecurityContext
}

type coreUE struct {
	amfID, ranID int64
	stream       uint16
	send         sendFunc // its association's
	tai          identity.TAI
	supi         string
	rand, xres   []byte
	kamf         []byte
	ksi          uint8
	sec          *nas.SecurityContext
	tmsi         uint32
}

func newTestCore(t *testing.T, k, opc []byte) *testCore {
	t.Helper()
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	port := pc.LocalAddr().(*net.UDPAddr).Port
	pc.Close()
	cfg := sctp.Config{Transport: sctp.TransportUDP, UDPPort: port}
	l, err := sctp.Listen(cfg, "127.0.0.1:38412")
	if err != nil {
		t.Fatal(err)
	}
	plmn := identity.PLMN{MCC: "208", MNC: "93"}
	c := &testCore{
		t: t, l: l, cfg: cfg, k: k, opc: opc, plmn: plmn,
		guami:    identity.GUAMI{PLMN: plmn, AMFID: identity.AMFID{RegionID: 0xCA, SetID: 0x3F8}},
		sqn:      map[string]uint64{},
		contexts: map[uint32]*coreSecurity{},
		ues:      map[int64]*coreUE{},
		ho:       hoCore{gnbs: map[uint32]sendFunc{}, pending: map[int64]*hoPending{}},
		nextTMSI: 1,
		nextAMF:  1,
	}
	c.wg.Add(1)
	go c.accept()
	t.Cleanup(func() {
		l.Close()
		c.wg.Wait()
		for _, err := range c.errs {
			t.Error("test core:", err)
		}
	})
	return c
}

func (c *testCore) fail(err error) {
	c.errMu.Lock()
	c.errs = append(c.errs, err)
	c.errMu.Unlock()
}

func (c *testCore) accept() {
	defer c.wg.Done()
	for {
		conn, err := c.l.Accept()
		if err != nil {
			return
		}
		c.wg.Add(1)
		go c.serve(conn)
	}
}

func (c *testCore) serve(conn sctp.Conn) {
	defer c.wg.Done()
	defer conn.Close()
	send := func(stream uint16, m ngap.Message) {
		b, err := ngap.Encode(m)
		if err == nil {
			err = conn.Send(stream, ngap.PPID, b)
		}
		if err != nil {
			c.fail(err)
		}
	}
	for {
		msg, err := conn.Recv()
		if err != nil {
			return
		}
		m, err := ngap.Decode(msg.Data)
		if err != nil {
			c.fail(err)
			continue
		}
		c.mu.Lock()
		switch m := m.(type) {
		case *ngap.NGSetupRequest:
			if m.GlobalRANNodeID.PLMN != c.plmn {
				send(0, &ngap.NGSetupFailure{Cause: ngap.Cause{Group: ngap.CauseMisc, Value: ngap.MiscUnknownPLMNOrSNPN}})
				break
			}
			c.gnbs = append(c.gnbs, send)
			c.ho.gnbs[m.GlobalRANNodeID.GNBID] = send
			send(0, &ngap.NGSetupResponse{AMFName: "test-core", ServedGUAMIs: []identity.GUAMI{c.guami}, RelativeAMFCapacity: 255,
				PLMNSupport: []ngap.PLMNSupport{{PLMN: c.plmn, Slices: []identity.SNSSAI{{SST: 1, SD: 0x010203}}}}})
		case *ngap.InitialUEMessage:
			u := &coreUE{amfID: c.nextAMF, ranID: m.RANUENGAPID, stream: msg.Stream, send: send, tai: m.UserLocation.TAI}
			c.nextAMF++
			c.ues[u.amfID] = u
			c.initial(u, m, send)
		case *ngap.UplinkNASTransport:
			u := c.ues[m.AMFUENGAPID]
			if u == nil || u.ranID != m.RANUENGAPID {
				c.fail(errors.New("uplink for unknown UE"))
				break
			}
			u.tai = m.UserLocation.TAI
			c.uplink(u, m.NASPDU, send)
		case *ngap.UEContextReleaseRequest:
			// AN release: the UE goes CM-IDLE; its context stays for GUTI
			// registration and service requests, its sessions lose their
			// user plane.
			if u := c.ues[m.AMFUENGAPID]; u != nil {
				if u.tmsi != 0 && u.sec != nil {
					c.contexts[u.tmsi] = &coreSecurity{supi: u.supi, sec: u.sec}
				}
				c.deactivate(u.supi)
				delete(c.ues, m.AMFUENGAPID)
			}
			send(msg.Stream, &ngap.UEContextReleaseCommand{AMFUENGAPID: m.AMFUENGAPID, RANUENGAPID: m.RANUENGAPID,
				Cause: ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkUserInactivity}})
		case *ngap.UEContextReleaseComplete:
		case *ngap.InitialContextSetupResponse, *ngap.PDUSessionResourceSetupResponse, *ngap.PDUSessionResourceReleaseResponse:
			c.n2Response(m)
		default:
			if !c.handover(m, msg.Stream, send) {
				c.fail(fmt.Errorf("unexpected NGAP message %T", m))
			}
		}
		c.mu.Unlock()
	}
}

type sendFunc func(uint16, ngap.Message)

func (c *testCore) dl(u *coreUE, m nas.Message, hdr nas.SecurityHeaderType, send sendFunc) {
	b, err := nas.Encode(m)
	if err != nil {
		c.fail(err)
		return
	}
	if hdr != nas.Plain {
		if b, err = u.sec.Protect(b, hdr, nas.Downlink); err != nil {
			c.fail(err)
			return
		}
	}
	send(u.stream, &ngap.DownlinkNASTransport{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID, NASPDU: b})
}

func (c *testCore) initial(u *coreUE, im *ngap.InitialUEMessage, send sendFunc) {
	pdu := im.NASPDU
	plain, _, err := nas.PeekPlain(pdu)
	if err != nil {
		c.fail(err)
		return
	}
	m, err := nas.Decode(plain)
	if err != nil {
		c.fail(err)
		return
	}
	if sr, ok := m.(*nas.ServiceRequest); ok {
		c.serviceRequest(u, im, sr, send)
		return
	}
	if dr, ok := m.(*nas.DeregistrationRequestUEOriginating); ok {
		// From CM-IDLE (the simulator's clean-up of a UE that stopped
		// early): protected with the context kept at release.
		kept := c.contexts[dr.MobileIdentity.GUTI.TMSI]
		if kept == nil {
			c.fail(fmt.Errorf("deregistration from CM-IDLE with an unknown 5G-GUTI %+v", dr.MobileIdentity))
			return
		}
		u.supi, u.sec = kept.supi, kept.sec
		c.uplink(u, pdu, send)
		return
	}
	rr, ok := m.(*nas.RegistrationRequest)
	if !ok {
		c.fail(errors.New("initial message is neither a registration nor a service request"))
		return
	}
	switch rr.MobileIdentity.Type {
	case nas.IdentitySUCI:
		c.identified(u, rr.MobileIdentity.SUCI, send)
	case nas.IdentityGUTI:
		kept := c.contexts[rr.MobileIdentity.GUTI.TMSI]
		if kept != nil {
			if _, _, err := kept.sec.Unprotect(pdu, nas.Uplink); err == nil {
				// TS 24.501 §5.5.1.2.2: known GUTI, valid context: accept at once.
				u.supi, u.sec = kept.supi, kept.sec
				delete(c.contexts, rr.MobileIdentity.GUTI.TMSI)
				c.registrationAccept(u, send)
				return
			}
		}
		c.dl(u, &nas.IdentityRequest{IdentityType: nas.IdentitySUCI}, nas.Plain, send)
	}
}

func (c *testCore) identified(u *coreUE, suciStr string, send sendFunc) {
	s, err := suci.Parse(suciStr)
	if err != nil {
		c.fail(err)
		return
	}
	supi, err := suci.Deconceal(s, c.hnKeys)
	if err != nil {
		c.fail(err)
		return
	}
	u.supi = supi
	c.challenge(u, send)
}

func (c *testCore) challenge(u *coreUE, send sendFunc) {
	c.sqn[u.supi]++
	sqn, _ := milenage.SQNBytes(c.sqn[u.supi])
	u.rand = make([]byte, 16)
	rand.Read(u.rand)
	v, err := milenage.Generate(c.k, c.opc, u.rand, sqn, []byte{0x80, 0})
	if err != nil {
		c.fail(err)
		return
	}
	snn := kdf.ServingNetworkName(c.plmn)
	u.xres = kdf.RESStar(v.CK, v.IK, snn, v.RAND, v.XRES)
	u.kamf = kdf.KAMF(kdf.KSEAF(kdf.KAUSF(v.CK, v.IK, snn, v.AUTN[:6]), snn), u.supi, []byte{0, 0})
	u.ksi = (u.ksi + 1) % 7
	c.dl(u, &nas.AuthenticationRequest{NgKSI: nas.NgKSI{KSI: u.ksi}, ABBA: []byte{0, 0}, RAND: v.RAND, AUTN: v.AUTN}, nas.Plain, send)
}

func (c *testCore) registrationAccept(u *coreUE, send sendFunc) {
	c.nextTMSI++
	u.tmsi = c.nextTMSI
	g := identity.GUTI{GUAMI: c.guami, TMSI: u.tmsi}
	b, _ := nas.Encode(&nas.RegistrationAccept{Result: nas.Registered3GPP, GUTI: &g,
		TAIList: []identity.TAI{u.tai}, AllowedNSSAI: []identity.SNSSAI{{SST: 1, SD: 0x010203}}})
	pdu, err := u.sec.Protect(b, nas.IntegrityProtectedAndCiphered, nas.Downlink)
	if err != nil {
		c.fail(err)
		return
	}
	send(u.stream, &ngap.InitialContextSetupRequest{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID, GUAMI: c.guami,
		AllowedNSSAI: []identity.SNSSAI{{SST: 1, SD: 0x010203}}, NASPDU: pdu,
		UESecurityCapabilities: ngap.UESecurityCapabilitiesFromNAS(0xF0, 0xF0, 0, 0)})
}

func (c *testCore) uplink(u *coreUE, pdu []byte, send sendFunc) {
	hdr, err := nas.SecurityHeader(pdu)
	if err != nil {
		c.fail(err)
		return
	}
	plain := pdu
	if hdr != nas.Plain {
		if plain, _, err = u.sec.Unprotect(pdu, nas.Uplink); err != nil {
			c.fail(err)
			return
		}
	}
	m, err := nas.Decode(plain)
	if err != nil {
		c.fail(err)
		return
	}
	switch m := m.(type) {
	case *nas.IdentityResponse:
		c.identified(u, m.MobileIdentity.SUCI, send)
	case *nas.AuthenticationResponse:
		if !bytes.Equal(m.RESStar, u.xres) {
			c.dl(u, &nas.AuthenticationReject{}, nas.Plain, send)
			return
		}
		enc, integ := kdf.NASKeys(u.kamf, nas.NEA2, nas.NIA2)
		u.sec = nas.NewSecurityContext(enc, integ, nas.NEA2, nas.NIA2, u.ksi)
		c.dl(u, &nas.SecurityModeCommand{CipheringAlg: nas.NEA2, IntegrityAlg: nas.NIA2, NgKSI: nas.NgKSI{KSI: u.ksi},
			ReplayedUESecurityCapability: nas.UESecurityCapability{EA: 0xF0, IA: 0xF0}, RetransmitInitialNAS: true},
			nas.IntegrityProtectedNewContext, send)
	case *nas.AuthenticationFailure:
		switch m.Cause {
		case nas.CauseSynchFailure:
			sqnMS, err := milenage.VerifyAUTS(c.k, c.opc, u.rand, m.AUTS)
			if err != nil {
				c.fail(err)
				return
			}
			c.sqn[u.supi] = sqnMS
			c.challenge(u, send)
		default:
			c.dl(u, &nas.AuthenticationReject{}, nas.Plain, send)
		}
	case *nas.SecurityModeComplete:
		inner, err := nas.Decode(m.NASMessageContainer)
		if rr, ok := inner.(*nas.RegistrationRequest); err != nil || !ok || len(rr.RequestedNSSAI) == 0 {
			c.fail(errors.New("security mode complete without the full registration request"))
			return
		}
		c.registrationAccept(u, send)
	case *nas.RegistrationComplete:
		c.contexts[u.tmsi] = &coreSecurity{supi: u.supi, sec: u.sec}
		c.idle.registrations++
	case *nas.DeregistrationRequestUEOriginating:
		if !m.SwitchOff {
			c.dl(u, &nas.DeregistrationAcceptUEOriginating{}, nas.IntegrityProtectedAndCiphered, send)
		}
		// The context stays for a later GUTI registration.
		send(u.stream, &ngap.UEContextReleaseCommand{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID,
			Cause: ngap.Cause{Group: ngap.CauseNAS, Value: ngap.NASDeregister}})
		delete(c.ues, u.amfID)
	case *nas.ULNASTransport:
		c.smUplink(u, m, send)
	case *nas.DeregistrationAcceptUETerminated:
		c.networkDeregistrationDone(u, send)
	case *nas.RegistrationRequest:
		c.mobilityUpdate(u, m, send)
	default:
		c.fail(errors.New("unexpected uplink " + m.MessageType().String()))
	}
}
