package ngap

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/free5gc/ngap/ie"
	f5 "github.com/free5gc/ngap/message"

	"github.com/tern5g/tern/identity"
)

func protocolCause(v uint8) Cause { return Cause{Group: CauseProtocol, Value: v} }

func decode(b []byte) (Message, error) {
	target, rest, err := f5.ParseMessageType(b)
	if err != nil {
		return nil, headerError(err)
	}
	de := &DecodeError{
		ProcedureKnown: true,
		ProcedureCode:  target.ProcedureCode(),
		MessageType:    MessageType(target.MessageType()),
		Criticality:    Criticality(target.Criticality()),
	}
	if err := unmarshal(target, rest); err != nil {
		de.fill(err)
		de.readIDs(target)
		if de.AMFUENGAPID == nil && de.RANUENGAPID == nil {
			de.salvageIDs(rest)
			de.dropWildIDs()
		}
		return nil, de
	}
	m, err := fromFree5GC(target)
	if err != nil {
		if errors.Is(err, errUnsupported) {
			// TS 38.413 §10.3.4.1: a procedure we do not implement is an
			// abstract syntax error on the procedure code.
			de.procedureNotComprehended()
		} else {
			de.fill(err)
		}
		de.Err = err
		de.readIDs(target)
		return nil, de
	}
	return m, nil
}

// unmarshal runs free5gc's decoder, which can panic on garbled input.
func unmarshal(target f5.Message, rest []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = ie.BuildTransferSyntaxErr(fmt.Errorf("decoder panic: %v", p))
		}
	}()
	return target.UnmarshalBinary(rest)
}

// headerError classifies a failure to read the NGAP-PDU header.
func headerError(err error) *DecodeError {
	de := &DecodeError{Err: err, Notify: true, Cause: protocolCause(ProtocolTransferSyntaxError)}
	var ase *ie.AbstractSyntaxErr
	if errors.As(err, &ase) {
		de.ProcedureKnown = true
		de.ProcedureCode = ase.GetProcedureCode()
		de.MessageType = MessageType(ase.GetMsgType())
		de.Criticality = Criticality(ase.GetProcedureCrit())
		if c, ok := ase.ErrorCase().(*ie.AbstractSyntaxErrNotComprehendedIE); ok && c.ReportIe != nil && c.ReportIe.IsMsgTypeIe() {
			// TS 38.413 §10.3.4.1A: unknown type of message
			de.Cause = protocolCause(ProtocolAbstractSyntaxErrorReject)
			return de
		}
		de.procedureNotComprehended()
	}
	return de
}

// procedureNotComprehended applies TS 38.413 §10.3.4.1: the reaction follows
// the procedure criticality, and the Error Indication carries procedure code,
// triggering message and criticality in the Criticality Diagnostics.
func (e *DecodeError) procedureNotComprehended() {
	switch e.Criticality {
	case CriticalityReject:
		e.Cause, e.Notify = protocolCause(ProtocolAbstractSyntaxErrorReject), true
	case CriticalityNotify:
		e.Cause, e.Notify = protocolCause(ProtocolAbstractSyntaxErrorIgnoreAndNotify), true
	default:
		e.Cause, e.Notify = protocolCause(ProtocolAbstractSyntaxErrorIgnoreAndNotify), false
	}
	pc, mt, cr := e.ProcedureCode, e.MessageType, e.Criticality
	e.Diagnostics = &CriticalityDiagnostics{ProcedureCode: &pc, TriggeringMessage: &mt, ProcedureCriticality: &cr}
}

