// Package ue is the simulated UE: a 5GMM state machine (TS 24.501 §5) over a
// USIM (package usim) that registers with SUCI or its 5G-GUTI, answers
// authentication, security mode and identity procedures, and deregisters.
//
// A UE does not own a goroutine. A procedure method (Register, Reregister,
// Deregister, ServiceRequest) sends the first message from the caller's
// goroutine and then waits; every downlink message is handled synchronously
// in the goroutine of whoever delivers it (the gNB's single reader, or a
// test), which answers on the spot. The UE's state is guarded by one mutex,
// so a UE runs one procedure at a time and different UEs run in parallel.
//
// Idle mode (idle.go): a registered UE in CM-IDLE answers Paging with a
// Service Request, starts one itself for uplink data (SendData buffers the
// packets meanwhile) and re-registers when the network says so (Service
// Reject #9/#10, network-initiated deregistration with re-registration
// required); with Config.PeriodicRegistration it runs periodic registration
// every T3512, and with Config.InactivityTimeout it goes idle after that
// long without user-plane traffic. These procedures start without a caller
// (from the gNB's reader or a timer, by sending their first message in
// place): nobody waits on them, their outcome goes to the Observer, and a
// caller's procedure started meanwhile waits for them to end.
//
// Handover (handover.go): Handover runs an Xn or N2 handover through a
// Link that is a Mover (the gNB port moves the connection), then, if the
// new cell's TA is not in the TAI list, a mobility registration update
// over the moved connection.
//
// The radio side is a Link (a gNB port): the UE hands it NAS PDUs and the
// gNB hands back downlink NAS (HandleNAS) and the release of the signalling
// connection (HandleRelease).
//
// PDU sessions (5GSM, TS 24.501 §6; session.go): EstablishSession and
// ReleaseSession run UE-requested procedures, each session with its own
// state machine and PTI; the network's Modification and Release Commands
// are answered as they come. The gNB reports its part of each session
// (HandleSessionSetup, HandleSessionReleased) and delivers downlink packets
// (HandleData); SendData sends uplink ones.
package ue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nas"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/security/kdf"
	"github.com/tern5g/tern/sim/usim"
)

// Link is the UE's radio connection through a gNB. Both methods return the
// time just before the NGAP message went to the SCTP association: the
// latency windows of benchmarks.md start and end at those instants.
type Link interface {
	// SendInitial opens a NAS signalling connection: InitialUEMessage.
	// cause is the RRC establishment cause (TS 24.501 §4.5.6: mt-Access
	// when answering paging, mo-Data with uplink data, mo-Signalling
	// otherwise); stmsi is the 5G-S-TMSI the UE gave in RRC setup, nil if
	// none.
	SendInitial(nasPDU []byte, cause ngap.RRCEstablishmentCause, stmsi *identity.STMSI) (time.Time, error)
	// SendUplink sends UplinkNASTransport on the open connection.
	SendUplink(nasPDU []byte) (time.Time, error)
	// RequestRelease asks the AMF to release the connection (UE Context
	// Release Request, cause user inactivity); HandleRelease follows.
	RequestRelease() (time.Time, error)
	// SendData sends one uplink user-plane packet of PDU session psi
	// through the gNB's tunnel for it. The callee does not keep pkt.
	SendData(psi uint8, pkt []byte) error
	// Drop gives up the signalling connection after a failed procedure: the
	// gNB asks the AMF to release it (UE Context Release Request) and
	// forgets it without waiting.
	Drop()
	// SetPagingIdentity tells the gNB the 5G-S-TMSI the UE listens for in
	// Paging (from its 5G-GUTI); nil: none.
	SetPagingIdentity(stmsi *identity.STMSI)
}

// Observer records procedure latencies; *report.Recorder is one.
type Observer interface {
	Observe(procedure string, d time.Duration)
	Fail(procedure string)
}

// Procedure names used with the Observer.
const (
	ProcRegistration   = "registration"
	ProcReregistration = "reregistration"
	ProcDeregistration = "deregistration"
	ProcSwitchOff      = "deregistration-switchoff"
	// ProcANRelease is the gNB-initiated release of the UE's connection
	// (UE Context Release Request to UE Context Release Complete) that
	// takes a registered UE to CM-IDLE.
	ProcANRelease = "an-release"
	// ProcServiceRequest is a UE-triggered service request from CM-IDLE:
	// sending the InitialUEMessage (Service Request) to the gNB sending
	// the Initial Context Setup Response (the Service Accept's carrier).
	ProcServiceRequest = "service-request"
	// ProcPaging is the answer to paging: from the gNB receiving Paging to
	// it sending the Initial Context Setup Response (benchmarks.md).
	ProcPaging = "paging"
	// ProcPeriodicRegistration is the periodic registration update
	// (T3512), timed like the other registrations.
	ProcPeriodicRegistration = "periodic-registration"
)

