package smf

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"
)

// upfDouble is a UPF the SMF reaches over PFCP/UDP, written with
// go-pfcp's messages rather than tern's codec, that allocates TEIDs the
// way independent UPFs do (eUPF's resource manager, for one):
//
//   - CHOOSE takes the lowest TEID its allocator has not handed out, and a
//     restart starts the allocator afresh (TEID 1 first);
//   - a Local F-TEID the CP sets is used as given, but the allocator does
//     not know it: only with RESTI (PFCPSEReq-Flags, TS 29.244 §8.2.136),
//     and only when the double honours RESTI, is it reserved (a Rel-15
//     UPF ignores the flag, FTUP or not);
//   - its uplink table maps a TEID to the session installed last with it
//     (a later session with the same TEID takes the tunnel over);
//   - deleting a session whose tunnel another session took over fails, and
//     the double then sends no answer at all (eUPF's handler returns an
//     error and nothing is sent); dropDeletes makes it answer no deletion.
type upfDouble struct {
	t     *testing.T
	conn  *net.UDPConn
	n3    netip.Addr
	ftup  bool // advertise FTUP (UP Function Features octet 5 bit 5)
	resti bool // honour RESTI

	mu          sync.Mutex
	recovery    time.Time
	associated  bool
	dropDeletes bool
	nextSEID    uint64
	sessions    map[uint64]*doubleSession // by UP SEID
	tunnels     map[uint32]uint64         // uplink TEID -> UP SEID
	allocated   map[uint32]bool           // TEIDs the allocator handed out or RESTI reserved
	deletesOK   int
	deletesLost int // deletions that failed and were not answered
	restis      int // establishments with RESTI
}

type doubleSession struct {
	cpSEID uint64
	teid   uint32
	ue     netip.Addr
}

func newUPFDouble(t *testing.T, ftup, resti bool) *upfDouble {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	d := &upfDouble{t: t, conn: conn, n3: upfN3, ftup: ftup, resti: resti, recovery: time.Now().Truncate(time.Second)}
	d.reset()
	done := make(chan struct{})
	go d.serve(done)
	t.Cleanup(func() { conn.Close(); <-done })
	return d
}

func (d *upfDouble) addr() netip.AddrPort { return d.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// reset empties the double's state. d.mu held or not yet shared.
func (d *upfDouble) reset() {
	d.associated = false
	d.nextSEID = 0
	d.sessions = make(map[uint64]*doubleSession)
	d.tunnels = make(map[uint32]uint64)
	d.allocated = make(map[uint32]bool)
}

// restart loses every session and association, starts the TEID
// allocator afresh and advertises a new Recovery Time Stamp.
func (d *upfDouble) restart() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reset()
	d.recovery = d.recovery.Add(time.Second)
}

// uplink is the UE address of the session the double's uplink table
// sends TEID teid to.
func (d *upfDouble) uplink(teid uint32) (netip.Addr, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.sessions[d.tunnels[teid]]
	if !ok {
		return netip.Addr{}, false
	}
	return s.ue, true
}

func (d *upfDouble) serve(done chan struct{}) {
	defer close(done)
	buf := make([]byte, 65535)
	for {
		n, peer, err := d.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		m, err := message.Parse(buf[:n])
		if err != nil {
			d.t.Errorf("upf double: undecodable PFCP from the SMF: %v", err)
			continue
		}
		resp := d.handle(m)
		if resp == nil {
			continue
		}
		b := make([]byte, resp.MarshalLen())
		if err := resp.MarshalTo(b); err != nil {
			d.t.Errorf("upf double: %v", err)
			continue
		}
		if _, err := d.conn.WriteToUDPAddrPort(b, peer); err != nil && !errors.Is(err, net.ErrClosed) {
			d.t.Errorf("upf double: %v", err)
		}
	}
}