// fill sets cause, diagnostics and Notify from a body decoding error.
func (e *DecodeError) fill(err error) {
	e.Err = err
	e.Notify = true
	var ase *ie.AbstractSyntaxErr
	var tse *ie.TransferSyntaxErr
	var miss *errMissing
	switch {
	case errors.As(err, &miss):
		// TS 38.413 §10.3.5: missing IE, criticality of our mandatory IEs is reject
		e.Cause = protocolCause(ProtocolAbstractSyntaxErrorReject)
		e.Diagnostics = e.procDiag()
		e.Diagnostics.IEs = []CriticalityDiagnosticsIE{{Criticality: CriticalityReject, IEID: miss.id, TypeOfError: Missing}}
	case errors.As(err, &ase):
		if c, cerr := ase.GetCause(); cerr == nil {
			e.Cause, _ = causeFrom(c)
		} else if _, wrongOrder := ase.ErrorCase().(*ie.AbstractSyntaxErrIEWrongOrderOrTooManyOccur); wrongOrder {
			// TS 38.413 §10.3.5: wrong order / too many occurrences
			e.Cause = protocolCause(ProtocolAbstractSyntaxErrorFalselyConstructedMessage)
		} else {
			// an IE with criticality "ignore": TS 38.413 §10.3.4.2 says ignore silently
			e.Cause = protocolCause(ProtocolAbstractSyntaxErrorIgnoreAndNotify)
			e.Notify = false
		}
		if d, derr := ase.GetCritDiag(true); derr == nil {
			e.Diagnostics = critDiagFrom(d)
		}
	case errors.As(err, &tse):
		e.Cause = protocolCause(ProtocolTransferSyntaxError)
	default:
		var sem *errSemantic
		if errors.As(err, &sem) {
			e.Cause = protocolCause(ProtocolSemanticError)
		} else {
			e.Cause = protocolCause(ProtocolTransferSyntaxError)
		}
	}
}

func (e *DecodeError) procDiag() *CriticalityDiagnostics {
	pc, mt, cr := e.ProcedureCode, e.MessageType, e.Criticality
	return &CriticalityDiagnostics{ProcedureCode: &pc, TriggeringMessage: &mt, ProcedureCriticality: &cr}
}

// readIDs copies whichever UE NGAP IDs the (partially) decoded message holds
// and that are in range (a garbled PDU may leave a wild value behind).
// Reflection is fine here: this is the error path only.
func (e *DecodeError) readIDs(target f5.Message) {
	e.readRawIDs(target)
	e.dropWildIDs()
}

func (e *DecodeError) dropWildIDs() {
	if e.AMFUENGAPID != nil && checkIDs(*e.AMFUENGAPID, 0) != nil {
		e.AMFUENGAPID = nil
	}
	if e.RANUENGAPID != nil && checkIDs(0, *e.RANUENGAPID) != nil {
		e.RANUENGAPID = nil
	}
}

func (e *DecodeError) readRawIDs(target f5.Message) {
	v := reflect.ValueOf(target)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return
	}
	s := v.Elem()
	if f := s.FieldByName("AMFUENGAPID"); f.IsValid() {
		if id, ok := f.Interface().(*ie.AMFUENGAPID); ok && id != nil {
			x := id.Value
			e.AMFUENGAPID = &x
		}
	}
	// Path Switch Request names the UE by the AMF UE NGAP ID it had at the
	// source (TS 38.413 §9.2.3.8): the one an Error Indication can carry.
	if f := s.FieldByName("SourceAMFUENGAPID"); f.IsValid() && e.AMFUENGAPID == nil {
		if id, ok := f.Interface().(*ie.AMFUENGAPID); ok && id != nil {
			x := id.Value
			e.AMFUENGAPID = &x
		}
	}
	if f := s.FieldByName("RANUENGAPID"); f.IsValid() {
		if id, ok := f.Interface().(*ie.RANUENGAPID); ok && id != nil {
			x := id.Value
			e.RANUENGAPID = &x
		}
	}
	if f := s.FieldByName("UENGAPIDs"); f.IsValid() {
		if ids, ok := f.Interface().(*ie.UENGAPIDs); ok && ids != nil {
			switch c := ids.Choice.(type) {
			case *ie.UENGAPIDPair:
				if c.AMFUENGAPID != nil {
					x := c.AMFUENGAPID.Value
					e.AMFUENGAPID = &x
				}
				if c.RANUENGAPID != nil {
					x := c.RANUENGAPID.Value
					e.RANUENGAPID = &x
				}
			case *ie.AMFUENGAPID:
				x := c.Value
				e.AMFUENGAPID = &x
			}
		}
	}
}

var errUnsupported = errors.New("procedure not supported by tern")

// errSemantic marks a decodable message whose values tern cannot accept.
type errSemantic struct{ err error }

func (e *errSemantic) Error() string { return e.err.Error() }
func (e *errSemantic) Unwrap() error { return e.err }

func semantic(err error) error {
	if err == nil {
		return nil
	}
	var miss *errMissing
	if errors.As(err, &miss) {
		return err
	}
	return &errSemantic{err: err}
}

func fromFree5GC(x f5.Message) (Message, error) {
	m, err := convert(x)
	return m, semantic(err)
}