// Config is one UE.
type Config struct {
	USIM *usim.USIM
	// ServingPLMN is the PLMN of the cell; it names the serving network in
	// the key derivations (TS 33.501 §6.1.1.4).
	ServingPLMN identity.PLMN
	// RequestedNSSAI goes in the full Registration Request.
	RequestedNSSAI []identity.SNSSAI
	// EA and IA are the UE security capability bitmaps (TS 24.501
	// §9.11.3.54, bit 8 = algorithm 0): the algorithms this UE accepts.
	EA, IA uint8
	IMEISV string // 16 digits, sent when the AMF asks; a default is derived from the IMSI
	// Timeout bounds each procedure (default 5 s) when the caller's context
	// has no earlier deadline.
	Timeout time.Duration
	// T3580 and T3582 are the 5GSM retransmission timers for PDU session
	// establishment and release (default 16 s, TS 24.501 §10.3).
	T3580, T3582 time.Duration
	// InactivityTimeout: a connected, registered UE without user-plane
	// packets (either way) for this long is released to CM-IDLE by its
	// gNB (UE Context Release Request, cause user inactivity), as Release
	// does; it is checked every InactivityTimeout, so the release comes
	// between one and two timeouts after the last packet. 0 = never.
	InactivityTimeout time.Duration
	// PeriodicRegistration: a registered UE in CM-IDLE runs a periodic
	// registration update every T3512 (TS 24.501 §5.3.7; the value of the
	// last Registration Accept, 54 min without one). Off by default.
	PeriodicRegistration bool
	// UplinkBuffer is how many uplink packets SendData keeps while the
	// user plane comes back from CM-IDLE (default DefaultUplinkBuffer);
	// more are dropped and counted (Stats.DroppedUplink).
	UplinkBuffer int
	// OuterServiceRequestIEs puts the non-cleartext IEs of an integrity
	// protected Service Request (Uplink data status, PDU session status)
	// in the message itself instead of only in the ciphered NAS message
	// container TS 24.501 §4.4.6 has a UE use: for cores that do not open
	// the container. Off by default.
	OuterServiceRequestIEs bool
	// OnNetworkDeregistration, when set, is told of each deregistration
	// the network starts (TS 24.501 §5.5.2.3.2): its 5GMM cause (0: none
	// given) and whether the UE will register again by itself. It runs
	// with the UE locked: it must not block or call the UE.
	OnNetworkDeregistration func(cause nas.Cause5GMM, reregister bool)
	Observer                Observer // optional
	Logger                  *slog.Logger
}

// DefaultUplinkBuffer is the default Config.UplinkBuffer.
const DefaultUplinkBuffer = 64

type mmState uint8

// 5GMM main states (TS 24.501 §5.1.3.2.1), reduced to what the simulator needs.
const (
	mmDeregistered mmState = iota
	mmRegisteredInitiated
	mmRegistered
	mmDeregisteredInitiated
	mmServiceRequestInitiated
)

func (s mmState) String() string {
	switch s {
	case mmDeregistered:
		return "5GMM-DEREGISTERED"
	case mmRegisteredInitiated:
		return "5GMM-REGISTERED-INITIATED"
	case mmRegistered:
		return "5GMM-REGISTERED"
	case mmDeregisteredInitiated:
		return "5GMM-DEREGISTERED-INITIATED"
	case mmServiceRequestInitiated:
		return "5GMM-SERVICE-REQUEST-INITIATED"
	}
	return "?"
}

type procKind uint8

const (
	procNone procKind = iota
	procRegister
	procReregister
	procDeregister
	procSwitchOff
	procRelease
	procServiceRequest // UE-triggered (a caller, or uplink data)
	procPagingResponse // the service request answering paging
	procPeriodic       // periodic registration update (T3512)
	procHandoverXn     // Xn handover (and the registration update after it)
	procHandoverN2     // N2 handover (and the registration update after it)
)

