package amf

import (
	"fmt"
	"reflect"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sctp"
)

var (
	causeUnknownLocalID       = ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkUnknownLocalUENGAPID}
	causeInconsistentRemoteID = ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkInconsistentRemoteUENGAPID}
	causeNotCompatibleState   = ngap.Cause{Group: ngap.CauseProtocol, Value: ngap.ProtocolMessageNotCompatibleWithReceiverState}
	causeTransferSyntax       = ngap.Cause{Group: ngap.CauseProtocol, Value: ngap.ProtocolTransferSyntaxError}
	causeUnknownPLMN          = ngap.Cause{Group: ngap.CauseMisc, Value: ngap.MiscUnknownPLMNOrSNPN}
	causeSliceNotSupported    = ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkSliceNotSupported}
	causeNASNormalRelease     = ngap.Cause{Group: ngap.CauseNAS, Value: ngap.NASNormalRelease}
	causeNASDeregister        = ngap.Cause{Group: ngap.CauseNAS, Value: ngap.NASDeregister}
	causeNASAuthFailure       = ngap.Cause{Group: ngap.CauseNAS, Value: ngap.NASAuthenticationFailure}
	causeNASUnspecified       = ngap.Cause{Group: ngap.CauseNAS, Value: ngap.NASUnspecified}
	cause5GCGeneratedReason   = ngap.Cause{Group: ngap.CauseRadioNetwork, Value: ngap.RadioNetworkReleaseDueTo5GCGeneratedReason}
)

// send encodes m and sends it on stream (TS 38.412 §7: PPID 60) now. A
// UE's step sends through its ue (ue.sendN2), which holds the message
// until the step's record is committed.
func (g *gnb) send(stream uint16, m ngap.Message) error {
	c := g.conn()
	if c == nil && !g.resumable.Load() {
		return fmt.Errorf("send ngap procedure %d: %w", m.ProcedureCode(), errDetached)
	}
	b, err := ngap.Encode(m)
	if err != nil {
		return fmt.Errorf("encode ngap procedure %d: %w", m.ProcedureCode(), err)
	}
	if c == nil {
		err = g.sendOrPend(stream, b)
	} else {
		err = g.sendEncoded(c, stream, b)
	}
	if err != nil {
		return fmt.Errorf("send ngap procedure %d: %w", m.ProcedureCode(), err)
	}
	return nil
}

// maxPending bounds the messages a detached gNB keeps for its resume.
const maxPending = 1024

// pendingN2 is a message kept for a detached gNB until it is resumed.
type pendingN2 struct {
	stream uint16
	b      []byte
}

// sendOrPend sends b on g's association; on a detached gNB that a front
// end may still resume (restored, before ResumeConn or ResumeDone) it keeps
// b, in order, for ResumeConn to send first. A restored step (an SMF
// finishing a PDU session establishment it had in flight, a timer) may
// produce a UE's message before its gNB is resumed; dropping it would cost
// the UE a NAS timer (issue 36, local mode). Over maxPending, or once
// ResumeDone gave the gNB up, it fails as on a detached gNB.
func (g *gnb) sendOrPend(stream uint16, b []byte) error {
	g.sendMu.Lock()
	defer g.sendMu.Unlock()
	if c := g.conn(); c != nil {
		return c.Send(stream, ngap.PPID, b)
	}
	if !g.resumable.Load() || len(g.pending) >= maxPending {
		return errDetached
	}
	g.pending = append(g.pending, pendingN2{stream, b})
	return nil
}

// attach gives a detached gNB its association and sends what it kept
// first: under sendMu, so a UE's next message waits for them.
func (g *gnb) attach(c sctp.Conn) {
	g.sendMu.Lock()
	defer g.sendMu.Unlock()
	g.assoc.Store(&c)
	g.resumable.Store(false)
	for i, p := range g.pending {
		if err := c.Send(p.stream, ngap.PPID, p.b); err != nil {
			g.log.Warn("message kept for the resume not sent", "err", err)
		}
		g.pending[i] = pendingN2{}
	}
	g.pending = nil
}

// giveUp drops what a detached gNB kept: it will not be resumed.
func (g *gnb) giveUp() {
	g.sendMu.Lock()
	defer g.sendMu.Unlock()
	g.resumable.Store(false)
	if n := len(g.pending); n > 0 {
		g.log.Warn("gNB not resumed: messages kept for it dropped", "messages", n)
	}
	g.pending = nil
}