func convert(x f5.Message) (Message, error) {
	switch x := x.(type) {
	case *f5.NGSetupRequest:
		return ngSetupRequestFrom(x)
	case *f5.NGSetupResponse:
		return ngSetupResponseFrom(x)
	case *f5.NGSetupFailure:
		c, err := causeFrom(x.Cause)
		if err != nil {
			return nil, mandatory(x.Cause == nil, "Cause", ie.ProtocolIEIDCause, err)
		}
		m := &NGSetupFailure{Cause: c, CriticalityDiagnostics: critDiagFrom(x.CriticalityDiagnostics)}
		if x.TimeToWait != nil {
			t := TimeToWait(x.TimeToWait.Value)
			m.TimeToWait = &t
		}
		return m, nil
	case *f5.InitialUEMessage:
		return initialUEMessageFrom(x)
	case *f5.DownlinkNASTransport:
		if err := needIDs(x.AMFUENGAPID, x.RANUENGAPID); err != nil {
			return nil, err
		}
		if x.NASPDU == nil {
			return nil, missing("NAS-PDU", ie.ProtocolIEIDNASPDU)
		}
		m := &DownlinkNASTransport{AMFUENGAPID: x.AMFUENGAPID.Value, RANUENGAPID: x.RANUENGAPID.Value, NASPDU: x.NASPDU.Value}
		if x.AllowedNSSAI != nil {
			var err error
			if m.AllowedNSSAI, err = allowedNSSAIFrom(x.AllowedNSSAI); err != nil {
				return nil, err
			}
		}
		return m, nil
	case *f5.UplinkNASTransport:
		if err := needIDs(x.AMFUENGAPID, x.RANUENGAPID); err != nil {
			return nil, err
		}
		if x.NASPDU == nil {
			return nil, missing("NAS-PDU", ie.ProtocolIEIDNASPDU)
		}
		if x.UserLocationInformation == nil {
			return nil, missing("UserLocationInformation", ie.ProtocolIEIDUserLocationInformation)
		}
		loc, err := userLocationFrom(x.UserLocationInformation)
		if err != nil {
			return nil, err
		}
		return &UplinkNASTransport{AMFUENGAPID: x.AMFUENGAPID.Value, RANUENGAPID: x.RANUENGAPID.Value, NASPDU: x.NASPDU.Value, UserLocation: loc}, nil
	case *f5.NASNonDeliveryIndication:
		if err := needIDs(x.AMFUENGAPID, x.RANUENGAPID); err != nil {
			return nil, err
		}
		if x.NASPDU == nil {
			return nil, missing("NAS-PDU", ie.ProtocolIEIDNASPDU)
		}
		c, err := causeFrom(x.Cause)
		if err != nil {
			return nil, mandatory(x.Cause == nil, "Cause", ie.ProtocolIEIDCause, err)
		}
		return &NASNonDeliveryIndication{AMFUENGAPID: x.AMFUENGAPID.Value, RANUENGAPID: x.RANUENGAPID.Value, NASPDU: x.NASPDU.Value, Cause: c}, nil
	case *f5.InitialContextSetupRequest:
		return initialContextSetupRequestFrom(x)
	case *f5.InitialContextSetupResponse:
		return initialContextSetupResponseFrom(x)
	case *f5.InitialContextSetupFailure:
		if err := needIDs(x.AMFUENGAPID, x.RANUENGAPID); err != nil {
			return nil, err
		}
		c, err := causeFrom(x.Cause)
		if err != nil {
			return nil, mandatory(x.Cause == nil, "Cause", ie.ProtocolIEIDCause, err)
		}
		return &InitialContextSetupFailure{
			AMFUENGAPID: x.AMFUENGAPID.Value, RANUENGAPID: x.RANUENGAPID.Value, Cause: c,
			CriticalityDiagnostics: critDiagFrom(x.CriticalityDiagnostics),
		}, nil
	case *f5.UEContextReleaseRequest:
		if err := needIDs(x.AMFUENGAPID, x.RANUENGAPID); err != nil {
			return nil, err
		}
		c, err := causeFrom(x.Cause)
		if err != nil {
			return nil, mandatory(x.Cause == nil, "Cause", ie.ProtocolIEIDCause, err)
		}
		return &UEContextReleaseRequest{AMFUENGAPID: x.AMFUENGAPID.Value, RANUENGAPID: x.RANUENGAPID.Value, Cause: c}, nil
	case *f5.UEContextReleaseCommand:
		if x.UENGAPIDs == nil {
			return nil, missing("UE-NGAP-IDs", ie.ProtocolIEIDUENGAPIDs)
		}
		m := &UEContextReleaseCommand{}
		switch c := x.UENGAPIDs.Choice.(type) {
		case *ie.UENGAPIDPair:
			if err := needIDs(c.AMFUENGAPID, c.RANUENGAPID); err != nil {
				return nil, err
			}
			m.AMFUENGAPID, m.RANUENGAPID = c.AMFUENGAPID.Value, c.RANUENGAPID.Value
		case *ie.AMFUENGAPID:
			m.AMFUENGAPID, m.AMFIDOnly = c.Value, true
		default:
			return nil, fmt.Errorf("UE-NGAP-IDs: unsupported choice %T", x.UENGAPIDs.Choice)
		}
		c, err := causeFrom(x.Cause)
		if err != nil {
			return nil, mandatory(x.Cause == nil, "Cause", ie.ProtocolIEIDCause, err)
		}
		m.Cause = c
		return m, nil
	case *f5.UEContextReleaseComplete:
		if err := needIDs(x.AMFUENGAPID, x.RANUENGAPID); err != nil {
			return nil, err
		}
		m := &UEContextReleaseComplete{
			AMFUENGAPID: x.AMFUENGAPID.Value, RANUENGAPID: x.RANUENGAPID.Value,
			CriticalityDiagnostics: critDiagFrom(x.CriticalityDiagnostics),
		}
		if x.UserLocationInformation != nil {
			loc, err := userLocationFrom(x.UserLocationInformation)
			if err != nil {
				return nil, err
			}
			m.UserLocation = &loc
		}
		if x.PDUSessionResourceListCxtRelCpl != nil {
			ids, err := releasedSessionsFrom(x.PDUSessionResourceListCxtRelCpl)
			if err != nil {
				return nil, err
			}
			m.PDUSessionIDs = ids
		}
		return m, nil
	case *f5.PDUSessionResourceSetupRequest:
		return pduSessionResourceSetupRequestFrom(x)
	case *f5.PDUSessionResourceSetupResponse:
		return pduSessionResourceSetupResponseFrom(x)
	case *f5.PDUSessionResourceModifyRequest:
		return pduSessionResourceModifyRequestFrom(x)
	case *f5.PDUSessionResourceModifyResponse:
		return pduSessionResourceModifyResponseFrom(x)
	case *f5.PDUSessionResourceReleaseCommand:
		return pduSessionResourceReleaseCommandFrom(x)
	case *f5.PDUSessionResourceReleaseResponse:
		return pduSessionResourceReleaseResponseFrom(x)
	case *f5.Paging:
		return pagingFrom(x)
	case *f5.PathSwitchRequest:
		return pathSwitchRequestFrom(x)
	case *f5.PathSwitchRequestAcknowledge:
		return pathSwitchRequestAcknowledgeFrom(x)
	case *f5.PathSwitchRequestFailure:
		return pathSwitchRequestFailureFrom(x)
	case *f5.HandoverRequired:
		return handoverRequiredFrom(x)
	case *f5.HandoverCommand:
		return handoverCommandFrom(x)
	case *f5.HandoverPreparationFailure:
		return handoverPreparationFailureFrom(x)
	case *f5.HandoverRequest:
		return handoverRequestFrom(x)
	case *f5.HandoverRequestAcknowledge:
		return handoverRequestAcknowledgeFrom(x)
	case *f5.HandoverFailure:
		return handoverFailureFrom(x)
	case *f5.HandoverNotify:
		return handoverNotifyFrom(x)
	case *f5.HandoverCancel:
		return handoverCancelFrom(x)
	case *f5.HandoverCancelAcknowledge:
		return handoverCancelAcknowledgeFrom(x)
	case *f5.UplinkRANStatusTransfer:
		return ranStatusTransferFrom(x.AMFUENGAPID, x.RANUENGAPID, x.RANStatusTransferTransparentContainer, func(a, r int64, d []DRBStatus) Message {
			return &UplinkRANStatusTransfer{AMFUENGAPID: a, RANUENGAPID: r, DRBs: d}
		})
	case *f5.DownlinkRANStatusTransfer:
		return ranStatusTransferFrom(x.AMFUENGAPID, x.RANUENGAPID, x.RANStatusTransferTransparentContainer, func(a, r int64, d []DRBStatus) Message {
			return &DownlinkRANStatusTransfer{AMFUENGAPID: a, RANUENGAPID: r, DRBs: d}
		})
	case *f5.NGReset:
		return ngResetFrom(x)
	case *f5.NGResetAcknowledge:
		return ngResetAcknowledgeFrom(x)
	case *f5.RANConfigurationUpdate:
		return ranConfigurationUpdateFrom(x)
	case *f5.RANConfigurationUpdateAcknowledge:
		return &RANConfigurationUpdateAcknowledge{CriticalityDiagnostics: critDiagFrom(x.CriticalityDiagnostics)}, nil
	case *f5.RANConfigurationUpdateFailure:
		return ranConfigurationUpdateFailureFrom(x)
	case *f5.ErrorIndication:
		m := &ErrorIndication{CriticalityDiagnostics: critDiagFrom(x.CriticalityDiagnostics)}
		if x.AMFUENGAPID != nil {
			v := x.AMFUENGAPID.Value
			m.AMFUENGAPID = &v
		}
		if x.RANUENGAPID != nil {
			v := x.RANUENGAPID.Value
			m.RANUENGAPID = &v
		}
		if x.Cause != nil {
			c, err := causeFrom(x.Cause)
			if err != nil {
				return nil, err
			}
			m.Cause = &c
		}
		return m, nil
	}
	return nil, errUnsupported
}