func (k procKind) name() string {
	switch k {
	case procRegister:
		return ProcRegistration
	case procReregister:
		return ProcReregistration
	case procDeregister:
		return ProcDeregistration
	case procSwitchOff:
		return ProcSwitchOff
	case procRelease:
		return ProcANRelease
	case procServiceRequest:
		return ProcServiceRequest
	case procPagingResponse:
		return ProcPaging
	case procPeriodic:
		return ProcPeriodicRegistration
	case procHandoverXn:
		return ProcHandoverXn
	case procHandoverN2:
		return ProcHandoverN2
	}
	return "none"
}

// handover reports whether k is a handover.
func (k procKind) handover() bool {
	return k == procHandoverXn || k == procHandoverN2
}

// registration reports whether k is a registration procedure.
func (k procKind) registration() bool {
	return k == procRegister || k == procReregister || k == procPeriodic
}

// service reports whether k is a service request.
func (k procKind) service() bool {
	return k == procServiceRequest || k == procPagingResponse
}

// procArgs are the parameters of a procedure besides its kind.
type procArgs struct {
	serviceType uint8     // service request: nas.Service*
	allUplink   bool      // service request: every active session in the Uplink data status
	pagedAt     time.Time // paging response: when the gNB received the Paging
}

type outcome struct {
	window time.Duration
	err    error
}

// Stats counts what a UE has seen; for tests and troubleshooting.
type Stats struct {
	Downlink          int // NAS PDUs received
	DiscardedMAC      int // dropped: integrity check failed (TS 24.501 §4.4.4.2)
	DiscardedOther    int // dropped: undecodable, unexpected or unprotected when protection is required
	AuthFailures      int // Authentication Failure messages sent
	RepeatedResponses int // answers to retransmitted requests (same RAND, repeated Registration Accept, ...)

	// 5GSM
	SMRetransmissions int // T3580/T3582 expiries that resent the request
	SMTimeouts        int // procedures aborted after the last retransmission
	SMRejects         int // establishment/release rejects, 5GSM STATUS, not-forwarded returns
	Modifications     int // network-requested modifications completed
	NetworkReleases   int // network-requested releases completed

	// Idle mode
	Pagings                int // Pagings the gNB handed over
	PagingsIgnored         int // of those: not answered (not idle and registered, or busy)
	ServiceRejects         int // Service Reject messages taken
	NetworkDeregistrations int // network-initiated deregistrations answered
	Reregistrations        int // registrations the UE started itself (Service Reject #9/#10, re-registration required)
	PeriodicRegistrations  int // periodic registration updates started (T3512)
	InactivityReleases     int // releases to CM-IDLE the inactivity timer started
	ReactivationFailures   int // sessions whose user plane a Service Accept says was not re-established
	LocalReleases          int // sessions released locally: the network's PDU session status lacked them
	QueuedUplink           int // uplink packets buffered while the user plane was down
	DroppedUplink          int // buffered packets dropped: buffer full, or no user plane came back

	// Mobility
	Handovers       int // handovers that moved the UE
	MobilityUpdates int // registration updates after them (a TA outside the TAI list)

	// User plane: downlink packets for a PDU session the UE does not
	// have (released, or never established), dropped.
	DroppedDownlink int64
}