func (d *upfDouble) handle(m message.Message) message.Message {
	d.mu.Lock()
	defer d.mu.Unlock()
	nodeID := ie.NewNodeID(d.n3.String(), "", "")
	switch m := m.(type) {
	case *message.HeartbeatRequest:
		return message.NewHeartbeatResponse(m.Sequence(), ie.NewRecoveryTimeStamp(d.recovery))
	case *message.AssociationSetupRequest:
		d.associated = true
		features := ie.NewUPFunctionFeatures(0x01) // BUCP
		if d.ftup {
			features = ie.NewUPFunctionFeatures(0x01 | 0x10) // BUCP, FTUP
		}
		return message.NewAssociationSetupResponse(m.Sequence(), nodeID, ie.NewCause(ie.CauseRequestAccepted),
			ie.NewRecoveryTimeStamp(d.recovery), features)
	case *message.SessionEstablishmentRequest:
		return d.establish(m, nodeID)
	case *message.SessionModificationRequest:
		s, ok := d.sessions[m.SEID()]
		if !ok {
			return message.NewSessionModificationResponse(0, 0, 0, m.Sequence(), 0, ie.NewCause(ie.CauseSessionContextNotFound))
		}
		return message.NewSessionModificationResponse(0, 0, s.cpSEID, m.Sequence(), 0, ie.NewCause(ie.CauseRequestAccepted))
	case *message.SessionDeletionRequest:
		s, ok := d.sessions[m.SEID()]
		switch {
		case !d.associated:
			return message.NewSessionDeletionResponse(0, 0, 0, m.Sequence(), 0, ie.NewCause(ie.CauseNoEstablishedPFCPAssociation))
		case !ok:
			return message.NewSessionDeletionResponse(0, 0, 0, m.Sequence(), 0, ie.NewCause(ie.CauseSessionContextNotFound))
		case d.dropDeletes || d.tunnels[s.teid] != m.SEID():
			d.deletesLost++
			return nil
		}
		delete(d.tunnels, s.teid)
		delete(d.allocated, s.teid)
		delete(d.sessions, m.SEID())
		d.deletesOK++
		return message.NewSessionDeletionResponse(0, 0, s.cpSEID, m.Sequence(), 0, ie.NewCause(ie.CauseRequestAccepted))
	}
	d.t.Errorf("upf double: unexpected %s", m.MessageTypeName())
	return nil
}

func (d *upfDouble) establish(m *message.SessionEstablishmentRequest, nodeID *ie.IE) message.Message {
	cp, err := m.CPFSEID.FSEID()
	if err != nil {
		d.t.Errorf("upf double: CP F-SEID: %v", err)
		return nil
	}
	reject := func(cause uint8) message.Message {
		return message.NewSessionEstablishmentResponse(0, 0, cp.SEID, m.Sequence(), 0, nodeID, ie.NewCause(cause))
	}
	if !d.associated {
		return reject(ie.CauseNoEstablishedPFCPAssociation)
	}
	resti := m.PFCPSEReqFlags != nil && m.PFCPSEReqFlags.HasRESTI()
	var s doubleSession
	s.cpSEID = cp.SEID
	var created []*ie.IE
	for _, pdr := range m.CreatePDR {
		if ue, err := pdr.UEIPAddress(); err == nil {
			s.ue, _ = netip.AddrFromSlice(ue.IPv4Address.To4())
		}
		src, err := pdr.SourceInterface()
		if err != nil || src != ie.SrcInterfaceAccess {
			continue
		}
		id, _ := pdr.PDRID()
		var f *ie.FTEIDFields
		kids, _ := pdr.CreatePDR()
		for _, k := range kids {
			if k.Type == ie.PDI {
				f, err = k.FTEID()
			}
		}
		if f == nil || err != nil {
			return reject(ie.CauseMandatoryIEMissing)
		}
		switch {
		case f.HasCh():
			s.teid = 1
			for d.allocated[s.teid] {
				s.teid++
			}
			d.allocated[s.teid] = true
			created = append(created, ie.NewCreatedPDR(ie.NewPDRID(id), ie.NewFTEID(0x01, s.teid, net.IP(d.n3.AsSlice()), nil, 0)))
		case resti && d.resti:
			if d.allocated[f.TEID] {
				return reject(ie.CauseRuleCreationModificationFailure)
			}
			s.teid = f.TEID
			d.allocated[s.teid] = true
			d.restis++
		default:
			s.teid = f.TEID // the CP's choice: the allocator does not know it
		}
	}
	d.nextSEID++
	d.sessions[d.nextSEID] = &s
	d.tunnels[s.teid] = d.nextSEID
	ies := append([]*ie.IE{nodeID, ie.NewCause(ie.CauseRequestAccepted), ie.NewFSEID(d.nextSEID, net.IP(d.n3.AsSlice()), nil)}, created...)
	return message.NewSessionEstablishmentResponse(0, 0, cp.SEID, m.Sequence(), 0, ies...)
}