func mandatory(absent bool, name string, id int64, err error) error {
	if absent {
		return missing(name, id)
	}
	return err
}

func needIDs(a *ie.AMFUENGAPID, r *ie.RANUENGAPID) error {
	if a == nil {
		return missing("AMF-UE-NGAP-ID", ie.ProtocolIEIDAMFUENGAPID)
	}
	if r == nil {
		return missing("RAN-UE-NGAP-ID", ie.ProtocolIEIDRANUENGAPID)
	}
	return nil
}

func ngSetupRequestFrom(x *f5.NGSetupRequest) (Message, error) {
	if x.GlobalRANNodeID == nil {
		return nil, missing("GlobalRANNodeID", ie.ProtocolIEIDGlobalRANNodeID)
	}
	if x.SupportedTAList == nil {
		return nil, missing("SupportedTAList", ie.ProtocolIEIDSupportedTAList)
	}
	if x.DefaultPagingDRX == nil {
		return nil, missing("DefaultPagingDRX", ie.ProtocolIEIDDefaultPagingDRX)
	}
	g, err := globalGNBIDFrom(x.GlobalRANNodeID)
	if err != nil {
		return nil, err
	}
	m := &NGSetupRequest{
		GlobalRANNodeID:  g,
		DefaultPagingDRX: PagingDRX(x.DefaultPagingDRX.Value),
	}
	if x.RANNodeName != nil {
		m.RANNodeName = string(x.RANNodeName.Value)
	}
	if m.SupportedTAs, err = supportedTAListFrom(x.SupportedTAList); err != nil {
		return nil, err
	}
	return m, nil
}