// UE is one simulated UE.
type UE struct {
	cfg   Config
	usim  *usim.USIM
	snn   string
	log   *slog.Logger
	debug bool         // log each NAS message (checked first: logging allocates)
	done  chan outcome // capacity 1: at most one procedure in flight

	mu        sync.Mutex
	link      Link
	connected bool // a NAS signalling connection exists (5GMM-CONNECTED)
	mm        mmState

	// current procedure
	busy      bool // a caller is inside runProc
	proc      procKind
	procStart time.Time
	// async: the current procedure was started by the UE itself (paging,
	// uplink data, a timer, a re-registration the network asked for); no
	// caller waits on done, the outcome goes to the Observer. asyncDone is
	// closed when it ends; asyncTimer bounds it (Config.Timeout).
	async      bool
	asyncDone  chan struct{}
	asyncSeq   uint64
	asyncTimer *time.Timer
	deregAck   bool          // Deregistration Accept seen (normal deregistration)
	authCause  nas.Cause5GMM // last Authentication Failure cause sent in this procedure

	// security: sec is the current 5G NAS security context (nil = none).
	// kamf/ksi is the partial native context from the last successful
	// authentication, activated by the Security Mode Command.
	sec         *nas.SecurityContext
	ksi         uint8
	kamf        []byte
	pendingKSI  uint8
	pendingKAMF []byte
	// secured: the network proved it holds our context on this connection
	// (SMC accepted or a protected downlink verified), so uplink messages go
	// protected (TS 24.501 §4.4.4.1).
	secured  bool
	lastRAND []byte
	lastRES  []byte

	guti         *identity.GUTI
	taiList      []identity.TAI
	allowedNSSAI []identity.SNSSAI
	initialPlain []byte // the full plain Registration Request of the ongoing registration (TS 24.501 §4.4.6)
	initialProt  bool   // the initial message went integrity protected
	lastWindow   time.Duration
	stats        Stats
	// droppedDownlink is Stats.DroppedDownlink, counted by HandleData
	// without the lock.
	droppedDownlink atomic.Int64

	// idle mode (idle.go)
	icsAt      time.Time     // the gNB's Initial Context Setup Response in this procedure
	svcReject  nas.Cause5GMM // Service Reject cause of the running service request; 0 = none
	reregister bool          // register again once the connection is released
	t3512      time.Duration // periodic registration timer from the last Registration Accept
	t3512Timer *time.Timer
	t3512Due   time.Time
	inactTimer *time.Timer
	inactDue   time.Time
	inactMark  int64          // user-plane packet count at the last inactivity check
	ulQueue    []queuedPacket // uplink held while the user plane comes back

	// handover (handover.go): the handover's registration update runs
	hoRegistering bool

	// 5GSM: sessions by PDU session identity (index 0 unused); data is
	// each session's user plane, read without mu on the data path.
	sessions [16]*pduSession
	data     [16]atomic.Pointer[dataPath]
	nextPTI  uint8
}

// New returns a deregistered UE without a radio link; see Attach.
func New(cfg Config) (*UE, error) {
	if cfg.USIM == nil {
		return nil, errors.New("ue: no USIM")
	}
	if err := cfg.ServingPLMN.Validate(); err != nil {
		cfg.ServingPLMN = cfg.USIM.PLMN()
	}
	if cfg.EA == 0 {
		cfg.EA = 0xF0
	}
	if cfg.IA == 0 {
		cfg.IA = 0xF0
	}
	if cfg.IMEISV == "" {
		// TAC 35... + the last 6 IMSI digits + SVN: stable per UE.
		imsi := cfg.USIM.IMSI()
		cfg.IMEISV = "35609204" + imsi[len(imsi)-6:] + "01"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.T3580 <= 0 {
		cfg.T3580 = DefaultT3580
	}
	if cfg.T3582 <= 0 {
		cfg.T3582 = DefaultT3582
	}
	if cfg.UplinkBuffer <= 0 {
		cfg.UplinkBuffer = DefaultUplinkBuffer
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &UE{
		cfg:   cfg,
		usim:  cfg.USIM,
		snn:   kdf.ServingNetworkName(cfg.ServingPLMN),
		log:   log.With("supi", cfg.USIM.SUPI()),
		debug: log.Enabled(context.Background(), slog.LevelDebug),
		done:  make(chan outcome, 1),
		ksi:   nas.KSINoKey,
		t3512: DefaultT3512,
	}, nil
}

// Attach sets the UE's radio link (a gNB port). A UE can be moved to another
// link only while it has no signalling connection (a handover moves the
// connection within the link instead). The link learns the UE's paging
// identity (the old one forgets it).
func (u *UE) Attach(l Link) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.link != nil && u.link != l {
		u.link.SetPagingIdentity(nil)
	}
	u.link = l
	if l != nil {
		l.SetPagingIdentity(u.stmsiLocked())
	}
}

// SUPI returns the USIM's SUPI.
func (u *UE) SUPI() string { return u.usim.SUPI() }

// GUTI returns the stored 5G-GUTI.
func (u *UE) GUTI() (identity.GUTI, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.guti == nil {
		return identity.GUTI{}, false
	}
	return *u.guti, true
}

// Registered reports whether the UE is registered: 5GMM-REGISTERED, or a
// service request in progress (5GMM-SERVICE-REQUEST-INITIATED).
func (u *UE) Registered() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.mm == mmRegistered || u.mm == mmServiceRequestInitiated
}

// Connected reports whether the UE has a NAS signalling connection.
func (u *UE) Connected() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.connected
}

// HasSecurityContext reports whether the UE holds a current 5G NAS security context.
func (u *UE) HasSecurityContext() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.sec != nil
}

// AllowedNSSAI returns the allowed NSSAI from the last Registration Accept.
func (u *UE) AllowedNSSAI() []identity.SNSSAI {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]identity.SNSSAI(nil), u.allowedNSSAI...)
}

