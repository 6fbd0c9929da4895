package amf

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
)

// recordingObserver keeps what the AMF reports.
type recordingObserver struct {
	mu   sync.Mutex
	seen []string // "name outcome"
}

func (o *recordingObserver) Procedure(name, outcome string, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if d < 0 {
		outcome += " (negative duration)"
	}
	o.seen = append(o.seen, name+" "+outcome)
}

func (o *recordingObserver) got() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.seen)
}

// TestObserverOutcomes: a registration that completes, one rejected for
// an unknown subscriber, one ended by Authentication Reject and a
// UE-initiated deregistration each reach the Observer once, with their
// outcome.
func TestObserverOutcomes(t *testing.T) {
	a, hn := newTestAMF(t, nil)
	obs := &recordingObserver{}
	a.SetObserver(obs)
	g := setupGNB(t, a)

	good := newTestUE(t, g, hn, "0000000001")
	good.register()
	waitFor(t, "registered", func() bool { return a.Stats().RegisteredUEs == 1 })

	unknown := newTestUE(t, g, nil, "0000000099")
	unknown.sendInitial(unknown.registrationRequest(unknown.suci(), nas.RegistrationInitial), nas.Plain)
	expect[*nas.RegistrationReject](t, unknown.recvNAS())
	unknown.releaseComplete(expect[*ngap.UEContextReleaseCommand](t, unknown.recvNGAP()))

	badKey := newTestUE(t, g, hn, "0000000002")
	badKey.usim.K = mustHex("000102030405060708090a0b0c0d0e0f")
	badKey.sendInitial(badKey.registrationRequest(badKey.suci(), nas.RegistrationInitial), nas.Plain)
	expect[*nas.AuthenticationRequest](t, badKey.recvNAS())
	badKey.sendUL(&nas.AuthenticationFailure{Cause: nas.CauseMACFailure})
	expect[*nas.AuthenticationReject](t, badKey.recvNAS())
	badKey.releaseComplete(expect[*ngap.UEContextReleaseCommand](t, badKey.recvNGAP()))

	good.sendUL(&nas.DeregistrationRequestUEOriginating{AccessType: nas.Access3GPP, SwitchOff: true, MobileIdentity: nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *good.guti}})
	good.releaseComplete(expect[*ngap.UEContextReleaseCommand](t, good.recvNGAP()))
	waitFor(t, "contexts removed", func() bool { return a.Stats().UEContexts == 0 })

	want := []string{"registration success", "registration rejected", "registration rejected", "deregistration success"}
	if got := obs.got(); !slices.Equal(got, want) {
		t.Errorf("observed %q, want %q", got, want)
	}
}