func ngSetupResponseFrom(x *f5.NGSetupResponse) (Message, error) {
	switch {
	case x.AMFName == nil:
		return nil, missing("AMFName", ie.ProtocolIEIDAMFName)
	case x.ServedGUAMIList == nil:
		return nil, missing("ServedGUAMIList", ie.ProtocolIEIDServedGUAMIList)
	case x.RelativeAMFCapacity == nil:
		return nil, missing("RelativeAMFCapacity", ie.ProtocolIEIDRelativeAMFCapacity)
	case x.PLMNSupportList == nil:
		return nil, missing("PLMNSupportList", ie.ProtocolIEIDPLMNSupportList)
	}
	m := &NGSetupResponse{
		AMFName:             string(x.AMFName.Value),
		RelativeAMFCapacity: uint8(x.RelativeAMFCapacity.Value),
		ServedGUAMIs:        make([]identity.GUAMI, len(x.ServedGUAMIList.List)),
		PLMNSupport:         make([]PLMNSupport, len(x.PLMNSupportList.List)),
	}
	for i, it := range x.ServedGUAMIList.List {
		g, err := guamiFrom(it.GUAMI)
		if err != nil {
			return nil, err
		}
		m.ServedGUAMIs[i] = g
	}
	for i, it := range x.PLMNSupportList.List {
		p, err := plmnFrom(it.PLMNIdentity)
		if err != nil {
			return nil, fmt.Errorf("PLMN support: %w", err)
		}
		sl, err := sliceListFrom(it.SliceSupportList)
		if err != nil {
			return nil, fmt.Errorf("PLMN support %s: %w", p, err)
		}
		m.PLMNSupport[i] = PLMNSupport{PLMN: p, Slices: sl}
	}
	return m, nil
}