// TAIList returns the TAI list from the last Registration Accept.
func (u *UE) TAIList() []identity.TAI {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]identity.TAI(nil), u.taiList...)
}

// LastWindow returns the latency window of the last successful procedure.
func (u *UE) LastWindow() time.Duration {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.lastWindow
}

// Stats returns the UE's counters.
func (u *UE) Stats() Stats {
	u.mu.Lock()
	defer u.mu.Unlock()
	st := u.stats
	st.DroppedDownlink = u.droppedDownlink.Load()
	return st
}

// ForgetSecurityContext drops the stored 5G NAS security context (the GUTI
// stays), e.g. to test a GUTI registration the AMF must authenticate again.
func (u *UE) ForgetSecurityContext() {
	u.mu.Lock()
	u.sec, u.kamf, u.ksi = nil, nil, nas.KSINoKey
	u.mu.Unlock()
}

// Errors a procedure can end with (besides transport errors and *RejectError).
var (
	ErrBusy                 = errors.New("ue: a procedure is already running")
	ErrNoLink               = errors.New("ue: not attached to a gNB")
	ErrAuthenticationReject = errors.New("ue: network sent Authentication Reject")
	ErrReleased             = errors.New("ue: signalling connection released before the procedure completed")
)

// RejectError is a Registration Reject.
type RejectError struct{ Cause nas.Cause5GMM }

func (e *RejectError) Error() string {
	return fmt.Sprintf("ue: registration rejected, 5GMM cause %s", e.Cause)
}

// AuthFailureError wraps the end of a procedure after the UE itself refused
// the network's challenge (MAC failure #20, synch failure #21, non-5G #26).
type AuthFailureError struct {
	Cause nas.Cause5GMM
	Err   error // how the procedure then ended
}

func (e *AuthFailureError) Error() string {
	return fmt.Sprintf("ue: sent Authentication Failure %s: %v", e.Cause, e.Err)
}

func (e *AuthFailureError) Unwrap() error { return e.Err }

// Register runs an initial registration with a freshly concealed SUCI
// (TS 24.501 §5.5.1.2), discarding any stored GUTI and security context.
// Its window runs from sending the InitialUEMessage to sending Registration
// Complete.
func (u *UE) Register(ctx context.Context) error {
	return u.run(ctx, procRegister)
}

// Reregister registers with the stored 5G-GUTI, integrity protecting the
// Registration Request with the stored security context (TS 24.501 §4.4.6,
// §5.5.1.2.2): an initial registration if the UE is deregistered, a
// mobility registration update if it is registered. A registered UE that
// is still connected is first released to CM-IDLE (see Release; that part
// is not in the window), since the request then goes in an InitialUEMessage.
func (u *UE) Reregister(ctx context.Context) error {
	return u.run(ctx, procReregister)
}

// Deregister runs UE-originating deregistration (TS 24.501 §5.5.2.2). A
// normal one waits for Deregistration Accept and the release of the
// signalling connection; switch-off waits only for the release. The window
// ends when the gNB sends UE Context Release Complete.
func (u *UE) Deregister(ctx context.Context, switchOff bool) error {
	if switchOff {
		return u.run(ctx, procSwitchOff)
	}
	return u.run(ctx, procDeregister)
}

// Release takes a registered, connected UE to CM-IDLE: the gNB asks the AMF
// to release the UE context (AN release, TS 23.502 §4.2.6) and the UE stays
// 5GMM-REGISTERED. Its window runs to UE Context Release Complete.
func (u *UE) Release(ctx context.Context) error {
	return u.run(ctx, procRelease)
}

// SendRaw sends pdu as it is: in an UplinkNASTransport when connected, else
// in an InitialUEMessage. For tests that feed the core garbled NAS.
func (u *UE) SendRaw(pdu []byte) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.link == nil {
		return ErrNoLink
	}
	var err error
	if u.connected {
		_, err = u.link.SendUplink(pdu)
	} else {
		_, err = u.link.SendInitial(pdu, ngap.RRCMOSignalling, nil)
		if err == nil {
			u.connected = true
		}
	}
	return err
}

