package amf

import (
	"context"
	"testing"
	"time"

	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sctp"
)

// freeUDPPort returns a UDP port that was free a moment ago, so that the
// test does not collide with a core running on 9899.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	port, err := freeport.UDP()
	if err != nil {
		t.Skipf("no UDP on loopback: %v", err)
	}
	return port
}

// TestRegistrationOverUserspaceSCTP runs NG Setup, registration and
// deregistration over real SCTP packets (RFC 6951 SCTP over UDP).
func TestRegistrationOverUserspaceSCTP(t *testing.T) {
	port := freeUDPPort(t)
	a, hn := newTestAMF(t, func(c *Config) {
		c.N2Address = "127.0.0.1:38412"
		c.SCTP = sctp.Config{Transport: sctp.TransportUDP, UDPPort: port}
	})
	if err := a.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := sctp.Dial(ctx, sctp.Config{Transport: sctp.TransportUDP, UDPPort: port}, "127.0.0.1:38412")
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	g := newTestGNB(t, c)
	g.send(0, ngSetupRequest(testPLMN, 1, testSlice))
	expect[*ngap.NGSetupResponse](t, g.recv())

	u := newTestUE(t, g, hn, "0000000001")
	u.register()
	waitFor(t, "registered", func() bool { return a.Stats().RegisteredUEs == 1 })
	u.sendUL(&nas.DeregistrationRequestUEOriginating{AccessType: nas.Access3GPP,
		NgKSI: nas.NgKSI{KSI: u.sec.NgKSI()}, MobileIdentity: nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *u.guti}})
	expect[*nas.DeregistrationAcceptUEOriginating](t, u.recvNAS())
	u.releaseComplete(expect[*ngap.UEContextReleaseCommand](t, u.recvNGAP()))
	waitFor(t, "context removed", func() bool { return a.Stats().UEContexts == 0 })
}
