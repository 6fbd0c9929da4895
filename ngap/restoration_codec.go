package ngap

import (
	"errors"
	"fmt"

	"github.com/free5gc/ngap/aper"
	"github.com/free5gc/ngap/ie"
	f5 "github.com/free5gc/ngap/message"
)

// maxUEConnections is maxnoofNGConnectionsToReset (TS 38.413 §9.4.6), the
// bound of the UE-associated Logical NG-connection List.
const maxUEConnections = 65536

// supportedTAListIE builds the Supported TA List of NG Setup Request and
// RAN Configuration Update (TS 38.413 §9.2.6.1, §9.2.6.4): at least one TA,
// each with at least one broadcast PLMN.
func supportedTAListIE(tas []SupportedTA) (*ie.SupportedTAList, error) {
	if len(tas) == 0 {
		return nil, errors.New("empty supported TA list")
	}
	l := &ie.SupportedTAList{List: make([]ie.SupportedTAItem, len(tas))}
	for i, ta := range tas {
		if len(ta.BroadcastPLMNs) == 0 {
			return nil, fmt.Errorf("TA %06x: no broadcast PLMN", ta.TAC)
		}
		bl := &ie.BroadcastPLMNList{List: make([]ie.BroadcastPLMNItem, len(ta.BroadcastPLMNs))}
		for j, bp := range ta.BroadcastPLMNs {
			pp, err := plmnIE(bp.PLMN)
			if err != nil {
				return nil, fmt.Errorf("TA %06x: %w", ta.TAC, err)
			}
			sl, err := sliceListIE(bp.Slices)
			if err != nil {
				return nil, fmt.Errorf("TA %06x: %w", ta.TAC, err)
			}
			bl.List[j] = ie.BroadcastPLMNItem{PLMNIdentity: pp, TAISliceSupportList: sl}
		}
		l.List[i] = ie.SupportedTAItem{TAC: tacIE(ta.TAC), BroadcastPLMNList: bl}
	}
	return l, nil
}

func supportedTAListFrom(x *ie.SupportedTAList) ([]SupportedTA, error) {
	out := make([]SupportedTA, len(x.List))
	for i, it := range x.List {
		tac, err := tacFrom(it.TAC)
		if err != nil {
			return nil, err
		}
		if it.BroadcastPLMNList == nil {
			return nil, errors.New("supported TA without broadcast PLMN list")
		}
		ta := SupportedTA{TAC: tac, BroadcastPLMNs: make([]BroadcastPLMN, len(it.BroadcastPLMNList.List))}
		for j, bp := range it.BroadcastPLMNList.List {
			pp, err := plmnFrom(bp.PLMNIdentity)
			if err != nil {
				return nil, fmt.Errorf("broadcast PLMN: %w", err)
			}
			sl, err := sliceListFrom(bp.TAISliceSupportList)
			if err != nil {
				return nil, fmt.Errorf("broadcast PLMN %s: %w", pp, err)
			}
			ta.BroadcastPLMNs[j] = BroadcastPLMN{PLMN: pp, Slices: sl}
		}
		out[i] = ta
	}
	return out, nil
}

// ueConnectionListIE builds a UE-associated Logical NG-connection List (TS
// 38.413 §9.2.6.11, §9.2.6.12): each item names the AMF UE NGAP ID, the RAN
// UE NGAP ID or both.
func ueConnectionListIE(cs []UEConnection) (*ie.UEAssociatedLogicalNGConnectionList, error) {
	if len(cs) == 0 || len(cs) > maxUEConnections {
		return nil, fmt.Errorf("UE-associated logical NG-connection list of %d items (1..%d)", len(cs), maxUEConnections)
	}
	l := &ie.UEAssociatedLogicalNGConnectionList{List: make([]ie.UEAssociatedLogicalNGConnectionItem, len(cs))}
	for i, c := range cs {
		if c.AMFUENGAPID == nil && c.RANUENGAPID == nil {
			return nil, fmt.Errorf("UE-associated logical NG-connection item %d names no UE NGAP ID", i)
		}
		it := &l.List[i]
		if c.AMFUENGAPID != nil {
			if err := checkIDs(*c.AMFUENGAPID, 0); err != nil {
				return nil, err
			}
			it.AMFUENGAPID = amfID(*c.AMFUENGAPID)
		}
		if c.RANUENGAPID != nil {
			if err := checkIDs(0, *c.RANUENGAPID); err != nil {
				return nil, err
			}
			it.RANUENGAPID = ranID(*c.RANUENGAPID)
		}
	}
	return l, nil
}

func ueConnectionListFrom(x *ie.UEAssociatedLogicalNGConnectionList) ([]UEConnection, error) {
	if len(x.List) == 0 {
		return nil, errors.New("empty UE-associated logical NG-connection list")
	}
	// An item may name no ID: TS 38.413 §8.7.4.2.1 lets the answer leave
	// such items out, so a receiver takes them (and names nothing by them).
	out := make([]UEConnection, len(x.List))
	for i, it := range x.List {
		if it.AMFUENGAPID != nil {
			v := it.AMFUENGAPID.Value
			if err := checkIDs(v, 0); err != nil {
				return nil, err
			}
			out[i].AMFUENGAPID = &v
		}
		if it.RANUENGAPID != nil {
			v := it.RANUENGAPID.Value
			if err := checkIDs(0, v); err != nil {
				return nil, err
			}
			out[i].RANUENGAPID = &v
		}
	}
	return out, nil
}