// SendNAS sends m on the open connection, integrity protected and ciphered
// with the current security context; with corruptMAC the MAC is altered so
// that the network must discard it (TS 24.501 §4.4.4.3). For tests of the
// core's NAS security.
func (u *UE) SendNAS(m nas.Message, corruptMAC bool) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.sec == nil {
		return errors.New("ue: no security context")
	}
	plain, err := nas.Encode(m)
	if err != nil {
		return err
	}
	pdu, err := u.sec.Protect(plain, nas.IntegrityProtectedAndCiphered, nas.Uplink)
	if err != nil {
		return err
	}
	if corruptMAC {
		pdu[2] ^= 0xFF
	}
	if u.link == nil || !u.connected {
		return ErrNoLink
	}
	_, err = u.link.SendUplink(pdu)
	return err
}

func (u *UE) run(ctx context.Context, k procKind) error {
	return u.runArgs(ctx, k, procArgs{})
}

func (u *UE) runArgs(ctx context.Context, k procKind, a procArgs) error {
	ctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	defer cancel()
	if k == procReregister {
		// A registered UE re-registers from CM-IDLE, as for a periodic or
		// mobility registration update: release the connection first
		// (not part of the re-registration window).
		u.mu.Lock()
		err := u.waitAsyncLocked(ctx)
		connected := u.connected && u.mm == mmRegistered && u.proc == procNone
		u.mu.Unlock()
		if err != nil {
			u.fail(k)
			return fmt.Errorf("%s %s: %w", k.name(), u.SUPI(), err)
		}
		if connected {
			if err := u.run(ctx, procRelease); err != nil {
				u.fail(k)
				return fmt.Errorf("%s %s: %w", k.name(), u.SUPI(), err)
			}
		}
	}
	window, err := u.runProc(ctx, k, a)
	return u.record(k, window, err)
}

// record ends a procedure the caller ran: a failure is counted and
// returned with the procedure's name, a success's window goes to the
// Observer.
func (u *UE) record(k procKind, window time.Duration, err error) error {
	if err != nil {
		if k != procRelease || !errors.Is(err, ErrNotConnected) {
			u.fail(k)
		}
		return fmt.Errorf("%s %s: %w", k.name(), u.SUPI(), err)
	}
	if u.cfg.Observer != nil {
		u.cfg.Observer.Observe(k.name(), window)
	}
	return nil
}

// runProc starts procedure k and waits for its outcome. A procedure the
// UE started itself is waited for first.
func (u *UE) runProc(ctx context.Context, k procKind, a procArgs) (time.Duration, error) {
	u.mu.Lock()
	if err := u.waitAsyncLocked(ctx); err != nil {
		u.mu.Unlock()
		return 0, err
	}
	if u.busy {
		u.mu.Unlock()
		return 0, ErrBusy
	}
	err := u.startLocked(k, a)
	u.busy = err == nil
	u.mu.Unlock()
	if err != nil {
		return 0, err
	}
	// busy stays set until the outcome is taken from done, so that a
	// procedure started meanwhile from another goroutine cannot fill it.
	defer func() {
		u.mu.Lock()
		u.busy = false
		u.mu.Unlock()
	}()
	return u.await(ctx, k)
}

// await waits for the outcome of procedure k, which the caller started;
// when ctx ends first, k is aborted.
func (u *UE) await(ctx context.Context, k procKind) (time.Duration, error) {
	var out outcome
	select {
	case out = <-u.done:
	case <-ctx.Done():
		u.mu.Lock()
		if u.proc == k && !u.async { // (an async one started after ours finished)
			state := u.mm
			u.abortLocked()
			u.mu.Unlock()
			return 0, fmt.Errorf("%w (state %s)", ctx.Err(), state)
		}
		u.mu.Unlock()
		out = <-u.done // finished while we took the lock
	}
	return out.window, out.err
}

func (u *UE) fail(k procKind) {
	if u.cfg.Observer != nil {
		u.cfg.Observer.Fail(k.name())
	}
}

