package ngap

import (
	"errors"
	"fmt"

	"github.com/free5gc/ngap/aper"
	"github.com/free5gc/ngap/ie"
	f5 "github.com/free5gc/ngap/message"
)

func encode(m Message) ([]byte, error) {
	if m == nil {
		return nil, errors.New("ngap encode: nil message")
	}
	x, err := toFree5GC(m)
	if err != nil {
		return nil, fmt.Errorf("ngap encode %T: %w", m, err)
	}
	b, err := x.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("ngap encode %T: %w", m, err)
	}
	return b, nil
}

func toFree5GC(m Message) (f5.Message, error) {
	switch m := m.(type) {
	case *NGSetupRequest:
		return m.toFree5GC()
	case *NGSetupResponse:
		return m.toFree5GC()
	case *NGSetupFailure:
		c, err := causeIE(m.Cause)
		if err != nil {
			return nil, err
		}
		x := &f5.NGSetupFailure{Cause: c, CriticalityDiagnostics: critDiagIE(m.CriticalityDiagnostics)}
		if m.TimeToWait != nil {
			x.TimeToWait = &ie.TimeToWait{Value: aper.Enumerated(*m.TimeToWait)}
		}
		return x, nil
	case *InitialUEMessage:
		return m.toFree5GC()
	case *DownlinkNASTransport:
		if err := checkIDs(m.AMFUENGAPID, m.RANUENGAPID); err != nil {
			return nil, err
		}
		pdu, err := nasPDU(m.NASPDU)
		if err != nil {
			return nil, err
		}
		x := &f5.DownlinkNASTransport{AMFUENGAPID: amfID(m.AMFUENGAPID), RANUENGAPID: ranID(m.RANUENGAPID), NASPDU: pdu}
		if m.AllowedNSSAI != nil {
			if x.AllowedNSSAI, err = allowedNSSAIIE(m.AllowedNSSAI); err != nil {
				return nil, err
			}
		}
		return x, nil
	case *UplinkNASTransport:
		if err := checkIDs(m.AMFUENGAPID, m.RANUENGAPID); err != nil {
			return nil, err
		}
		pdu, err := nasPDU(m.NASPDU)
		if err != nil {
			return nil, err
		}
		loc, err := userLocationIE(m.UserLocation)
		if err != nil {
			return nil, err
		}
		return &f5.UplinkNASTransport{
			AMFUENGAPID: amfID(m.AMFUENGAPID), RANUENGAPID: ranID(m.RANUENGAPID), NASPDU: pdu, UserLocationInformation: loc,
		}, nil
	case *NASNonDeliveryIndication:
		if err := checkIDs(m.AMFUENGAPID, m.RANUENGAPID); err != nil {
			return nil, err
		}
		pdu, err := nasPDU(m.NASPDU)
		if err != nil {
			return nil, err
		}
		c, err := causeIE(m.Cause)
		if err != nil {
			return nil, err
		}
		return &f5.NASNonDeliveryIndication{AMFUENGAPID: amfID(m.AMFUENGAPID), RANUENGAPID: ranID(m.RANUENGAPID), NASPDU: pdu, Cause: c}, nil
	case *InitialContextSetupRequest:
		return m.toFree5GC()
	case *InitialContextSetupResponse:
		return m.toFree5GC()
	case *InitialContextSetupFailure:
		if err := checkIDs(m.AMFUENGAPID, m.RANUENGAPID); err != nil {
			return nil, err
		}
		c, err := causeIE(m.Cause)
		if err != nil {
			return nil, err
		}
		return &f5.InitialContextSetupFailure{
			AMFUENGAPID: amfID(m.AMFUENGAPID), RANUENGAPID: ranID(m.RANUENGAPID), Cause: c,
			CriticalityDiagnostics: critDiagIE(m.CriticalityDiagnostics),
		}, nil
	case *UEContextReleaseRequest:
		if err := checkIDs(m.AMFUENGAPID, m.RANUENGAPID); err != nil {
			return nil, err
		}
		c, err := causeIE(m.Cause)
		if err != nil {
			return nil, err
		}
		return &f5.UEContextReleaseRequest{AMFUENGAPID: amfID(m.AMFUENGAPID), RANUENGAPID: ranID(m.RANUENGAPID), Cause: c}, nil
	case *UEContextReleaseCommand:
		if err := checkIDs(m.AMFUENGAPID, m.RANUENGAPID); err != nil {
			return nil, err
		}
		c, err := causeIE(m.Cause)
		if err != nil {
			return nil, err
		}
		ids := &ie.UENGAPIDs{}
		if m.AMFIDOnly {
			ids.Choice = amfID(m.AMFUENGAPID)
		} else {
			ids.Choice = &ie.UENGAPIDPair{AMFUENGAPID: amfID(m.AMFUENGAPID), RANUENGAPID: ranID(m.RANUENGAPID)}
		}
		return &f5.UEContextReleaseCommand{UENGAPIDs: ids, Cause: c}, nil
	case *UEContextReleaseComplete:
		if err := checkIDs(m.AMFUENGAPID, m.RANUENGAPID); err != nil {
			return nil, err
		}
		x := &f5.UEContextReleaseComplete{
			AMFUENGAPID: amfID(m.AMFUENGAPID), RANUENGAPID: ranID(m.RANUENGAPID),
			CriticalityDiagnostics: critDiagIE(m.CriticalityDiagnostics),
		}
		if m.UserLocation != nil {
			loc, err := userLocationIE(*m.UserLocation)
			if err != nil {
				return nil, err
			}
			x.UserLocationInformation = loc
		}
		if m.PDUSessionIDs != nil {
			l, err := releasedSessionsIE(m.PDUSessionIDs)
			if err != nil {
				return nil, err
			}
			x.PDUSessionResourceListCxtRelCpl = l
		}
		return x, nil
	case *PDUSessionResourceSetupRequest:
		return m.toFree5GC()
	case *PDUSessionResourceSetupResponse:
		return m.toFree5GC()
	case *PDUSessionResourceModifyRequest:
		return m.toFree5GC()
	case *PDUSessionResourceModifyResponse:
		return m.toFree5GC()
	case *PDUSessionResourceReleaseCommand:
		return m.toFree5GC()
	case *PDUSessionResourceReleaseResponse:
		return m.toFree5GC()
	case *Paging:
		return m.toFree5GC()
	case *PathSwitchRequest:
		return m.toFree5GC()
	case *PathSwitchRequestAcknowledge:
		return m.toFree5GC()
	case *PathSwitchRequestFailure:
		return m.toFree5GC()
	case *HandoverRequired:
		return m.toFree5GC()
	case *HandoverCommand:
		return m.toFree5GC()
	case *HandoverPreparationFailure:
		return m.toFree5GC()
	case *HandoverRequest:
		return m.toFree5GC()
	case *HandoverRequestAcknowledge:
		return m.toFree5GC()
	case *HandoverFailure:
		return m.toFree5GC()
	case *HandoverNotify:
		return m.toFree5GC()
	case *HandoverCancel:
		return m.toFree5GC()
	case *HandoverCancelAcknowledge:
		return m.toFree5GC()
	case *UplinkRANStatusTransfer:
		return m.toFree5GC()
	case *DownlinkRANStatusTransfer:
		return m.toFree5GC()
	case *NGReset:
		return m.toFree5GC()
	case *NGResetAcknowledge:
		return m.toFree5GC()
	case *RANConfigurationUpdate:
		return m.toFree5GC()
	case *RANConfigurationUpdateAcknowledge:
		return &f5.RANConfigurationUpdateAcknowledge{CriticalityDiagnostics: critDiagIE(m.CriticalityDiagnostics)}, nil
	case *RANConfigurationUpdateFailure:
		return m.toFree5GC()
	case *ErrorIndication:
		x := &f5.ErrorIndication{CriticalityDiagnostics: critDiagIE(m.CriticalityDiagnostics)}
		if m.AMFUENGAPID != nil {
			if err := checkIDs(*m.AMFUENGAPID, 0); err != nil {
				return nil, err
			}
			x.AMFUENGAPID = amfID(*m.AMFUENGAPID)
		}
		if m.RANUENGAPID != nil {
			if err := checkIDs(0, *m.RANUENGAPID); err != nil {
				return nil, err
			}
			x.RANUENGAPID = ranID(*m.RANUENGAPID)
		}
		if m.Cause != nil {
			c, err := causeIE(*m.Cause)
			if err != nil {
				return nil, err
			}
			x.Cause = c
		}
		return x, nil
	}
	return nil, fmt.Errorf("unsupported message %T", m)
}