func initialUEMessageFrom(x *f5.InitialUEMessage) (Message, error) {
	switch {
	case x.RANUENGAPID == nil:
		return nil, missing("RAN-UE-NGAP-ID", ie.ProtocolIEIDRANUENGAPID)
	case x.NASPDU == nil:
		return nil, missing("NAS-PDU", ie.ProtocolIEIDNASPDU)
	case x.UserLocationInformation == nil:
		return nil, missing("UserLocationInformation", ie.ProtocolIEIDUserLocationInformation)
	case x.RRCEstablishmentCause == nil:
		return nil, missing("RRCEstablishmentCause", ie.ProtocolIEIDRRCEstablishmentCause)
	}
	loc, err := userLocationFrom(x.UserLocationInformation)
	if err != nil {
		return nil, err
	}
	m := &InitialUEMessage{
		RANUENGAPID:           x.RANUENGAPID.Value,
		NASPDU:                x.NASPDU.Value,
		UserLocation:          loc,
		RRCEstablishmentCause: RRCEstablishmentCause(x.RRCEstablishmentCause.Value),
		UEContextRequest:      x.UEContextRequest != nil,
	}
	if x.FiveGSTMSI != nil {
		s, err := stmsiFrom(x.FiveGSTMSI)
		if err != nil {
			return nil, err
		}
		m.FiveGSTMSI = &s
	}
	return m, nil
}

func initialContextSetupRequestFrom(x *f5.InitialContextSetupRequest) (Message, error) {
	if err := needIDs(x.AMFUENGAPID, x.RANUENGAPID); err != nil {
		return nil, err
	}
	switch {
	case x.GUAMI == nil:
		return nil, missing("GUAMI", ie.ProtocolIEIDGUAMI)
	case x.AllowedNSSAI == nil:
		return nil, missing("AllowedNSSAI", ie.ProtocolIEIDAllowedNSSAI)
	case x.UESecurityCapabilities == nil:
		return nil, missing("UESecurityCapabilities", ie.ProtocolIEIDUESecurityCapabilities)
	case x.SecurityKey == nil:
		return nil, missing("SecurityKey", ie.ProtocolIEIDSecurityKey)
	}
	g, err := guamiFrom(x.GUAMI)
	if err != nil {
		return nil, err
	}
	an, err := allowedNSSAIFrom(x.AllowedNSSAI)
	if err != nil {
		return nil, err
	}
	caps, err := ueSecurityCapabilitiesFrom(x.UESecurityCapabilities)
	if err != nil {
		return nil, err
	}
	key, err := securityKeyFrom(x.SecurityKey)
	if err != nil {
		return nil, err
	}
	m := &InitialContextSetupRequest{
		AMFUENGAPID:            x.AMFUENGAPID.Value,
		RANUENGAPID:            x.RANUENGAPID.Value,
		GUAMI:                  g,
		AllowedNSSAI:           an,
		UESecurityCapabilities: caps,
		SecurityKey:            key,
	}
	if a := x.UEAggregateMaximumBitRate; a != nil {
		if m.UEAggregateMaxBitRate, err = ueAMBRFrom(a); err != nil {
			return nil, err
		}
	}
	if l := x.PDUSessionResourceSetupListCxtReq; l != nil {
		// TS 38.413 §9.2.2.1: C-ifPDUsessionResourceSetup
		if x.UEAggregateMaximumBitRate == nil {
			return nil, missing("UEAggregateMaximumBitRate", ie.ProtocolIEIDUEAggregateMaximumBitRate)
		}
		if m.PDUSessionResourceSetupItems, err = icsSetupListFrom(l); err != nil {
			return nil, err
		}
	}
	if x.NASPDU != nil {
		m.NASPDU = x.NASPDU.Value
	}
	return m, nil
}