// startLocked checks the preconditions of k and sends its first message.
func (u *UE) startLocked(k procKind, a procArgs) error {
	if u.proc != procNone {
		return ErrBusy
	}
	if u.link == nil {
		return ErrNoLink
	}
	switch k {
	case procRegister, procReregister, procPeriodic:
		if u.connected {
			return fmt.Errorf("ue: registration needs an idle UE (state %s, connected)", u.mm)
		}
		if k != procRegister && u.guti == nil {
			return errors.New("ue: no stored 5G-GUTI to re-register with")
		}
		if k == procPeriodic && u.mm != mmRegistered {
			return fmt.Errorf("ue: periodic registration needs a registered UE (state %s)", u.mm)
		}
		pdu, stmsi, err := u.registrationRequestLocked(k)
		if err != nil {
			return err
		}
		u.beginLocked(k)
		u.mm = mmRegisteredInitiated
		t, err := u.link.SendInitial(pdu, ngap.RRCMOSignalling, stmsi)
		if err != nil {
			u.abortLocked()
			return fmt.Errorf("send registration request: %w", err)
		}
		u.connectedLocked()
		u.procStart = t
	case procServiceRequest, procPagingResponse:
		if err := u.startServiceLocked(k, a); err != nil {
			return err
		}
	case procDeregister, procSwitchOff:
		if u.mm != mmRegistered {
			return fmt.Errorf("ue: deregistration needs a registered UE (state %s)", u.mm)
		}
		pdu, err := u.deregistrationRequestLocked(k == procSwitchOff)
		if err != nil {
			return err
		}
		u.beginLocked(k)
		u.mm = mmDeregisteredInitiated
		// TS 24.501 §5.5.2.2.1: deregistration releases the PDU sessions
		// locally, without 5GSM signalling.
		u.releaseAllSessionsLocked(errors.New("ue: deregistering"))
		var t time.Time
		if u.connected {
			t, err = u.link.SendUplink(pdu)
		} else {
			t, err = u.link.SendInitial(pdu, ngap.RRCMOSignalling, u.stmsiLocked())
			if err == nil {
				u.connectedLocked()
			}
		}
		if err != nil {
			u.abortLocked()
			return fmt.Errorf("send deregistration request: %w", err)
		}
		u.procStart = t
	case procRelease:
		if !u.connected {
			return ErrNotConnected
		}
		u.beginLocked(k)
		t, err := u.link.RequestRelease()
		if err != nil {
			u.abortLocked()
			return fmt.Errorf("send UE context release request: %w", err)
		}
		u.procStart = t
	default:
		return fmt.Errorf("ue: unknown procedure %d", k)
	}
	return nil
}

func (u *UE) beginLocked(k procKind) {
	u.proc = k
	u.hoRegistering = false
	u.deregAck = false
	u.authCause = 0
	u.icsAt = time.Time{}
	u.svcReject = 0
}

// abortLocked ends the current procedure without an outcome (timeout or send
// error) and falls back to a state from which a new procedure can start: a
// failed release, service request or periodic registration leaves the UE
// registered (in CM-IDLE), any other failure deregistered.
func (u *UE) abortLocked() {
	k := u.proc
	switch {
	case k == procRelease:
	case k.service() || k == procPeriodic || k.handover():
		if u.mm == mmServiceRequestInitiated || u.mm == mmRegisteredInitiated {
			u.mm = mmRegistered
		}
		u.dropUplinkLocked(0) // nothing brings the user plane back now
	default:
		u.mm = mmDeregistered
		u.releaseAllSessionsLocked(ErrReleased)
	}
	u.proc = procNone
	u.initialPlain = nil
	u.endAsyncLocked()
	wasConnected := u.connected
	if u.connected && u.link != nil {
		u.link.Drop()
	}
	u.connected, u.secured = false, false
	if wasConnected && u.mm == mmRegistered {
		u.userPlaneLostLocked()
		u.armPeriodicLocked()
	}
}

// finishLocked ends the current procedure; end is when its window closed.
// The outcome goes to the waiting caller, or for a procedure the UE
// started itself, to the Observer.
func (u *UE) finishLocked(end time.Time, err error) {
	if u.proc == procNone {
		return
	}
	k := u.proc
	if err != nil && u.authCause != 0 {
		err = &AuthFailureError{Cause: u.authCause, Err: err}
	}
	out := outcome{err: err}
	if err == nil {
		out.window = end.Sub(u.procStart)
		u.lastWindow = out.window
	}
	u.proc = procNone
	u.initialPlain = nil
	u.hoRegistering = false
	if u.connected && u.mm == mmRegistered {
		u.armInactivityLocked()
	}
	if !u.async {
		u.done <- out
		return
	}
	u.endAsyncLocked()
	if err != nil {
		u.log.Info("procedure failed", "proc", k.name(), "err", err)
		u.fail(k)
		return
	}
	if u.cfg.Observer != nil {
		u.cfg.Observer.Observe(k.name(), out.window)
	}
}

func (u *UE) stmsiLocked() *identity.STMSI {
	if u.guti == nil {
		return nil
	}
	s := u.guti.STMSI()
	return &s
}

