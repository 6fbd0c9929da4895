package sim

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sim/ue"
)

// The test core's idle mode (an AMF in miniature, continued): the service
// request, paging and network-initiated deregistration.

// idleCore is what the test core keeps and counts for idle mode (c.mu).
type idleCore struct {
	reject          nas.Cause5GMM // reject every service request with this; 0 = accept
	serviceRequests []serviceRecord
	pagings         int
	deregistered    []string // SUPIs deregistered by the network
	registrations   int      // Registration Completes
}

// serviceRecord is one service request as the core saw it.
type serviceRecord struct {
	supi        string
	serviceType uint8
	cause       ngap.RRCEstablishmentCause
	uplink      uint16 // Uplink data status; 0 = absent or empty
	status      uint16 // PDU session status
	activated   []uint8
}

// sessionsOf returns the PDU session IDs the UPF holds for supi (c.mu held).
func (c *testCore) sessionsOf(supi string) []uint8 {
	if c.upf == nil {
		return nil
	}
	c.upf.mu.Lock()
	defer c.upf.mu.Unlock()
	var ids []uint8
	for k := range c.upf.sessions {
		if k.supi == supi {
			ids = append(ids, k.psi)
		}
	}
	slices.Sort(ids)
	return ids
}

// deactivate drops the DL tunnels of supi's sessions: AN release (c.mu held).
func (c *testCore) deactivate(supi string) {
	if c.upf == nil || supi == "" {
		return
	}
	c.upf.mu.Lock()
	for k, s := range c.upf.sessions {
		if k.supi == supi {
			s.dlTEID = 0
		}
	}
	c.upf.mu.Unlock()
}

// dropSession forgets a session at the UPF (c.mu held).
func (c *testCore) dropSession(supi string, psi uint8) {
	if c.upf == nil {
		return
	}
	c.upf.mu.Lock()
	if s := c.upf.sessions[sessKey{supi, psi}]; s != nil {
		delete(c.upf.byTEID, s.ulTEID)
		delete(c.upf.sessions, sessKey{supi, psi})
	}
	c.upf.mu.Unlock()
}

