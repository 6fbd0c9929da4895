package ngap

import (
	"errors"
	"fmt"

	"github.com/free5gc/ngap/aper"
	"github.com/free5gc/ngap/ie"
	f5 "github.com/free5gc/ngap/message"

	"github.com/tern5g/tern/identity"
)

// maxTAIsForPaging is maxnoofTAIforPaging (TS 38.413 §9.4.6).
const maxTAIsForPaging = 16

// fragmentBits is the length from which aligned PER splits a bit string in
// fragments (X.691 §11.9.3.8): 16K.
const fragmentBits = 16384

// maxDRBs is maxnoofDRBs (TS 38.413 §9.4.6), the bound of the DRBs Subject
// to Status Transfer List.
const maxDRBs = 32

func handoverTypeFrom(x *ie.HandoverType) (HandoverType, error) {
	if x.Value > aper.Enumerated(Handover5GSToUTRAN) {
		return 0, fmt.Errorf("handover type %d", x.Value)
	}
	return HandoverType(x.Value), nil
}

// intra5GSOnly checks the handover type of a Handover Required or Handover
// Command: the other types need IEs tern does not model (see HandoverType).
func intra5GSOnly(t HandoverType) error {
	if t != HandoverIntra5GS {
		return fmt.Errorf("handover type %d: only intra-5GS handover is supported", t)
	}
	return nil
}

// containerIE checks a transparent container (TS 38.413 §9.3.1.20,
// §9.3.1.21): an OCTET STRING tern carries as is.
func containerIE(name string, b []byte) (aper.OctetString, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("empty %s", name)
	}
	return aper.OctetString(b), nil
}

func securityContextIE(s SecurityContext) (*ie.SecurityContext, error) {
	if s.NextHopChainingCount > 7 {
		return nil, fmt.Errorf("next hop chaining count %d (0..7)", s.NextHopChainingCount)
	}
	return &ie.SecurityContext{
		NextHopChainingCount: &ie.NextHopChainingCount{Value: int64(s.NextHopChainingCount)},
		NextHopNH:            securityKeyIE(s.NextHopNH),
	}, nil
}

func securityContextFrom(x *ie.SecurityContext) (SecurityContext, error) {
	if x.NextHopChainingCount == nil || x.NextHopChainingCount.Value < 0 || x.NextHopChainingCount.Value > 7 {
		return SecurityContext{}, errors.New("security context: bad next hop chaining count")
	}
	nh, err := securityKeyFrom(x.NextHopNH)
	if err != nil {
		return SecurityContext{}, fmt.Errorf("security context: next hop NH: %w", err)
	}
	return SecurityContext{NextHopChainingCount: uint8(x.NextHopChainingCount.Value), NextHopNH: nh}, nil
}

func targetIDIE(t TargetRANNodeID) (*ie.TargetID, error) {
	g, err := globalGNBIDIE(t.GlobalGNBID)
	if err != nil {
		return nil, fmt.Errorf("target ID: %w", err)
	}
	tai, err := taiIE(t.SelectedTAI)
	if err != nil {
		return nil, fmt.Errorf("target ID: selected %w", err)
	}
	return &ie.TargetID{Choice: &ie.TargetRANNodeID{GlobalRANNodeID: g, SelectedTAI: tai}}, nil
}

func targetIDFrom(x *ie.TargetID) (TargetRANNodeID, error) {
	r, ok := x.Choice.(*ie.TargetRANNodeID)
	if !ok {
		return TargetRANNodeID{}, fmt.Errorf("target ID: unsupported choice %T", x.Choice)
	}
	g, err := globalGNBIDFrom(r.GlobalRANNodeID)
	if err != nil {
		return TargetRANNodeID{}, fmt.Errorf("target ID: %w", err)
	}
	tai, err := taiFrom(r.SelectedTAI)
	if err != nil {
		return TargetRANNodeID{}, fmt.Errorf("target ID: selected %w", err)
	}
	return TargetRANNodeID{GlobalGNBID: g, SelectedTAI: tai}, nil
}

// countValueIE checks c and returns its PDCP SN and HFN as the IE wants
// them.
func countValueIE(dir string, c COUNTValue) (sn, hfn *int64, err error) {
	var snMax, hfnMax uint32
	switch c.SNLength {
	case 12:
		snMax, hfnMax = 1<<12-1, 1<<20-1
	case 18:
		snMax, hfnMax = 1<<18-1, 1<<14-1
	default:
		return nil, nil, fmt.Errorf("%s COUNT: PDCP SN length %d (12 or 18)", dir, c.SNLength)
	}
	if c.PDCPSN > snMax || c.HFN > hfnMax {
		return nil, nil, fmt.Errorf("%s COUNT: PDCP SN %d or HFN %d out of range for %d-bit SN", dir, c.PDCPSN, c.HFN, c.SNLength)
	}
	s, h := int64(c.PDCPSN), int64(c.HFN)
	return &s, &h, nil
}

func countValueFrom(dir string, snLen uint8, sn, hfn *int64) (COUNTValue, error) {
	snMax, hfnMax := int64(1<<12-1), int64(1<<20-1)
	if snLen == 18 {
		snMax, hfnMax = 1<<18-1, 1<<14-1
	}
	if sn == nil || hfn == nil || *sn < 0 || *sn > snMax || *hfn < 0 || *hfn > hfnMax {
		return COUNTValue{}, fmt.Errorf("%s COUNT for %d-bit PDCP SN: bad SN or HFN", dir, snLen)
	}
	return COUNTValue{SNLength: snLen, PDCPSN: uint32(*sn), HFN: uint32(*hfn)}, nil
}

// receiveStatusIE builds Receive Status of UL PDCP SDUs (TS 38.413
// §9.3.1.108): 1..2048 bits with a 12-bit SN, 1..131072 with an 18-bit SN.
// A bitmap of 16384 bits or more goes in fragments (X.691 §11.9.3.8), and
// must fill whole octets: free5gc's decoder puts the bits of a last fragment
// that ends inside an octet at the wrong end of it (and Wireshark 4.0 too
// rejects such fragments).
func receiveStatusIE(d DRBStatus) (*aper.BitString, error) {
	if d.ULReceiveStatus == nil {
		if d.ULReceiveStatusBits != 0 {
			return nil, fmt.Errorf("DRB %d: receive status length without bitmap", d.DRBID)
		}
		return nil, nil
	}
	limit := uint32(2048)
	if d.UL.SNLength == 18 {
		limit = 131072
	}
	n := d.ULReceiveStatusBits
	if n == 0 || n > limit || uint32(len(d.ULReceiveStatus)) != (n+7)/8 {
		return nil, fmt.Errorf("DRB %d: receive status of %d bits in %d octets (1..%d bits)", d.DRBID, n, len(d.ULReceiveStatus), limit)
	}
	if n >= fragmentBits && n%8 != 0 {
		return nil, fmt.Errorf("DRB %d: receive status of %d bits: from %d bits on, whole octets only", d.DRBID, n, fragmentBits)
	}
	// unused trailing bits go as zero
	b := append([]byte(nil), d.ULReceiveStatus...)
	if r := n % 8; r != 0 {
		b[len(b)-1] &= 0xFF << (8 - r)
	}
	return &aper.BitString{Bytes: b, BitLength: uint64(n)}, nil
}