func (m *NGSetupRequest) toFree5GC() (f5.Message, error) {
	g, err := globalGNBIDIE(m.GlobalRANNodeID)
	if err != nil {
		return nil, err
	}
	tas, err := supportedTAListIE(m.SupportedTAs)
	if err != nil {
		return nil, err
	}
	x := &f5.NGSetupRequest{
		GlobalRANNodeID:  g,
		SupportedTAList:  tas,
		DefaultPagingDRX: &ie.PagingDRX{Value: aper.Enumerated(m.DefaultPagingDRX)},
	}
	if m.RANNodeName != "" {
		x.RANNodeName = &ie.RANNodeName{Value: aper.PrintableString(m.RANNodeName)}
	}
	return x, nil
}

func (m *NGSetupResponse) toFree5GC() (f5.Message, error) {
	if m.AMFName == "" || len(m.ServedGUAMIs) == 0 || len(m.PLMNSupport) == 0 {
		return nil, errors.New("AMF name, served GUAMIs and PLMN support are mandatory")
	}
	gl := &ie.ServedGUAMIList{List: make([]ie.ServedGUAMIItem, len(m.ServedGUAMIs))}
	for i, g := range m.ServedGUAMIs {
		x, err := guamiIE(g)
		if err != nil {
			return nil, err
		}
		gl.List[i].GUAMI = x
	}
	pl := &ie.PLMNSupportList{List: make([]ie.PLMNSupportItem, len(m.PLMNSupport))}
	for i, ps := range m.PLMNSupport {
		p, err := plmnIE(ps.PLMN)
		if err != nil {
			return nil, fmt.Errorf("PLMN support: %w", err)
		}
		sl, err := sliceListIE(ps.Slices)
		if err != nil {
			return nil, fmt.Errorf("PLMN support %s: %w", ps.PLMN, err)
		}
		pl.List[i] = ie.PLMNSupportItem{PLMNIdentity: p, SliceSupportList: sl}
	}
	return &f5.NGSetupResponse{
		AMFName:             &ie.AMFName{Value: aper.PrintableString(m.AMFName)},
		ServedGUAMIList:     gl,
		RelativeAMFCapacity: &ie.RelativeAMFCapacity{Value: int64(m.RelativeAMFCapacity)},
		PLMNSupportList:     pl,
	}, nil
}