// serviceRequest is TS 24.501 §5.6.1.3/4 on the network side (c.mu held):
// a known 5G-S-TMSI whose request verifies gets a Service Accept in an
// Initial Context Setup Request with the sessions to activate (those in the
// Uplink data status, every session for an answer to paging); anything
// else a Service Reject #9.
func (c *testCore) serviceRequest(u *coreUE, im *ngap.InitialUEMessage, sr *nas.ServiceRequest, send sendFunc) {
	release := func(cause ngap.Cause) {
		send(u.stream, &ngap.UEContextReleaseCommand{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID, Cause: cause})
		delete(c.ues, u.amfID)
	}
	kept := c.contexts[sr.STMSI.TMSI]
	var plain []byte
	if kept != nil && !nas.IsPlain(im.NASPDU) {
		p, _, err := kept.sec.Unprotect(im.NASPDU, nas.Uplink)
		if err == nil {
			plain = p
		}
	}
	if plain == nil {
		c.dl(u, &nas.ServiceReject{Cause: nas.CauseUEIdentityCannotBeDerived}, nas.Plain, send)
		release(ngap.Cause{Group: ngap.CauseNAS, Value: ngap.NASNormalRelease})
		return
	}
	m, err := nas.Decode(plain)
	if err != nil {
		c.fail(err)
		return
	}
	sr = m.(*nas.ServiceRequest)
	if len(sr.NASMessageContainer) > 0 {
		// TS 24.501 §4.4.6: the complete request is in the container.
		inner, err := kept.sec.OpenContainer(sr.NASMessageContainer, nas.Uplink)
		if err != nil {
			c.fail(err)
			return
		}
		if full, err := nas.Decode(inner); err == nil {
			sr = full.(*nas.ServiceRequest)
		}
	}
	u.supi, u.sec, u.tmsi = kept.supi, kept.sec, sr.STMSI.TMSI
	if im.FiveGSTMSI == nil || *im.FiveGSTMSI != sr.STMSI {
		c.fail(fmt.Errorf("service request: 5G-S-TMSI %+v in NGAP, %+v in NAS", im.FiveGSTMSI, sr.STMSI))
	}
	rec := serviceRecord{supi: u.supi, serviceType: sr.ServiceType, cause: im.RRCEstablishmentCause}
	if sr.UplinkDataStatus != nil {
		rec.uplink = *sr.UplinkDataStatus
	}
	if sr.PDUSessionStatus != nil {
		rec.status = *sr.PDUSessionStatus
	}
	if cause := c.idle.reject; cause != 0 {
		c.idle.serviceRequests = append(c.idle.serviceRequests, rec)
		// The UE stays registered (e.g. #22 congestion): its context is
		// kept, for the deregistration that follows.
		c.dl(u, &nas.ServiceReject{Cause: cause}, nas.IntegrityProtectedAndCiphered, send)
		release(ngap.Cause{Group: ngap.CauseNAS, Value: ngap.NASNormalRelease})
		return
	}
	held := c.sessionsOf(u.supi)
	// §5.6.1.4.1: the sessions the UE no longer has go.
	if sr.PDUSessionStatus != nil {
		for _, id := range held {
			if *sr.PDUSessionStatus&(1<<id) == 0 {
				c.dropSession(u.supi, id)
			}
		}
		held = c.sessionsOf(u.supi)
	}
	var status uint16
	for _, id := range held {
		status |= 1 << id
	}
	var items []ngap.PDUSessionResourceSetupItemSUReq
	slice := identity.SNSSAI{SST: 1, SD: 0x010203}
	for _, id := range held {
		if sr.ServiceType != nas.ServiceMobileTerminated && rec.uplink&(1<<id) == 0 {
			continue
		}
		c.upf.mu.Lock()
		s := c.upf.sessions[sessKey{u.supi, id}]
		c.upf.mu.Unlock()
		tr, err := ngap.EncodeSetupRequestTransfer(&ngap.PDUSessionResourceSetupRequestTransfer{
			ULTunnel:       ngap.GTPTunnel{Addr: netip.MustParseAddr("127.0.0.1"), TEID: s.ulTEID},
			PDUSessionType: ngap.PDUSessionTypeIPv4,
			QoSFlows:       []ngap.QoSFlowSetupRequestItem{{QFI: s.qfi, FiveQI: 9, PriorityLevelARP: 8}},
		})
		if err != nil {
			c.fail(err)
			return
		}
		items = append(items, ngap.PDUSessionResourceSetupItemSUReq{ID: id, SNSSAI: slice, Transfer: tr})
		rec.activated = append(rec.activated, id)
	}
	c.idle.serviceRequests = append(c.idle.serviceRequests, rec)
	delete(c.contexts, u.tmsi)
	acc := &nas.ServiceAccept{PDUSessionStatus: &status}
	if sr.UplinkDataStatus != nil {
		var failed uint16
		acc.PDUSessionReactivationResult = &failed
	}
	b, err := nas.Encode(acc)
	if err != nil {
		c.fail(err)
		return
	}
	pdu, err := u.sec.Protect(b, nas.IntegrityProtectedAndCiphered, nas.Downlink)
	if err != nil {
		c.fail(err)
		return
	}
	req := &ngap.InitialContextSetupRequest{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID, GUAMI: c.guami,
		AllowedNSSAI: []identity.SNSSAI{slice}, NASPDU: pdu,
		UESecurityCapabilities:       ngap.UESecurityCapabilitiesFromNAS(0xF0, 0xF0, 0, 0),
		PDUSessionResourceSetupItems: items}
	if len(items) > 0 {
		req.UEAggregateMaxBitRate = &ngap.AMBR{UL: 1e9, DL: 1e9}
	}
	send(u.stream, req)
	// Registration Complete is not coming: keep the context for the next
	// idle period now.
	c.contexts[u.tmsi] = &coreSecurity{supi: u.supi, sec: u.sec}
}