func receiveStatusFrom(d *DRBStatus, x *aper.BitString) error {
	if x == nil {
		return nil
	}
	if x.BitLength == 0 || uint64(len(x.Bytes)) != (x.BitLength+7)/8 {
		return fmt.Errorf("DRB %d: receive status of %d bits in %d octets", d.DRBID, x.BitLength, len(x.Bytes))
	}
	if x.BitLength >= fragmentBits && x.BitLength%8 != 0 {
		// free5gc misplaces the bits of the last fragment (receiveStatusIE)
		return fmt.Errorf("DRB %d: fragmented receive status of %d bits, not whole octets", d.DRBID, x.BitLength)
	}
	d.ULReceiveStatus = append([]byte(nil), x.Bytes...)
	d.ULReceiveStatusBits = uint32(x.BitLength)
	if r := x.BitLength % 8; r != 0 {
		d.ULReceiveStatus[len(d.ULReceiveStatus)-1] &= 0xFF << (8 - r)
	}
	return nil
}

// ranStatusIE builds the RAN Status Transfer Transparent Container (TS
// 38.413 §9.3.1.108).
func ranStatusIE(drbs []DRBStatus) (*ie.RANStatusTransferTransparentContainer, error) {
	if len(drbs) == 0 || len(drbs) > maxDRBs {
		return nil, fmt.Errorf("RAN status transfer of %d DRBs (1..%d)", len(drbs), maxDRBs)
	}
	l := &ie.DRBsSubjectToStatusTransferList{List: make([]ie.DRBsSubjectToStatusTransferItem, len(drbs))}
	for i, d := range drbs {
		if d.DRBID < 1 || d.DRBID > maxDRBs {
			return nil, fmt.Errorf("DRB ID %d (1..%d)", d.DRBID, maxDRBs)
		}
		ulSN, ulHFN, err := countValueIE("UL", d.UL)
		if err != nil {
			return nil, fmt.Errorf("DRB %d: %w", d.DRBID, err)
		}
		dlSN, dlHFN, err := countValueIE("DL", d.DL)
		if err != nil {
			return nil, fmt.Errorf("DRB %d: %w", d.DRBID, err)
		}
		rs, err := receiveStatusIE(d)
		if err != nil {
			return nil, err
		}
		it := ie.DRBsSubjectToStatusTransferItem{DRBID: &ie.DRBID{Value: int64(d.DRBID)}}
		if d.UL.SNLength == 12 {
			it.DRBStatusUL = &ie.DRBStatusUL{Choice: &ie.DRBStatusUL12{
				ULCOUNTValue: &ie.COUNTValueForPDCPSN12{PDCPSN12: ulSN, HFNPDCPSN12: ulHFN}, ReceiveStatusOfULPDCPSDUs: rs,
			}}
		} else {
			it.DRBStatusUL = &ie.DRBStatusUL{Choice: &ie.DRBStatusUL18{
				ULCOUNTValue: &ie.COUNTValueForPDCPSN18{PDCPSN18: ulSN, HFNPDCPSN18: ulHFN}, ReceiveStatusOfULPDCPSDUs: rs,
			}}
		}
		if d.DL.SNLength == 12 {
			it.DRBStatusDL = &ie.DRBStatusDL{Choice: &ie.DRBStatusDL12{DLCOUNTValue: &ie.COUNTValueForPDCPSN12{PDCPSN12: dlSN, HFNPDCPSN12: dlHFN}}}
		} else {
			it.DRBStatusDL = &ie.DRBStatusDL{Choice: &ie.DRBStatusDL18{DLCOUNTValue: &ie.COUNTValueForPDCPSN18{PDCPSN18: dlSN, HFNPDCPSN18: dlHFN}}}
		}
		l.List[i] = it
	}
	return &ie.RANStatusTransferTransparentContainer{DRBsSubjectToStatusTransferList: l}, nil
}

func ranStatusFrom(x *ie.RANStatusTransferTransparentContainer) ([]DRBStatus, error) {
	if x.DRBsSubjectToStatusTransferList == nil {
		return nil, errors.New("RAN status transfer: missing DRBs subject to status transfer list")
	}
	out := make([]DRBStatus, len(x.DRBsSubjectToStatusTransferList.List))
	for i, it := range x.DRBsSubjectToStatusTransferList.List {
		if it.DRBID == nil || it.DRBID.Value < 1 || it.DRBID.Value > maxDRBs {
			return nil, errors.New("RAN status transfer: bad DRB ID")
		}
		d := DRBStatus{DRBID: uint8(it.DRBID.Value)}
		if it.DRBStatusUL == nil || it.DRBStatusDL == nil {
			return nil, fmt.Errorf("DRB %d: missing DRB status", d.DRBID)
		}
		var err error
		switch c := it.DRBStatusUL.Choice.(type) {
		case *ie.DRBStatusUL12:
			if c.ULCOUNTValue == nil {
				return nil, fmt.Errorf("DRB %d: missing UL COUNT", d.DRBID)
			}
			if d.UL, err = countValueFrom("UL", 12, c.ULCOUNTValue.PDCPSN12, c.ULCOUNTValue.HFNPDCPSN12); err == nil {
				err = receiveStatusFrom(&d, c.ReceiveStatusOfULPDCPSDUs)
			}
		case *ie.DRBStatusUL18:
			if c.ULCOUNTValue == nil {
				return nil, fmt.Errorf("DRB %d: missing UL COUNT", d.DRBID)
			}
			if d.UL, err = countValueFrom("UL", 18, c.ULCOUNTValue.PDCPSN18, c.ULCOUNTValue.HFNPDCPSN18); err == nil {
				err = receiveStatusFrom(&d, c.ReceiveStatusOfULPDCPSDUs)
			}
		default:
			err = fmt.Errorf("DRB status UL: unsupported choice %T", it.DRBStatusUL.Choice)
		}
		if err != nil {
			return nil, fmt.Errorf("DRB %d: %w", d.DRBID, err)
		}
		switch c := it.DRBStatusDL.Choice.(type) {
		case *ie.DRBStatusDL12:
			if c.DLCOUNTValue == nil {
				return nil, fmt.Errorf("DRB %d: missing DL COUNT", d.DRBID)
			}
			d.DL, err = countValueFrom("DL", 12, c.DLCOUNTValue.PDCPSN12, c.DLCOUNTValue.HFNPDCPSN12)
		case *ie.DRBStatusDL18:
			if c.DLCOUNTValue == nil {
				return nil, fmt.Errorf("DRB %d: missing DL COUNT", d.DRBID)
			}
			d.DL, err = countValueFrom("DL", 18, c.DLCOUNTValue.PDCPSN18, c.DLCOUNTValue.HFNPDCPSN18)
		default:
			err = fmt.Errorf("DRB status DL: unsupported choice %T", it.DRBStatusDL.Choice)
		}
		if err != nil {
			return nil, fmt.Errorf("DRB %d: %w", d.DRBID, err)
		}
		out[i] = d
	}
	return out, nil
}