// setGUTILocked stores g (nil: none) and tells the gNB the paging
// identity that goes with it.
func (u *UE) setGUTILocked(g *identity.GUTI) {
	if g != nil {
		c := *g
		g = &c
	}
	u.guti = g
	if u.link != nil {
		u.link.SetPagingIdentity(u.stmsiLocked())
	}
}

func (u *UE) secCap() nas.UESecurityCapability {
	return nas.UESecurityCapability{EA: u.cfg.EA, IA: u.cfg.IA}
}

// registrationRequestLocked builds the initial NAS message of a registration
// and remembers the full plain message for the Security Mode Complete.
// TS 24.501 §4.4.6: without a valid security context the initial message
// carries the cleartext IEs only, unprotected; with one, it is integrity
// protected (and still cleartext only, since ours needs no other IE).
func (u *UE) registrationRequestLocked(k procKind) ([]byte, *identity.STMSI, error) {
	capab := u.secCap()
	req := nas.RegistrationRequest{
		RegistrationType: nas.RegistrationInitial,
		// A re-registration the caller asks for is followed by more of
		// the caller's signalling: the connection is to stay (TS 24.501
		// §5.5.1.3.4: without a follow-on request the network releases it
		// once the update is done, as it does after a periodic one).
		FollowOnRequest:      k == procReregister,
		NgKSI:                nas.NgKSI{KSI: nas.KSINoKey},
		UESecurityCapability: &capab,
	}
	var stmsi *identity.STMSI
	if k == procRegister {
		// A fresh start: like a newly inserted USIM.
		u.setGUTILocked(nil)
		u.sec, u.kamf, u.ksi = nil, nil, nas.KSINoKey
		u.mm = mmDeregistered
		u.releaseAllSessionsLocked(errors.New("ue: new registration"))
		s, err := u.usim.SUCI()
		if err != nil {
			return nil, nil, err
		}
		req.MobileIdentity = nas.MobileIdentity{Type: nas.IdentitySUCI, SUCI: s.String()}
	} else {
		switch {
		case k == procPeriodic:
			req.RegistrationType = nas.RegistrationPeriodicUpdating
		case u.mm == mmRegistered:
			req.RegistrationType = nas.RegistrationMobilityUpdating
		}
		req.MobileIdentity = nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *u.guti}
		if u.sec != nil {
			req.NgKSI = nas.NgKSI{KSI: u.ksi}
		}
		stmsi = u.stmsiLocked()
	}
	clear, err := nas.Encode(&req)
	if err != nil {
		return nil, nil, fmt.Errorf("encode registration request: %w", err)
	}
	full := req
	full.RequestedNSSAI = u.cfg.RequestedNSSAI
	u.initialPlain, err = nas.Encode(&full)
	if err != nil {
		return nil, nil, fmt.Errorf("encode registration request: %w", err)
	}
	u.initialProt = false
	if k != procRegister && u.sec != nil {
		pdu, err := u.sec.Protect(clear, nas.IntegrityProtected, nas.Uplink)
		if err != nil {
			return nil, nil, fmt.Errorf("protect registration request: %w", err)
		}
		u.initialProt = true
		return pdu, stmsi, nil
	}
	return clear, stmsi, nil
}

// deregistrationRequestLocked builds the Deregistration Request (TS 24.501
// §5.5.2.2.1) with the 5G-GUTI. As an initial NAS message it is only
// integrity protected; on an existing connection also ciphered.
func (u *UE) deregistrationRequestLocked(switchOff bool) ([]byte, error) {
	req := nas.DeregistrationRequestUEOriginating{
		SwitchOff:  switchOff,
		AccessType: nas.Access3GPP,
		NgKSI:      nas.NgKSI{KSI: u.ksi},
	}
	if u.guti != nil {
		req.MobileIdentity = nas.MobileIdentity{Type: nas.IdentityGUTI, GUTI: *u.guti}
	} else {
		s, err := u.usim.SUCI()
		if err != nil {
			return nil, err
		}
		req.MobileIdentity = nas.MobileIdentity{Type: nas.IdentitySUCI, SUCI: s.String()}
	}
	plain, err := nas.Encode(&req)
	if err != nil {
		return nil, fmt.Errorf("encode deregistration request: %w", err)
	}
	if u.sec == nil {
		return plain, nil
	}
	hdr := nas.IntegrityProtectedAndCiphered
	if !u.connected {
		hdr = nas.IntegrityProtected
	}
	return u.sec.Protect(plain, hdr, nas.Uplink)
}