// page sends Paging for each idle UE of supis to every gNB; it returns how
// many were paged.
func (c *testCore) page(supis ...string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for tmsi, kept := range c.contexts {
		if !slices.Contains(supis, kept.supi) || c.connected(kept.supi) {
			continue
		}
		m := &ngap.Paging{
			UEPagingIdentity: identity.STMSI{SetID: c.guami.AMFID.SetID, Pointer: c.guami.AMFID.Pointer, TMSI: tmsi},
			TAIListForPaging: []identity.TAI{{PLMN: c.plmn, TAC: 1}},
		}
		for _, send := range c.gnbs {
			send(0, m)
		}
		c.idle.pagings++
		n++
	}
	return n
}

func (c *testCore) connected(supi string) bool {
	for _, u := range c.ues {
		if u.supi == supi {
			return true
		}
	}
	return false
}

// deregisterUE sends a Deregistration Request (UE terminated) with cause
// (0: none) to the connected UE of supi.
func (c *testCore) deregisterUE(supi string, reRegister bool, cause nas.Cause5GMM) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, u := range c.ues {
		if u.supi == supi && u.sec != nil {
			c.dl(u, &nas.DeregistrationRequestUETerminated{AccessType: nas.Access3GPP, ReRegistrationRequired: reRegister, Cause: cause},
				nas.IntegrityProtectedAndCiphered, u.send)
			return true
		}
	}
	return false
}

// networkDeregistrationDone: the UE accepted; its context, sessions and
// connection go (c.mu held).
func (c *testCore) networkDeregistrationDone(u *coreUE, send sendFunc) {
	c.idle.deregistered = append(c.idle.deregistered, u.supi)
	delete(c.contexts, u.tmsi)
	for _, id := range c.sessionsOf(u.supi) {
		c.dropSession(u.supi, id)
	}
	send(u.stream, &ngap.UEContextReleaseCommand{AMFUENGAPID: u.amfID, RANUENGAPID: u.ranID,
		Cause: ngap.Cause{Group: ngap.CauseNAS, Value: ngap.NASDeregister}})
	delete(c.ues, u.amfID)
}

func (c *testCore) idleState() idleCore {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.idle
	st.serviceRequests = slices.Clone(st.serviceRequests)
	return st
}

// TestRunIdleScenario: every UE pings, goes idle, comes back with a service
// request (type data, its sessions in the Uplink data status, RRC
// mo-Data), gets its user plane back in the Initial Context Setup and
// pings again.
func TestRunIdleScenario(t *testing.T) {
	d := DefaultConfig()
	core := newTestCore(t, d.K, d.OPc)
	upf := core.withUPF(0)
	cfg := sessionConfig(core, upf)
	cfg.UEs, cfg.GNBs, cfg.Concurrency = 6, 2, 3
	cfg.DNNs = []string{"internet", "ims"}
	cfg.Scenario, _ = ParseScenario("idle+ping")
	res := run(t, cfg)
	for p, want := range map[string]int{ue.ProcRegistration: 6, ue.ProcPDUSession: 12, ue.ProcANRelease: 6,
		ue.ProcServiceRequest: 6, ProcPing: 2 * 12 * 6, ue.ProcPDURelease: 12, ue.ProcDeregistration: 6} {
		if n, f := summary(t, res, p); n != want || f != 0 {
			t.Errorf("%s: %d ok, %d failed; want %d ok", p, n, f, want)
		}
	}
	if res.Failures() != 0 {
		t.Fatalf("failures: steps %+v UEs %+v", res.Steps, res.UEs)
	}
	if res.Steps[3].Step != StepIdle || res.Steps[3].Procedure != ue.ProcANRelease || res.Steps[4].Procedure != ue.ProcServiceRequest || res.Steps[4].OK != 6 {
		t.Fatalf("steps %+v", res.Steps)
	}
	if dr := res.Data; dr.PingSent != 144 || dr.PingReceived != 144 {
		t.Fatalf("data %+v", dr)
	}
	st := core.idleState()
	if len(st.serviceRequests) != 6 {
		t.Fatalf("service requests %+v", st.serviceRequests)
	}
	for _, r := range st.serviceRequests {
		if r.serviceType != nas.ServiceData || r.cause != ngap.RRCMOData || r.uplink != 1<<1|1<<2 || r.status != 1<<1|1<<2 ||
			!slices.Equal(r.activated, []uint8{1, 2}) {
			t.Errorf("service request %+v", r)
		}
	}
	if n, up, _, badQFI := upf.count(); n != 0 || up != 2*12*6 || badQFI != 0 {
		t.Fatalf("UPF: %d sessions left, %d uplink packets, %d with a wrong QFI/container", n, up, badQFI)
	}
}