func (m *NGReset) toFree5GC() (f5.Message, error) {
	c, err := causeIE(m.Cause)
	if err != nil {
		return nil, err
	}
	rt := &ie.ResetType{}
	if m.Connections == nil {
		rt.Choice = &ie.ResetAll{Value: ie.ResetAllPresentResetAll}
	} else {
		l, err := ueConnectionListIE(m.Connections)
		if err != nil {
			return nil, err
		}
		rt.Choice = l
	}
	return &f5.NGReset{Cause: c, ResetType: rt}, nil
}

func ngResetFrom(x *f5.NGReset) (Message, error) {
	if x.Cause == nil {
		return nil, missing("Cause", ie.ProtocolIEIDCause)
	}
	if x.ResetType == nil {
		return nil, missing("ResetType", ie.ProtocolIEIDResetType)
	}
	c, err := causeFrom(x.Cause)
	if err != nil {
		return nil, err
	}
	m := &NGReset{Cause: c}
	switch rt := x.ResetType.Choice.(type) {
	case *ie.ResetAll:
		if rt.Value != ie.ResetAllPresentResetAll {
			return nil, fmt.Errorf("reset type NG interface value %d", rt.Value)
		}
	case *ie.UEAssociatedLogicalNGConnectionList:
		if m.Connections, err = ueConnectionListFrom(rt); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("reset type: unsupported choice %T", x.ResetType.Choice)
	}
	return m, nil
}

func (m *NGResetAcknowledge) toFree5GC() (f5.Message, error) {
	x := &f5.NGResetAcknowledge{CriticalityDiagnostics: critDiagIE(m.CriticalityDiagnostics)}
	if m.Connections != nil {
		l, err := ueConnectionListIE(m.Connections)
		if err != nil {
			return nil, err
		}
		x.UEAssociatedLogicalNGConnectionList = l
	}
	return x, nil
}

func ngResetAcknowledgeFrom(x *f5.NGResetAcknowledge) (Message, error) {
	m := &NGResetAcknowledge{CriticalityDiagnostics: critDiagFrom(x.CriticalityDiagnostics)}
	if x.UEAssociatedLogicalNGConnectionList != nil {
		var err error
		if m.Connections, err = ueConnectionListFrom(x.UEAssociatedLogicalNGConnectionList); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *RANConfigurationUpdate) toFree5GC() (f5.Message, error) {
	x := &f5.RANConfigurationUpdate{}
	if m.RANNodeName != "" {
		x.RANNodeName = &ie.RANNodeName{Value: aper.PrintableString(m.RANNodeName)}
	}
	if m.SupportedTAs != nil {
		l, err := supportedTAListIE(m.SupportedTAs)
		if err != nil {
			return nil, err
		}
		x.SupportedTAList = l
	}
	if m.DefaultPagingDRX != nil {
		if *m.DefaultPagingDRX > PagingDRX256 {
			return nil, fmt.Errorf("default paging DRX %d", *m.DefaultPagingDRX)
		}
		x.DefaultPagingDRX = &ie.PagingDRX{Value: aper.Enumerated(*m.DefaultPagingDRX)}
	}
	if m.GlobalRANNodeID != nil {
		g, err := globalGNBIDIE(*m.GlobalRANNodeID)
		if err != nil {
			return nil, err
		}
		x.GlobalRANNodeID = g
	}
	return x, nil
}

func ranConfigurationUpdateFrom(x *f5.RANConfigurationUpdate) (Message, error) {
	m := &RANConfigurationUpdate{}
	if x.RANNodeName != nil {
		m.RANNodeName = string(x.RANNodeName.Value)
	}
	if x.SupportedTAList != nil {
		var err error
		if m.SupportedTAs, err = supportedTAListFrom(x.SupportedTAList); err != nil {
			return nil, err
		}
	}
	if x.DefaultPagingDRX != nil {
		if x.DefaultPagingDRX.Value > aper.Enumerated(PagingDRX256) {
			return nil, fmt.Errorf("default paging DRX %d", x.DefaultPagingDRX.Value)
		}
		d := PagingDRX(x.DefaultPagingDRX.Value)
		m.DefaultPagingDRX = &d
	}
	if x.GlobalRANNodeID != nil {
		g, err := globalGNBIDFrom(x.GlobalRANNodeID)
		if err != nil {
			return nil, err
		}
		m.GlobalRANNodeID = &g
	}
	return m, nil
}

func (m *RANConfigurationUpdateFailure) toFree5GC() (f5.Message, error) {
	c, err := causeIE(m.Cause)
	if err != nil {
		return nil, err
	}
	x := &f5.RANConfigurationUpdateFailure{Cause: c, CriticalityDiagnostics: critDiagIE(m.CriticalityDiagnostics)}
	if m.TimeToWait != nil {
		if *m.TimeToWait > TimeToWait60s {
			return nil, fmt.Errorf("time to wait %d", *m.TimeToWait)
		}
		x.TimeToWait = &ie.TimeToWait{Value: aper.Enumerated(*m.TimeToWait)}
	}
	return x, nil
}

func ranConfigurationUpdateFailureFrom(x *f5.RANConfigurationUpdateFailure) (Message, error) {
	c, err := causeFrom(x.Cause)
	if err != nil {
		return nil, mandatory(x.Cause == nil, "Cause", ie.ProtocolIEIDCause, err)
	}
	m := &RANConfigurationUpdateFailure{Cause: c, CriticalityDiagnostics: critDiagFrom(x.CriticalityDiagnostics)}
	if x.TimeToWait != nil {
		if x.TimeToWait.Value > aper.Enumerated(TimeToWait60s) {
			return nil, fmt.Errorf("time to wait %d", x.TimeToWait.Value)
		}
		t := TimeToWait(x.TimeToWait.Value)
		m.TimeToWait = &t
	}
	return m, nil
}