func (m *Paging) toFree5GC() (f5.Message, error) {
	id, err := stmsiIE(m.UEPagingIdentity)
	if err != nil {
		return nil, fmt.Errorf("UE paging identity: %w", err)
	}
	if len(m.TAIListForPaging) == 0 || len(m.TAIListForPaging) > maxTAIsForPaging {
		return nil, fmt.Errorf("TAI list for paging of %d TAIs (1..%d)", len(m.TAIListForPaging), maxTAIsForPaging)
	}
	tl := &ie.TAIListForPaging{List: make([]ie.TAIListForPagingItem, len(m.TAIListForPaging))}
	for i, t := range m.TAIListForPaging {
		if tl.List[i].TAI, err = taiIE(t); err != nil {
			return nil, fmt.Errorf("TAI list for paging: %w", err)
		}
	}
	x := &f5.Paging{UEPagingIdentity: &ie.UEPagingIdentity{Choice: id}, TAIListForPaging: tl}
	if m.PagingDRX != nil {
		if *m.PagingDRX > PagingDRX256 {
			return nil, fmt.Errorf("paging DRX %d", *m.PagingDRX)
		}
		x.PagingDRX = &ie.PagingDRX{Value: aper.Enumerated(*m.PagingDRX)}
	}
	if m.PagingPriority != 0 {
		if m.PagingPriority > 8 {
			return nil, fmt.Errorf("paging priority %d (1..8)", m.PagingPriority)
		}
		x.PagingPriority = &ie.PagingPriority{Value: aper.Enumerated(m.PagingPriority - 1)}
	}
	if m.PagingOriginNon3GPP {
		x.PagingOrigin = &ie.PagingOrigin{Value: ie.PagingOriginPresentNon3gpp}
	}
	return x, nil
}

func pagingFrom(x *f5.Paging) (Message, error) {
	switch {
	case x.UEPagingIdentity == nil:
		return nil, missing("UEPagingIdentity", ie.ProtocolIEIDUEPagingIdentity)
	case x.TAIListForPaging == nil:
		return nil, missing("TAIListForPaging", ie.ProtocolIEIDTAIListForPaging)
	}
	s, ok := x.UEPagingIdentity.Choice.(*ie.FiveGSTMSI)
	if !ok {
		return nil, fmt.Errorf("UE paging identity: unsupported choice %T", x.UEPagingIdentity.Choice)
	}
	id, err := stmsiFrom(s)
	if err != nil {
		return nil, fmt.Errorf("UE paging identity: %w", err)
	}
	m := &Paging{UEPagingIdentity: id, TAIListForPaging: make([]identity.TAI, len(x.TAIListForPaging.List))}
	for i, it := range x.TAIListForPaging.List {
		if m.TAIListForPaging[i], err = taiFrom(it.TAI); err != nil {
			return nil, fmt.Errorf("TAI list for paging: %w", err)
		}
	}
	if x.PagingDRX != nil {
		if x.PagingDRX.Value > aper.Enumerated(PagingDRX256) {
			return nil, fmt.Errorf("paging DRX %d", x.PagingDRX.Value)
		}
		d := PagingDRX(x.PagingDRX.Value)
		m.PagingDRX = &d
	}
	if x.PagingPriority != nil {
		if x.PagingPriority.Value > 7 {
			return nil, fmt.Errorf("paging priority %d", x.PagingPriority.Value)
		}
		m.PagingPriority = uint8(x.PagingPriority.Value) + 1
	}
	if x.PagingOrigin != nil {
		if x.PagingOrigin.Value != ie.PagingOriginPresentNon3gpp {
			return nil, fmt.Errorf("paging origin %d", x.PagingOrigin.Value)
		}
		m.PagingOriginNon3GPP = true
	}
	return m, nil
}

func (m *PathSwitchRequest) toFree5GC() (f5.Message, error) {
	if err := checkIDs(m.SourceAMFUENGAPID, m.RANUENGAPID); err != nil {
		return nil, err
	}
	loc, err := userLocationIE(m.UserLocation)
	if err != nil {
		return nil, err
	}
	l, err := itemsIE("PDU session resource to be switched in downlink list", m.ToBeSwitched, func(id *ie.PDUSessionID, tr *aper.OctetString) ie.PDUSessionResourceToBeSwitchedDLItem {
		return ie.PDUSessionResourceToBeSwitchedDLItem{PDUSessionID: id, PathSwitchRequestTransfer: tr}
	})
	if err != nil {
		return nil, err
	}
	x := &f5.PathSwitchRequest{
		RANUENGAPID: ranID(m.RANUENGAPID), SourceAMFUENGAPID: amfID(m.SourceAMFUENGAPID),
		UserLocationInformation:              loc,
		UESecurityCapabilities:               ueSecurityCapabilitiesIE(m.UESecurityCapabilities),
		PDUSessionResourceToBeSwitchedDLList: &ie.PDUSessionResourceToBeSwitchedDLList{List: l},
	}
	if m.FailedToSetup != nil {
		l, err := itemsIE("PDU session resource failed to setup list", m.FailedToSetup, func(id *ie.PDUSessionID, tr *aper.OctetString) ie.PDUSessionResourceFailedToSetupItemPSReq {
			return ie.PDUSessionResourceFailedToSetupItemPSReq{PDUSessionID: id, PathSwitchRequestSetupFailedTransfer: tr}
		})
		if err != nil {
			return nil, err
		}
		x.PDUSessionResourceFailedToSetupListPSReq = &ie.PDUSessionResourceFailedToSetupListPSReq{List: l}
	}
	return x, nil
}