// sendEncoded sends an encoded NGAP PDU on c, g's association; sends
// from the UEs' executors are serialised here.
func (g *gnb) sendEncoded(c sctp.Conn, stream uint16, b []byte) error {
	if c == nil {
		return g.sendOrPend(stream, b) // held while g was detached
	}
	g.sendMu.Lock()
	err := c.Send(stream, ngap.PPID, b)
	g.sendMu.Unlock()
	return err
}

// sendErrorIndication sends an Error Indication (TS 38.413 §8.7.5) on the
// UE's stream when UE IDs are known, else on stream 0.
func (g *gnb) sendErrorIndication(ind *ngap.ErrorIndication) { g.sendErrorIndicationFor(nil, ind) }

// sendErrorIndicationFor is sendErrorIndication from a step of u (nil: the
// reader), which holds it as any output of the step.
func (g *gnb) sendErrorIndicationFor(u *ue, ind *ngap.ErrorIndication) {
	stream := uint16(0)
	if ind.AMFUENGAPID != nil {
		stream = g.streamFor(*ind.AMFUENGAPID)
	}
	g.amf.stats.errorIndications.Add(1)
	if err := u.sendN2(g, stream, ind); err != nil {
		g.log.Warn("error indication not sent", "err", err)
	}
}

func (g *gnb) errorIndication(cause ngap.Cause, amfID, ranID *int64) {
	c := cause
	g.sendErrorIndication(&ngap.ErrorIndication{AMFUENGAPID: amfID, RANUENGAPID: ranID, Cause: &c})
}

// errorIndication is an Error Indication to g from a step of u.
func (u *ue) errorIndication(g *gnb, cause ngap.Cause, amfID, ranID *int64) {
	c := cause
	g.sendErrorIndicationFor(u, &ngap.ErrorIndication{AMFUENGAPID: amfID, RANUENGAPID: ranID, Cause: &c})
}

// ngSetupResponse builds the NG Setup Response of TS 38.413 §9.2.6.2.
func (a *AMF) ngSetupResponse() *ngap.NGSetupResponse {
	resp := &ngap.NGSetupResponse{
		AMFName:             a.cfg.name,
		ServedGUAMIs:        append([]identity.GUAMI(nil), a.cfg.guamis...),
		RelativeAMFCapacity: a.cfg.relCapacity,
	}
	for _, ps := range a.cfg.plmnSlices {
		resp.PLMNSupport = append(resp.PLMNSupport, ngap.PLMNSupport{PLMN: ps.plmn, Slices: ps.slices})
	}
	return resp
}

// sendDownlinkNAS sends a NAS PDU in a Downlink NAS Transport (TS 38.413 §8.6.2).
func (r *ranUE) sendDownlinkNAS(pdu []byte) error {
	return r.ue.sendN2(r.gnb, r.stream, &ngap.DownlinkNASTransport{
		AMFUENGAPID: r.amfID, RANUENGAPID: r.ranID, NASPDU: pdu,
	})
}

// sendContextRelease sends a UE Context Release Command (TS 38.413 §8.3.3)
// with the UE NGAP ID pair, at most once per connection: once the command
// is out, the gNB answers it with UE Context Release Complete (§8.3.3.2) and
// a second command could only reach IDs it has already freed (it would
// answer with an Error Indication, or release a reused RAN UE NGAP ID).
// Several paths release a connection (gNB request, a procedure's end, a
// re-registration that replaces it, TS 23.502 §4.2.2.2.2), and the
// Complete may arrive after the next of them, so release is idempotent
// here rather than in each caller. Runs on the UE's executor.
func (r *ranUE) sendContextRelease(cause ngap.Cause) error {
	if r.state == legReleasing {
		return nil
	}
	r.state = legReleasing
	return r.ue.sendN2(r.gnb, r.stream, &ngap.UEContextReleaseCommand{
		AMFUENGAPID: r.amfID, RANUENGAPID: r.ranID, Cause: cause,
	})
}

// ueIDsOf returns the UE NGAP IDs of a UE-associated message we did not
// expect, so the Error Indication can carry them. Every UE-associated
// message type of package ngap names them AMFUENGAPID and RANUENGAPID;
// reflection is fine on this error path.
func ueIDsOf(m ngap.Message) (amfID, ranID *int64) {
	v := reflect.ValueOf(m)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, nil
	}
	s := v.Elem()
	read := func(name string) *int64 {
		f := s.FieldByName(name)
		if !f.IsValid() || f.Kind() != reflect.Int64 {
			return nil
		}
		x := f.Int()
		return &x
	}
	return read("AMFUENGAPID"), read("RANUENGAPID")
}
