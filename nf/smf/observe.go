package smf

import (
	"time"

	"github.com/tern5g/tern/internal/procedures"
)

// ProcPDUSessionEstablishment is the procedure name given to the Observer.
const ProcPDUSessionEstablishment = "pdu_session_establishment"

// SetObserver sets the Observer of PDU session establishments, timed from
// CreateSMContext to the RAN's answer to the N2 setup (nil: none); safe to
// call at any time.
func (s *SMF) SetObserver(o procedures.Observer) { s.procs.SetObserver(o) }

// establishmentEnded reports the outcome of c's establishment once: later
// calls (the context released after a reject) find it reported.
func (s *SMF) establishmentEnded(c *smContext, outcome string) {
	if c.establishing.IsZero() {
		return
	}
	s.procedureEnded(c.supi, int32(c.psi), outcome, c.establishing)
	c.establishing = time.Time{}
}

// procedureEnded logs the outcome and tells the Observer.
func (s *SMF) procedureEnded(supi string, psi int32, outcome string, start time.Time) {
	s.procs.Ended(s.log, ProcPDUSessionEstablishment, outcome, start, "supi", supi, "psi", psi)
}