func (m *InitialUEMessage) toFree5GC() (f5.Message, error) {
	if err := checkIDs(0, m.RANUENGAPID); err != nil {
		return nil, err
	}
	pdu, err := nasPDU(m.NASPDU)
	if err != nil {
		return nil, err
	}
	loc, err := userLocationIE(m.UserLocation)
	if err != nil {
		return nil, err
	}
	x := &f5.InitialUEMessage{
		RANUENGAPID:             ranID(m.RANUENGAPID),
		NASPDU:                  pdu,
		UserLocationInformation: loc,
		RRCEstablishmentCause:   &ie.RRCEstablishmentCause{Value: aper.Enumerated(m.RRCEstablishmentCause)},
	}
	if m.FiveGSTMSI != nil {
		if x.FiveGSTMSI, err = stmsiIE(*m.FiveGSTMSI); err != nil {
			return nil, err
		}
	}
	if m.UEContextRequest {
		x.UEContextRequest = &ie.UEContextRequest{Value: ie.UEContextRequestPresentRequested}
	}
	return x, nil
}

func (m *InitialContextSetupRequest) toFree5GC() (f5.Message, error) {
	if err := checkIDs(m.AMFUENGAPID, m.RANUENGAPID); err != nil {
		return nil, err
	}
	g, err := guamiIE(m.GUAMI)
	if err != nil {
		return nil, err
	}
	an, err := allowedNSSAIIE(m.AllowedNSSAI)
	if err != nil {
		return nil, err
	}
	x := &f5.InitialContextSetupRequest{
		AMFUENGAPID:            amfID(m.AMFUENGAPID),
		RANUENGAPID:            ranID(m.RANUENGAPID),
		GUAMI:                  g,
		AllowedNSSAI:           an,
		UESecurityCapabilities: ueSecurityCapabilitiesIE(m.UESecurityCapabilities),
		SecurityKey:            securityKeyIE(m.SecurityKey),
	}
	// TS 38.413 §9.2.2.1: UE Aggregate Maximum Bit Rate is present if and
	// only if (for tern) PDU session resources are set up.
	if (m.UEAggregateMaxBitRate != nil) != (m.PDUSessionResourceSetupItems != nil) {
		return nil, errors.New("UE aggregate maximum bit rate goes with (and only with) PDU session resources")
	}
	if m.PDUSessionResourceSetupItems != nil {
		if x.PDUSessionResourceSetupListCxtReq, err = icsSetupListIE(m.PDUSessionResourceSetupItems); err != nil {
			return nil, err
		}
		if x.UEAggregateMaximumBitRate, err = ueAMBRIE(*m.UEAggregateMaxBitRate); err != nil {
			return nil, err
		}
	}
	if m.NASPDU != nil {
		if x.NASPDU, err = nasPDU(m.NASPDU); err != nil {
			return nil, err
		}
	}
	return x, nil
}