func pathSwitchRequestFrom(x *f5.PathSwitchRequest) (Message, error) {
	switch {
	case x.RANUENGAPID == nil:
		return nil, missing("RAN-UE-NGAP-ID", ie.ProtocolIEIDRANUENGAPID)
	case x.SourceAMFUENGAPID == nil:
		return nil, missing("SourceAMF-UE-NGAP-ID", ie.ProtocolIEIDSourceAMFUENGAPID)
	case x.UserLocationInformation == nil:
		return nil, missing("UserLocationInformation", ie.ProtocolIEIDUserLocationInformation)
	case x.UESecurityCapabilities == nil:
		return nil, missing("UESecurityCapabilities", ie.ProtocolIEIDUESecurityCapabilities)
	case x.PDUSessionResourceToBeSwitchedDLList == nil:
		return nil, missing("PDUSessionResourceToBeSwitchedDLList", ie.ProtocolIEIDPDUSessionResourceToBeSwitchedDLList)
	}
	loc, err := userLocationFrom(x.UserLocationInformation)
	if err != nil {
		return nil, err
	}
	caps, err := ueSecurityCapabilitiesFrom(x.UESecurityCapabilities)
	if err != nil {
		return nil, err
	}
	m := &PathSwitchRequest{
		RANUENGAPID: x.RANUENGAPID.Value, SourceAMFUENGAPID: x.SourceAMFUENGAPID.Value,
		UserLocation: loc, UESecurityCapabilities: caps,
	}
	m.ToBeSwitched, err = itemsFrom("PDU session resource to be switched in downlink list", x.PDUSessionResourceToBeSwitchedDLList.List, func(it *ie.PDUSessionResourceToBeSwitchedDLItem) (*ie.PDUSessionID, *aper.OctetString) {
		return it.PDUSessionID, it.PathSwitchRequestTransfer
	})
	if err != nil {
		return nil, err
	}
	if l := x.PDUSessionResourceFailedToSetupListPSReq; l != nil {
		m.FailedToSetup, err = itemsFrom("PDU session resource failed to setup list", l.List, func(it *ie.PDUSessionResourceFailedToSetupItemPSReq) (*ie.PDUSessionID, *aper.OctetString) {
			return it.PDUSessionID, it.PathSwitchRequestSetupFailedTransfer
		})
		if err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *PathSwitchRequestAcknowledge) toFree5GC() (f5.Message, error) {
	if err := checkIDs(m.AMFUENGAPID, m.RANUENGAPID); err != nil {
		return nil, err
	}
	sc, err := securityContextIE(m.SecurityContext)
	if err != nil {
		return nil, err
	}
	l, err := itemsIE("PDU session resource switched list", m.Switched, func(id *ie.PDUSessionID, tr *aper.OctetString) ie.PDUSessionResourceSwitchedItem {
		return ie.PDUSessionResourceSwitchedItem{PDUSessionID: id, PathSwitchRequestAcknowledgeTransfer: tr}
	})
	if err != nil {
		return nil, err
	}
	an, err := allowedNSSAIIE(m.AllowedNSSAI)
	if err != nil {
		return nil, err
	}
	x := &f5.PathSwitchRequestAcknowledge{
		AMFUENGAPID: amfID(m.AMFUENGAPID), RANUENGAPID: ranID(m.RANUENGAPID),
		SecurityContext:                sc,
		PDUSessionResourceSwitchedList: &ie.PDUSessionResourceSwitchedList{List: l},
		AllowedNSSAI:                   an,
		CriticalityDiagnostics:         critDiagIE(m.CriticalityDiagnostics),
	}
	if m.UESecurityCapabilities != nil {
		x.UESecurityCapabilities = ueSecurityCapabilitiesIE(*m.UESecurityCapabilities)
	}
	if m.Released != nil {
		l, err := itemsIE("PDU session resource released list", m.Released, func(id *ie.PDUSessionID, tr *aper.OctetString) ie.PDUSessionResourceReleasedItemPSAck {
			return ie.PDUSessionResourceReleasedItemPSAck{PDUSessionID: id, PathSwitchRequestUnsuccessfulTransfer: tr}
		})
		if err != nil {
			return nil, err
		}
		x.PDUSessionResourceReleasedListPSAck = &ie.PDUSessionResourceReleasedListPSAck{List: l}
	}
	return x, nil
}

func pathSwitchRequestAcknowledgeFrom(x *f5.PathSwitchRequestAcknowledge) (Message, error) {
	if err := needIDs(x.AMFUENGAPID, x.RANUENGAPID); err != nil {
		return nil, err
	}
	switch {
	case x.SecurityContext == nil:
		return nil, missing("SecurityContext", ie.ProtocolIEIDSecurityContext)
	case x.PDUSessionResourceSwitchedList == nil:
		return nil, missing("PDUSessionResourceSwitchedList", ie.ProtocolIEIDPDUSessionResourceSwitchedList)
	case x.AllowedNSSAI == nil:
		return nil, missing("AllowedNSSAI", ie.ProtocolIEIDAllowedNSSAI)
	}
	sc, err := securityContextFrom(x.SecurityContext)
	if err != nil {
		return nil, err
	}
	an, err := allowedNSSAIFrom(x.AllowedNSSAI)
	if err != nil {
		return nil, err
	}
	m := &PathSwitchRequestAcknowledge{
		AMFUENGAPID: x.AMFUENGAPID.Value, RANUENGAPID: x.RANUENGAPID.Value,
		SecurityContext: sc, AllowedNSSAI: an,
		CriticalityDiagnostics: critDiagFrom(x.CriticalityDiagnostics),
	}
	if x.UESecurityCapabilities != nil {
		caps, err := ueSecurityCapabilitiesFrom(x.UESecurityCapabilities)
		if err != nil {
			return nil, err
		}
		m.UESecurityCapabilities = &caps
	}
	m.Switched, err = itemsFrom("PDU session resource switched list", x.PDUSessionResourceSwitchedList.List, func(it *ie.PDUSessionResourceSwitchedItem) (*ie.PDUSessionID, *aper.OctetString) {
		return it.PDUSessionID, it.PathSwitchRequestAcknowledgeTransfer
	})
	if err != nil {
		return nil, err
	}
	if l := x.PDUSessionResourceReleasedListPSAck; l != nil {
		m.Released, err = itemsFrom("PDU session resource released list", l.List, func(it *ie.PDUSessionResourceReleasedItemPSAck) (*ie.PDUSessionID, *aper.OctetString) {
			return it.PDUSessionID, it.PathSwitchRequestUnsuccessfulTransfer
		})
		if err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *PathSwitchRequestFailure) toFree5GC() (f5.Message, error) {
	if err := checkIDs(m.AMFUENGAPID, m.RANUENGAPID); err != nil {
		return nil, err
	}
	l, err := itemsIE("PDU session resource released list", m.Released, func(id *ie.PDUSessionID, tr *aper.OctetString) ie.PDUSessionResourceReleasedItemPSFail {
		return ie.PDUSessionResourceReleasedItemPSFail{PDUSessionID: id, PathSwitchRequestUnsuccessfulTransfer: tr}
	})
	if err != nil {
		return nil, err
	}
	return &f5.PathSwitchRequestFailure{
		AMFUENGAPID: amfID(m.AMFUENGAPID), RANUENGAPID: ranID(m.RANUENGAPID),
		PDUSessionResourceReleasedListPSFail: &ie.PDUSessionResourceReleasedListPSFail{List: l},
		CriticalityDiagnostics:               critDiagIE(m.CriticalityDiagnostics),
	}, nil
}

func pathSwitchRequestFailureFrom(x *f5.PathSwitchRequestFailure) (Message, error) {
	if err := needIDs(x.AMFUENGAPID, x.RANUENGAPID); err != nil {
		return nil, err
	}
	if x.PDUSessionResourceReleasedListPSFail == nil {
		return nil, missing("PDUSessionResourceReleasedListPSFail", ie.ProtocolIEIDPDUSessionResourceReleasedListPSFail)
	}
	items, err := itemsFrom("PDU session resource released list", x.PDUSessionResourceReleasedListPSFail.List, func(it *ie.PDUSessionResourceReleasedItemPSFail) (*ie.PDUSessionID, *aper.OctetString) {
		return it.PDUSessionID, it.PathSwitchRequestUnsuccessfulTransfer
	})
	if err != nil {
		return nil, err
	}
	return &PathSwitchRequestFailure{
		AMFUENGAPID: x.AMFUENGAPID.Value, RANUENGAPID: x.RANUENGAPID.Value, Released: items,
		CriticalityDiagnostics: critDiagFrom(x.CriticalityDiagnostics),
	}, nil
}

func (m *HandoverRequired) toFree5GC() (f5.Message, error) {
	if err := checkIDs(m.AMFUENGAPID, m.RANUENGAPID); err != nil {
		return nil, err
	}
	if err := intra5GSOnly(m.HandoverType); err != nil {
		return nil, err
	}
	c, err := causeIE(m.Cause)
	if err != nil {
		return nil, err
	}
	tid, err := targetIDIE(m.TargetID)
	if err != nil {
		return nil, err
	}
	l, err := itemsIE("PDU session resource list", m.Sessions, func(id *ie.PDUSessionID, tr *aper.OctetString) ie.PDUSessionResourceItemHORqd {
		return ie.PDUSessionResourceItemHORqd{PDUSessionID: id, HandoverRequiredTransfer: tr}
	})
	if err != nil {
		return nil, err
	}
	st, err := containerIE("source to target transparent container", m.SourceToTargetTransparentContainer)
	if err != nil {
		return nil, err
	}
	x := &f5.HandoverRequired{
		AMFUENGAPID: amfID(m.AMFUENGAPID), RANUENGAPID: ranID(m.RANUENGAPID),
		HandoverType:                       &ie.HandoverType{Value: aper.Enumerated(m.HandoverType)},
		Cause:                              c,
		TargetID:                           tid,
		PDUSessionResourceListHORqd:        &ie.PDUSessionResourceListHORqd{List: l},
		SourceToTargetTransparentContainer: &ie.SourceToTargetTransparentContainer{Value: st},
	}
	if m.DirectForwardingPathAvailable {
		x.DirectForwardingPathAvailability = &ie.DirectForwardingPathAvailability{Value: ie.DirectForwardingPathAvailabilityPresentDirectPathAvailable}
	}
	return x, nil
}

func handoverRequiredFrom(x *f5.HandoverRequired) (Message, error) {
	if err := needIDs(x.AMFUENGAPID, x.RANUENGAPID); err != nil {
		return nil, err
	}
	switch {
	case x.HandoverType == nil:
		return nil, missing("HandoverType", ie.ProtocolIEIDHandoverType)
	case x.Cause == nil:
		return nil, missing("Cause", ie.ProtocolIEIDCause)
	case x.TargetID == nil:
		return nil, missing("TargetID", ie.ProtocolIEIDTargetID)
	case x.PDUSessionResourceListHORqd == nil:
		return nil, missing("PDUSessionResourceListHORqd", ie.ProtocolIEIDPDUSessionResourceListHORqd)
	case x.SourceToTargetTransparentContainer == nil:
		return nil, missing("SourceToTarget-TransparentContainer", ie.ProtocolIEIDSourceToTargetTransparentContainer)
	}
	ht, err := handoverTypeFrom(x.HandoverType)
	if err != nil {
		return nil, err
	}
	if err := intra5GSOnly(ht); err != nil {
		return nil, err
	}
	c, err := causeFrom(x.Cause)
	if err != nil {
		return nil, err
	}
	tid, err := targetIDFrom(x.TargetID)
	if err != nil {
		return nil, err
	}
	items, err := itemsFrom("PDU session resource list", x.PDUSessionResourceListHORqd.List, func(it *ie.PDUSessionResourceItemHORqd) (*ie.PDUSessionID, *aper.OctetString) {
		return it.PDUSessionID, it.HandoverRequiredTransfer
	})
	if err != nil {
		return nil, err
	}
	if len(x.SourceToTargetTransparentContainer.Value) == 0 {
		return nil, errors.New("empty source to target transparent container")
	}
	m := &HandoverRequired{
		AMFUENGAPID: x.AMFUENGAPID.Value, RANUENGAPID: x.RANUENGAPID.Value,
		HandoverType: ht, Cause: c, TargetID: tid, Sessions: items,
		SourceToTargetTransparentContainer: x.SourceToTargetTransparentContainer.Value,
	}
	if x.DirectForwardingPathAvailability != nil {
		if x.DirectForwardingPathAvailability.Value != ie.DirectForwardingPathAvailabilityPresentDirectPathAvailable {
			return nil, fmt.Errorf("direct forwarding path availability %d", x.DirectForwardingPathAvailability.Value)
		}
		m.DirectForwardingPathAvailable = true
	}
	return m, nil
}

func (m *HandoverCommand) toFree5GC() (f5.Message, error) {
	if err := checkIDs(m.AMFUENGAPID, m.RANUENGAPID); err != nil {
		return nil, err
	}
	if err := intra5GSOnly(m.HandoverType); err != nil {
		return nil, err
	}
	ts, err := containerIE("target to source transparent container", m.TargetToSourceTransparentContainer)
	if err != nil {
		return nil, err
	}
	x := &f5.HandoverCommand{
		AMFUENGAPID: amfID(m.AMFUENGAPID), RANUENGAPID: ranID(m.RANUENGAPID),
		HandoverType:                       &ie.HandoverType{Value: aper.Enumerated(m.HandoverType)},
		TargetToSourceTransparentContainer: &ie.TargetToSourceTransparentContainer{Value: ts},
		CriticalityDiagnostics:             critDiagIE(m.CriticalityDiagnostics),
	}
	if m.Handover != nil {
		l, err := itemsIE("PDU session resource handover list", m.Handover, func(id *ie.PDUSessionID, tr *aper.OctetString) ie.PDUSessionResourceHandoverItem {
			return ie.PDUSessionResourceHandoverItem{PDUSessionID: id, HandoverCommandTransfer: tr}
		})
		if err != nil {
			return nil, err
		}
		x.PDUSessionResourceHandoverList = &ie.PDUSessionResourceHandoverList{List: l}
	}
	if m.ToRelease != nil {
		l, err := itemsIE("PDU session resource to release list", m.ToRelease, func(id *ie.PDUSessionID, tr *aper.OctetString) ie.PDUSessionResourceToReleaseItemHOCmd {
			return ie.PDUSessionResourceToReleaseItemHOCmd{PDUSessionID: id, HandoverPreparationUnsuccessfulTransfer: tr}
		})
		if err != nil {
			return nil, err
		}
		x.PDUSessionResourceToReleaseListHOCmd = &ie.PDUSessionResourceToReleaseListHOCmd{List: l}
	}
	return x, nil
}

func handoverCommandFrom(x *f5.HandoverCommand) (Message, error) {
	if err := needIDs(x.AMFUENGAPID, x.RANUENGAPID); err != nil {
		return nil, err
	}
	switch {
	case x.HandoverType == nil:
		return nil, missing("HandoverType", ie.ProtocolIEIDHandoverType)
	case x.TargetToSourceTransparentContainer == nil:
		return nil, missing("TargetToSource-TransparentContainer", ie.ProtocolIEIDTargetToSourceTransparentContainer)
	}
	ht, err := handoverTypeFrom(x.HandoverType)
	if err != nil {
		return nil, err
	}
	if err := intra5GSOnly(ht); err != nil {
		return nil, err
	}
	if len(x.TargetToSourceTransparentContainer.Value) == 0 {
		return nil, errors.New("empty target to source transparent container")
	}
	m := &HandoverCommand{
		AMFUENGAPID: x.AMFUENGAPID.Value, RANUENGAPID: x.RANUENGAPID.Value, HandoverType: ht,
		TargetToSourceTransparentContainer: x.TargetToSourceTransparentContainer.Value,
		CriticalityDiagnostics:             critDiagFrom(x.CriticalityDiagnostics),
	}
	if l := x.PDUSessionResourceHandoverList; l != nil {
		m.Handover, err = itemsFrom("PDU session resource handover list", l.List, func(it *ie.PDUSessionResourceHandoverItem) (*ie.PDUSessionID, *aper.OctetString) {
			return it.PDUSessionID, it.HandoverCommandTransfer
		})
		if err != nil {
			return nil, err
		}
	}
	if l := x.PDUSessionResourceToReleaseListHOCmd; l != nil {
		m.ToRelease, err = itemsFrom("PDU session resource to release list", l.List, func(it *ie.PDUSessionResourceToReleaseItemHOCmd) (*ie.PDUSessionID, *aper.OctetString) {
			return it.PDUSessionID, it.HandoverPreparationUnsuccessfulTransfer
		})
		if err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *HandoverRequest) toFree5GC() (f5.Message, error) {
	if err := checkIDs(m.AMFUENGAPID, 0); err != nil {
		return nil, err
	}
	if m.HandoverType != HandoverIntra5GS && m.HandoverType != HandoverEPSTo5GS {
		return nil, fmt.Errorf("handover type %d towards an NG-RAN node", m.HandoverType)
	}
	c, err := causeIE(m.Cause)
	if err != nil {
		return nil, err
	}
	ambr, err := ueAMBRIE(m.UEAggregateMaxBitRate)
	if err != nil {
		return nil, err
	}
	sc, err := securityContextIE(m.SecurityContext)
	if err != nil {
		return nil, err
	}
	if err := checkListLen("PDU session resource setup list", len(m.Sessions)); err != nil {
		return nil, err
	}
	l := &ie.PDUSessionResourceSetupListHOReq{List: make([]ie.PDUSessionResourceSetupItemHOReq, len(m.Sessions))}
	for i, it := range m.Sessions {
		tr, err := transferIE(it.ID, it.Transfer)
		if err != nil {
			return nil, fmt.Errorf("PDU session resource setup list: %w", err)
		}
		l.List[i] = ie.PDUSessionResourceSetupItemHOReq{PDUSessionID: &ie.PDUSessionID{Value: int64(it.ID)}, SNSSAI: snssaiIE(it.SNSSAI), HandoverRequestTransfer: tr}
	}
	an, err := allowedNSSAIIE(m.AllowedNSSAI)
	if err != nil {
		return nil, err
	}
	st, err := containerIE("source to target transparent container", m.SourceToTargetTransparentContainer)
	if err != nil {
		return nil, err
	}
	g, err := guamiIE(m.GUAMI)
	if err != nil {
		return nil, err
	}
	return &f5.HandoverRequest{
		AMFUENGAPID:                        amfID(m.AMFUENGAPID),
		HandoverType:                       &ie.HandoverType{Value: aper.Enumerated(m.HandoverType)},
		Cause:                              c,
		UEAggregateMaximumBitRate:          ambr,
		UESecurityCapabilities:             ueSecurityCapabilitiesIE(m.UESecurityCapabilities),
		SecurityContext:                    sc,
		PDUSessionResourceSetupListHOReq:   l,
		AllowedNSSAI:                       an,
		SourceToTargetTransparentContainer: &ie.SourceToTargetTransparentContainer{Value: st},
		GUAMI:                              g,
	}, nil
}

func handoverRequestFrom(x *f5.HandoverRequest) (Message, error) {
	switch {
	case x.AMFUENGAPID == nil:
		return nil, missing("AMF-UE-NGAP-ID", ie.ProtocolIEIDAMFUENGAPID)
	case x.HandoverType == nil:
		return nil, missing("HandoverType", ie.ProtocolIEIDHandoverType)
	case x.Cause == nil:
		return nil, missing("Cause", ie.ProtocolIEIDCause)
	case x.UEAggregateMaximumBitRate == nil:
		return nil, missing("UEAggregateMaximumBitRate", ie.ProtocolIEIDUEAggregateMaximumBitRate)
	case x.UESecurityCapabilities == nil:
		return nil, missing("UESecurityCapabilities", ie.ProtocolIEIDUESecurityCapabilities)
	case x.SecurityContext == nil:
		return nil, missing("SecurityContext", ie.ProtocolIEIDSecurityContext)
	case x.PDUSessionResourceSetupListHOReq == nil:
		return nil, missing("PDUSessionResourceSetupListHOReq", ie.ProtocolIEIDPDUSessionResourceSetupListHOReq)
	case x.AllowedNSSAI == nil:
		return nil, missing("AllowedNSSAI", ie.ProtocolIEIDAllowedNSSAI)
	case x.SourceToTargetTransparentContainer == nil:
		return nil, missing("SourceToTarget-TransparentContainer", ie.ProtocolIEIDSourceToTargetTransparentContainer)
	case x.GUAMI == nil:
		return nil, missing("GUAMI", ie.ProtocolIEIDGUAMI)
	}
	ht, err := handoverTypeFrom(x.HandoverType)
	if err != nil {
		return nil, err
	}
	if ht != HandoverIntra5GS && ht != HandoverEPSTo5GS {
		return nil, fmt.Errorf("handover type %d towards an NG-RAN node", ht)
	}
	c, err := causeFrom(x.Cause)
	if err != nil {
		return nil, err
	}
	ambr, err := ueAMBRFrom(x.UEAggregateMaximumBitRate)
	if err != nil {
		return nil, err
	}
	caps, err := ueSecurityCapabilitiesFrom(x.UESecurityCapabilities)
	if err != nil {
		return nil, err
	}
	sc, err := securityContextFrom(x.SecurityContext)
	if err != nil {
		return nil, err
	}
	an, err := allowedNSSAIFrom(x.AllowedNSSAI)
	if err != nil {
		return nil, err
	}
	if len(x.SourceToTargetTransparentContainer.Value) == 0 {
		return nil, errors.New("empty source to target transparent container")
	}
	g, err := guamiFrom(x.GUAMI)
	if err != nil {
		return nil, err
	}
	m := &HandoverRequest{
		AMFUENGAPID: x.AMFUENGAPID.Value, HandoverType: ht, Cause: c,
		UEAggregateMaxBitRate: *ambr, UESecurityCapabilities: caps, SecurityContext: sc,
		Sessions:     make([]PDUSessionResourceSetupItemHOReq, len(x.PDUSessionResourceSetupListHOReq.List)),
		AllowedNSSAI: an, SourceToTargetTransparentContainer: x.SourceToTargetTransparentContainer.Value, GUAMI: g,
	}
	for i, it := range x.PDUSessionResourceSetupListHOReq.List {
		id, err := sessionIDFrom(it.PDUSessionID)
		if err != nil {
			return nil, fmt.Errorf("PDU session resource setup list: %w", err)
		}
		s, err := snssaiFrom(it.SNSSAI)
		if err != nil {
			return nil, fmt.Errorf("PDU session resource setup list: PDU session %d: %w", id, err)
		}
		tr, err := transferFrom(id, it.HandoverRequestTransfer)
		if err != nil {
			return nil, fmt.Errorf("PDU session resource setup list: %w", err)
		}
		m.Sessions[i] = PDUSessionResourceSetupItemHOReq{ID: id, SNSSAI: s, Transfer: tr}
	}
	return m, nil
}

func (m *HandoverRequestAcknowledge) toFree5GC() (f5.Message, error) {
	if err := checkIDs(m.AMFUENGAPID, m.RANUENGAPID); err != nil {
		return nil, err
	}
	l, err := itemsIE("PDU session resource admitted list", m.Admitted, func(id *ie.PDUSessionID, tr *aper.OctetString) ie.PDUSessionResourceAdmittedItem {
		return ie.PDUSessionResourceAdmittedItem{PDUSessionID: id, HandoverRequestAcknowledgeTransfer: tr}
	})
	if err != nil {
		return nil, err
	}
	ts, err := containerIE("target to source transparent container", m.TargetToSourceTransparentContainer)
	if err != nil {
		return nil, err
	}
	x := &f5.HandoverRequestAcknowledge{
		AMFUENGAPID: amfID(m.AMFUENGAPID), RANUENGAPID: ranID(m.RANUENGAPID),
		PDUSessionResourceAdmittedList:     &ie.PDUSessionResourceAdmittedList{List: l},
		TargetToSourceTransparentContainer: &ie.TargetToSourceTransparentContainer{Value: ts},
		CriticalityDiagnostics:             critDiagIE(m.CriticalityDiagnostics),
	}
	if m.FailedToSetup != nil {
		l, err := itemsIE("PDU session resource failed to setup list", m.FailedToSetup, func(id *ie.PDUSessionID, tr *aper.OctetString) ie.PDUSessionResourceFailedToSetupItemHOAck {
			return ie.PDUSessionResourceFailedToSetupItemHOAck{PDUSessionID: id, HandoverResourceAllocationUnsuccessfulTransfer: tr}
		})
		if err != nil {
			return nil, err
		}
		x.PDUSessionResourceFailedToSetupListHOAck = &ie.PDUSessionResourceFailedToSetupListHOAck{List: l}
	}
	return x, nil
}

func handoverRequestAcknowledgeFrom(x *f5.HandoverRequestAcknowledge) (Message, error) {
	if err := needIDs(x.AMFUENGAPID, x.RANUENGAPID); err != nil {
		return nil, err
	}
	switch {
	case x.PDUSessionResourceAdmittedList == nil:
		return nil, missing("PDUSessionResourceAdmittedList", ie.ProtocolIEIDPDUSessionResourceAdmittedList)
	case x.TargetToSourceTransparentContainer == nil:
		return nil, missing("TargetToSource-TransparentContainer", ie.ProtocolIEIDTargetToSourceTransparentContainer)
	}
	if len(x.TargetToSourceTransparentContainer.Value) == 0 {
		return nil, errors.New("empty target to source transparent container")
	}
	m := &HandoverRequestAcknowledge{
		AMFUENGAPID: x.AMFUENGAPID.Value, RANUENGAPID: x.RANUENGAPID.Value,
		TargetToSourceTransparentContainer: x.TargetToSourceTransparentContainer.Value,
		CriticalityDiagnostics:             critDiagFrom(x.CriticalityDiagnostics),
	}
	var err error
	m.Admitted, err = itemsFrom("PDU session resource admitted list", x.PDUSessionResourceAdmittedList.List, func(it *ie.PDUSessionResourceAdmittedItem) (*ie.PDUSessionID, *aper.OctetString) {
		return it.PDUSessionID, it.HandoverRequestAcknowledgeTransfer
	})
	if err != nil {
		return nil, err
	}
	if l := x.PDUSessionResourceFailedToSetupListHOAck; l != nil {
		m.FailedToSetup, err = itemsFrom("PDU session resource failed to setup list", l.List, func(it *ie.PDUSessionResourceFailedToSetupItemHOAck) (*ie.PDUSessionID, *aper.OctetString) {
			return it.PDUSessionID, it.HandoverResourceAllocationUnsuccessfulTransfer
		})
		if err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *HandoverPreparationFailure) toFree5GC() (f5.Message, error) {
	if err := checkIDs(m.AMFUENGAPID, m.RANUENGAPID); err != nil {
		return nil, err
	}
	c, err := causeIE(m.Cause)
	if err != nil {
		return nil, err
	}
	return &f5.HandoverPreparationFailure{
		AMFUENGAPID: amfID(m.AMFUENGAPID), RANUENGAPID: ranID(m.RANUENGAPID), Cause: c,
		CriticalityDiagnostics: critDiagIE(m.CriticalityDiagnostics),
	}, nil
}

func handoverPreparationFailureFrom(x *f5.HandoverPreparationFailure) (Message, error) {
	if err := needIDs(x.AMFUENGAPID, x.RANUENGAPID); err != nil {
		return nil, err
	}
	c, err := causeFrom(x.Cause)
	if err != nil {
		return nil, mandatory(x.Cause == nil, "Cause", ie.ProtocolIEIDCause, err)
	}
	return &HandoverPreparationFailure{
		AMFUENGAPID: x.AMFUENGAPID.Value, RANUENGAPID: x.RANUENGAPID.Value, Cause: c,
		CriticalityDiagnostics: critDiagFrom(x.CriticalityDiagnostics),
	}, nil
}

func (m *HandoverFailure) toFree5GC() (f5.Message, error) {
	if err := checkIDs(m.AMFUENGAPID, 0); err != nil {
		return nil, err
	}
	c, err := causeIE(m.Cause)
	if err != nil {
		return nil, err
	}
	return &f5.HandoverFailure{AMFUENGAPID: amfID(m.AMFUENGAPID), Cause: c, CriticalityDiagnostics: critDiagIE(m.CriticalityDiagnostics)}, nil
}

func handoverFailureFrom(x *f5.HandoverFailure) (Message, error) {
	if x.AMFUENGAPID == nil {
		return nil, missing("AMF-UE-NGAP-ID", ie.ProtocolIEIDAMFUENGAPID)
	}
	c, err := causeFrom(x.Cause)
	if err != nil {
		return nil, mandatory(x.Cause == nil, "Cause", ie.ProtocolIEIDCause, err)
	}
	return &HandoverFailure{AMFUENGAPID: x.AMFUENGAPID.Value, Cause: c, CriticalityDiagnostics: critDiagFrom(x.CriticalityDiagnostics)}, nil
}

func (m *HandoverNotify) toFree5GC() (f5.Message, error) {
	if err := checkIDs(m.AMFUENGAPID, m.RANUENGAPID); err != nil {
		return nil, err
	}
	loc, err := userLocationIE(m.UserLocation)
	if err != nil {
		return nil, err
	}
	return &f5.HandoverNotify{AMFUENGAPID: amfID(m.AMFUENGAPID), RANUENGAPID: ranID(m.RANUENGAPID), UserLocationInformation: loc}, nil
}

func handoverNotifyFrom(x *f5.HandoverNotify) (Message, error) {
	if err := needIDs(x.AMFUENGAPID, x.RANUENGAPID); err != nil {
		return nil, err
	}
	if x.UserLocationInformation == nil {
		return nil, missing("UserLocationInformation", ie.ProtocolIEIDUserLocationInformation)
	}
	loc, err := userLocationFrom(x.UserLocationInformation)
	if err != nil {
		return nil, err
	}
	return &HandoverNotify{AMFUENGAPID: x.AMFUENGAPID.Value, RANUENGAPID: x.RANUENGAPID.Value, UserLocation: loc}, nil
}

func (m *HandoverCancel) toFree5GC() (f5.Message, error) {
	if err := checkIDs(m.AMFUENGAPID, m.RANUENGAPID); err != nil {
		return nil, err
	}
	c, err := causeIE(m.Cause)
	if err != nil {
		return nil, err
	}
	return &f5.HandoverCancel{AMFUENGAPID: amfID(m.AMFUENGAPID), RANUENGAPID: ranID(m.RANUENGAPID), Cause: c}, nil
}

func handoverCancelFrom(x *f5.HandoverCancel) (Message, error) {
	if err := needIDs(x.AMFUENGAPID, x.RANUENGAPID); err != nil {
		return nil, err
	}
	c, err := causeFrom(x.Cause)
	if err != nil {
		return nil, mandatory(x.Cause == nil, "Cause", ie.ProtocolIEIDCause, err)
	}
	return &HandoverCancel{AMFUENGAPID: x.AMFUENGAPID.Value, RANUENGAPID: x.RANUENGAPID.Value, Cause: c}, nil
}

func (m *HandoverCancelAcknowledge) toFree5GC() (f5.Message, error) {
	if err := checkIDs(m.AMFUENGAPID, m.RANUENGAPID); err != nil {
		return nil, err
	}
	return &f5.HandoverCancelAcknowledge{
		AMFUENGAPID: amfID(m.AMFUENGAPID), RANUENGAPID: ranID(m.RANUENGAPID),
		CriticalityDiagnostics: critDiagIE(m.CriticalityDiagnostics),
	}, nil
}

func handoverCancelAcknowledgeFrom(x *f5.HandoverCancelAcknowledge) (Message, error) {
	if err := needIDs(x.AMFUENGAPID, x.RANUENGAPID); err != nil {
		return nil, err
	}
	return &HandoverCancelAcknowledge{
		AMFUENGAPID: x.AMFUENGAPID.Value, RANUENGAPID: x.RANUENGAPID.Value,
		CriticalityDiagnostics: critDiagFrom(x.CriticalityDiagnostics),
	}, nil
}

func (m *UplinkRANStatusTransfer) toFree5GC() (f5.Message, error) {
	if err := checkIDs(m.AMFUENGAPID, m.RANUENGAPID); err != nil {
		return nil, err
	}
	c, err := ranStatusIE(m.DRBs)
	if err != nil {
		return nil, err
	}
	return &f5.UplinkRANStatusTransfer{AMFUENGAPID: amfID(m.AMFUENGAPID), RANUENGAPID: ranID(m.RANUENGAPID), RANStatusTransferTransparentContainer: c}, nil
}

func (m *DownlinkRANStatusTransfer) toFree5GC() (f5.Message, error) {
	if err := checkIDs(m.AMFUENGAPID, m.RANUENGAPID); err != nil {
		return nil, err
	}
	c, err := ranStatusIE(m.DRBs)
	if err != nil {
		return nil, err
	}
	return &f5.DownlinkRANStatusTransfer{AMFUENGAPID: amfID(m.AMFUENGAPID), RANUENGAPID: ranID(m.RANUENGAPID), RANStatusTransferTransparentContainer: c}, nil
}

func ranStatusTransferFrom(a *ie.AMFUENGAPID, r *ie.RANUENGAPID, c *ie.RANStatusTransferTransparentContainer, mk func(a, r int64, d []DRBStatus) Message) (Message, error) {
	if err := needIDs(a, r); err != nil {
		return nil, err
	}
	if c == nil {
		return nil, missing("RANStatusTransfer-TransparentContainer", ie.ProtocolIEIDRANStatusTransferTransparentContainer)
	}
	d, err := ranStatusFrom(c)
	if err != nil {
		return nil, err
	}
	return mk(a.Value, r.Value, d), nil
}