// TestRunPagingAndInactivity: with an inactivity timeout the UEs go idle on
// their own after pinging (the idle step finds them idle); paged, they
// answer with a service request of type mobile terminated (RRC mt-Access)
// recorded as "paging", and their sessions carry data again.
func TestRunPagingAndInactivity(t *testing.T) {
	d := DefaultConfig()
	core := newTestCore(t, d.K, d.OPc)
	upf := core.withUPF(0)
	cfg := sessionConfig(core, upf)
	cfg.UEs, cfg.GNBs, cfg.Concurrency = 4, 2, 4
	cfg.InactivityTimeout = 150 * time.Millisecond
	cfg.Scenario, _ = ParseScenario("register,session,ping,idle,ping,release,deregister")
	var supis []string
	for i := range cfg.UEs {
		supis = append(supis, "imsi-"+cfg.imsi(i))
	}
	var paged int
	var pageErr error
	cfg.AfterStep = func(sr StepResult) {
		switch sr.Step {
		case StepPing:
			if paged > 0 {
				return
			}
			// Quiet for longer than the timeout: every UE is released.
			deadline := time.Now().Add(3 * time.Second)
			for {
				core.mu.Lock()
				n := len(core.ues)
				core.mu.Unlock()
				if n == 0 {
					break
				}
				if time.Now().After(deadline) {
					pageErr = fmt.Errorf("%d UEs still connected after the inactivity timeout", n)
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		case StepIdle:
			paged = core.page(supis...)
			// The answers reach the core before the next step sends data
			// (which would start service requests of their own).
			deadline := time.Now().Add(3 * time.Second)
			for len(core.idleState().serviceRequests) < paged && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
		}
	}
	res := run(t, cfg)
	if pageErr != nil {
		t.Fatal(pageErr)
	}
	if paged != 4 {
		t.Fatalf("%d UEs paged", paged)
	}
	for p, want := range map[string]int{ue.ProcPaging: 4, ProcPing: 2 * 6 * 4, ue.ProcPDURelease: 4} {
		if n, f := summary(t, res, p); n != want || f != 0 {
			t.Errorf("%s: %d ok, %d failed; want %d ok", p, n, f, want)
		}
	}
	// The inactivity releases: 4 after the first ping (more if a slow
	// machine let the timer run out again before the release step, whose
	// 5GSM procedure then starts with a service request).
	nrel, _ := summary(t, res, ue.ProcANRelease)
	nsr, _ := summary(t, res, ue.ProcServiceRequest)
	if nrel < 4 || nsr != nrel-4 {
		t.Errorf("%d inactivity releases, %d UE-triggered service requests", nrel, nsr)
	}
	if res.Failures() != 0 {
		t.Fatalf("failures: steps %+v UEs %+v", res.Steps, res.UEs)
	}
	st := core.idleState()
	if len(st.serviceRequests) != 4+nsr {
		t.Fatalf("service requests %+v", st.serviceRequests)
	}
	for i, r := range st.serviceRequests {
		if i < 4 && (r.serviceType != nas.ServiceMobileTerminated || r.cause != ngap.RRCMTAccess || r.uplink != 0 || !slices.Equal(r.activated, []uint8{1})) ||
			i >= 4 && (r.serviceType != nas.ServiceSignalling || r.cause != ngap.RRCMOSignalling) {
			t.Errorf("service request %d: %+v", i, r)
		}
	}
}

// TestRunServiceRejected: a congested network rejects the UEs' service
// requests; the step fails with the cause.
func TestRunServiceRejected(t *testing.T) {
	d := DefaultConfig()
	core := newTestCore(t, d.K, d.OPc)
	cfg := testConfig(core)
	cfg.UEs, cfg.Concurrency = 3, 3
	cfg.Scenario, _ = ParseScenario("register,idle,service")
	cfg.AfterStep = func(sr StepResult) {
		if sr.Step == StepIdle {
			core.mu.Lock()
			core.idle.reject = nas.CauseCongestion
			core.mu.Unlock()
		}
	}
	res := run(t, cfg)
	if n, f := summary(t, res, ue.ProcServiceRequest); n != 0 || f != 3 {
		t.Fatalf("service-request: %d ok, %d failed", n, f)
	}
	for _, o := range res.UEs {
		// Registered after the reject, then deregistered by the run's
		// clean-up of a UE that stopped early.
		if o.FailedStep != StepService || o.Registered || !strings.Contains(o.Err, "service request rejected, 5GMM cause #22") {
			t.Fatalf("UE %+v", o)
		}
	}
}

// TestRunNetworkDeregistration: deregistered by the network with
// "re-registration required", every UE answers, loses its sessions and
// registers again by itself; the scenario's deregistration then works.
// Config.OnDeregistered hears of each deregistration with its cause.
func TestRunNetworkDeregistration(t *testing.T) {
	d := DefaultConfig()
	core := newTestCore(t, d.K, d.OPc)
	upf := core.withUPF(0)
	cfg := sessionConfig(core, upf)
	cfg.UEs, cfg.Concurrency = 4, 4
	cfg.Scenario, _ = ParseScenario("register,session,deregister")
	var mu sync.Mutex
	told := map[string]string{}
	cfg.OnDeregistered = func(supi string, cause nas.Cause5GMM, reregister bool) {
		mu.Lock()
		defer mu.Unlock()
		told[supi] = fmt.Sprintf("%s %v", cause, reregister)
	}
	var waitErr error
	cfg.AfterStep = func(sr StepResult) {
		if sr.Step != StepSession {
			return
		}
		for i := range cfg.UEs {
			if !core.deregisterUE("imsi-"+cfg.imsi(i), true, nas.CauseImplicitlyDeregistered) {
				waitErr = fmt.Errorf("UE %d not connected", i)
				return
			}
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			st := core.idleState()
			if len(st.deregistered) == 4 && st.registrations == 8 {
				return
			}
			if time.Now().After(deadline) {
				waitErr = fmt.Errorf("core: %d deregistered, %d registrations", len(st.deregistered), st.registrations)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	res := run(t, cfg)
	if waitErr != nil {
		t.Fatal(waitErr)
	}
	// The re-registration uses the 5G-GUTI the UE kept; the core forgot it
	// and identifies the UE again.
	for p, want := range map[string]int{ue.ProcRegistration: 4, ue.ProcReregistration: 4, ue.ProcDeregistration: 4} {
		if n, f := summary(t, res, p); n != want || f != 0 {
			t.Errorf("%s: %d ok, %d failed; want %d ok", p, n, f, want)
		}
	}
	if res.Failures() != 0 {
		t.Fatalf("failures: steps %+v UEs %+v", res.Steps, res.UEs)
	}
	if n, _, _, _ := upf.count(); n != 0 {
		t.Fatalf("UPF holds %d sessions", n)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range cfg.UEs {
		if got := told["imsi-"+cfg.imsi(i)]; got != "#10 implicitly de-registered true" {
			t.Errorf("UE %d: told %q", i, got)
		}
	}
}

func TestParseIdleScenarios(t *testing.T) {
	sc, err := ParseScenario("idle")
	if err != nil || sc.String() != "register,session,idle,service,release,deregister" {
		t.Fatalf("%v %v", sc, err)
	}
	if sc, err := ParseScenario("register, idle, service"); err != nil || len(sc) != 3 || sc[2] != StepService {
		t.Fatalf("%v %v", sc, err)
	}
	_, err = ParseScenario("register,sleep")
	if err == nil || !strings.Contains(err.Error(), "idle, service") {
		t.Fatalf("error %v", err)
	}
	cfg := DefaultConfig()
	cfg.InactivityTimeout = -time.Second
	if err := cfg.withDefaults().validate(); err == nil {
		t.Fatal("negative inactivity timeout accepted")
	}
}
