package ngap

import (
	"errors"
	"fmt"

	"github.com/free5gc/ngap/aper"
	"github.com/free5gc/ngap/ie"
	f5 "github.com/free5gc/ngap/message"
)

// maxPDUSessions is maxnoofPDUSessions (TS 38.413 §9.4.6), the bound of
// every PDU session resource list.
const maxPDUSessions = 256

func checkListLen(name string, n int) error {
	if n == 0 || n > maxPDUSessions {
		return fmt.Errorf("%s of %d items (1..%d)", name, n, maxPDUSessions)
	}
	return nil
}

func transferIE(id uint8, b []byte) (*aper.OctetString, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("PDU session %d: empty transfer", id)
	}
	o := aper.OctetString(b)
	return &o, nil
}

func sessionIDFrom(x *ie.PDUSessionID) (uint8, error) {
	if x == nil {
		return 0, errors.New("missing PDU session ID")
	}
	if x.Value < 0 || x.Value > 255 {
		return 0, fmt.Errorf("PDU session ID %d", x.Value)
	}
	return uint8(x.Value), nil
}

func transferFrom(id uint8, x *aper.OctetString) ([]byte, error) {
	if x == nil || len(*x) == 0 {
		return nil, fmt.Errorf("PDU session %d: missing transfer", id)
	}
	return []byte(*x), nil
}

// itemsIE converts a list of (PDU Session ID, transfer) items with mk, the
// constructor of the list's free5gc item type.
func itemsIE[T any](name string, l []PDUSessionResourceItem, mk func(*ie.PDUSessionID, *aper.OctetString) T) ([]T, error) {
	if err := checkListLen(name, len(l)); err != nil {
		return nil, err
	}
	out := make([]T, len(l))
	for i, it := range l {
		tr, err := transferIE(it.ID, it.Transfer)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[i] = mk(&ie.PDUSessionID{Value: int64(it.ID)}, tr)
	}
	return out, nil
}

// itemsFrom is the inverse of itemsIE; get extracts the two fields.
func itemsFrom[T any](name string, l []T, get func(*T) (*ie.PDUSessionID, *aper.OctetString)) ([]PDUSessionResourceItem, error) {
	out := make([]PDUSessionResourceItem, len(l))
	for i := range l {
		idIE, tr := get(&l[i])
		id, err := sessionIDFrom(idIE)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		b, err := transferFrom(id, tr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[i] = PDUSessionResourceItem{ID: id, Transfer: b}
	}
	return out, nil
}

// setupItemIE holds the fields shared by the SU Req and Cxt Req setup items.
type setupItemIE struct {
	id     *ie.PDUSessionID
	nas    *ie.NASPDU
	snssai *ie.SNSSAI
	tr     *aper.OctetString
}

func setupItemsIE(name string, l []PDUSessionResourceSetupItemSUReq) ([]setupItemIE, error) {
	if err := checkListLen(name, len(l)); err != nil {
		return nil, err
	}
	out := make([]setupItemIE, len(l))
	for i, it := range l {
		tr, err := transferIE(it.ID, it.Transfer)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		x := setupItemIE{id: &ie.PDUSessionID{Value: int64(it.ID)}, snssai: snssaiIE(it.SNSSAI), tr: tr}
		if it.NASPDU != nil {
			if x.nas, err = nasPDU(it.NASPDU); err != nil {
				return nil, fmt.Errorf("%s: PDU session %d: %w", name, it.ID, err)
			}
		}
		out[i] = x
	}
	return out, nil
}

func setupItemFrom(name string, x setupItemIE) (PDUSessionResourceSetupItemSUReq, error) {
	var it PDUSessionResourceSetupItemSUReq
	id, err := sessionIDFrom(x.id)
	if err != nil {
		return it, fmt.Errorf("%s: %w", name, err)
	}
	s, err := snssaiFrom(x.snssai)
	if err != nil {
		return it, fmt.Errorf("%s: PDU session %d: %w", name, id, err)
	}
	tr, err := transferFrom(id, x.tr)
	if err != nil {
		return it, fmt.Errorf("%s: %w", name, err)
	}
	it = PDUSessionResourceSetupItemSUReq{ID: id, SNSSAI: s, Transfer: tr}
	if x.nas != nil {
		it.NASPDU = x.nas.Value
	}
	return it, nil
}

func (m *PDUSessionResourceSetupRequest) toFree5GC() (f5.Message, error) {
	if err := checkIDs(m.AMFUENGAPID, m.RANUENGAPID); err != nil {
		return nil, err
	}
	items, err := setupItemsIE("PDU session resource setup list", m.Items)
	if err != nil {
		return nil, err
	}
	l := &ie.PDUSessionResourceSetupListSUReq{List: make([]ie.PDUSessionResourceSetupItemSUReq, len(items))}
	for i, x := range items {
		l.List[i] = ie.PDUSessionResourceSetupItemSUReq{
			PDUSessionID: x.id, PDUSessionNASPDU: x.nas, SNSSAI: x.snssai, PDUSessionResourceSetupRequestTransfer: x.tr,
		}
	}
	out := &f5.PDUSessionResourceSetupRequest{
		AMFUENGAPID: amfID(m.AMFUENGAPID), RANUENGAPID: ranID(m.RANUENGAPID), PDUSessionResourceSetupListSUReq: l,
	}
	if m.NASPDU != nil {
		if out.NASPDU, err = nasPDU(m.NASPDU); err != nil {
			return nil, err
		}
	}
	if m.UEAggregateMaxBitRate != nil {
		if out.UEAggregateMaximumBitRate, err = ueAMBRIE(*m.UEAggregateMaxBitRate); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func pduSessionResourceSetupRequestFrom(x *f5.PDUSessionResourceSetupRequest) (Message, error) {
	if err := needIDs(x.AMFUENGAPID, x.RANUENGAPID); err != nil {
		return nil, err
	}
	if x.PDUSessionResourceSetupListSUReq == nil {
		return nil, missing("PDUSessionResourceSetupListSUReq", ie.ProtocolIEIDPDUSessionResourceSetupListSUReq)
	}
	m := &PDUSessionResourceSetupRequest{
		AMFUENGAPID: x.AMFUENGAPID.Value, RANUENGAPID: x.RANUENGAPID.Value,
		Items: make([]PDUSessionResourceSetupItemSUReq, len(x.PDUSessionResourceSetupListSUReq.List)),
	}
	for i, it := range x.PDUSessionResourceSetupListSUReq.List {
		var err error
		m.Items[i], err = setupItemFrom("PDU session resource setup list", setupItemIE{
			id: it.PDUSessionID, nas: it.PDUSessionNASPDU, snssai: it.SNSSAI, tr: it.PDUSessionResourceSetupRequestTransfer,
		})
		if err != nil {
			return nil, err
		}
	}
	if x.NASPDU != nil {
		m.NASPDU = x.NASPDU.Value
	}
	if x.UEAggregateMaximumBitRate != nil {
		a, err := ueAMBRFrom(x.UEAggregateMaximumBitRate)
		if err != nil {
			return nil, err
		}
		m.UEAggregateMaxBitRate = a
	}
	return m, nil
}

func (m *PDUSessionResourceSetupResponse) toFree5GC() (f5.Message, error) {
	if err := checkIDs(m.AMFUENGAPID, m.RANUENGAPID); err != nil {
		return nil, err
	}
	out := &f5.PDUSessionResourceSetupResponse{
		AMFUENGAPID: amfID(m.AMFUENGAPID), RANUENGAPID: ranID(m.RANUENGAPID),
		CriticalityDiagnostics: critDiagIE(m.CriticalityDiagnostics),
	}
	if m.Setup != nil {
		l, err := itemsIE("PDU session resource setup list", m.Setup, func(id *ie.PDUSessionID, tr *aper.OctetString) ie.PDUSessionResourceSetupItemSURes {
			return ie.PDUSessionResourceSetupItemSURes{PDUSessionID: id, PDUSessionResourceSetupResponseTransfer: tr}
		})
		if err != nil {
			return nil, err
		}
		out.PDUSessionResourceSetupListSURes = &ie.PDUSessionResourceSetupListSURes{List: l}
	}
	if m.Failed != nil {
		l, err := itemsIE("PDU session resource failed to setup list", m.Failed, func(id *ie.PDUSessionID, tr *aper.OctetString) ie.PDUSessionResourceFailedToSetupItemSURes {
			return ie.PDUSessionResourceFailedToSetupItemSURes{PDUSessionID: id, PDUSessionResourceSetupUnsuccessfulTransfer: tr}
		})
		if err != nil {
			return nil, err
		}
		out.PDUSessionResourceFailedToSetupListSURes = &ie.PDUSessionResourceFailedToSetupListSURes{List: l}
	}
	return out, nil
}

func pduSessionResourceSetupResponseFrom(x *f5.PDUSessionResourceSetupResponse) (Message, error) {
	if err := needIDs(x.AMFUENGAPID, x.RANUENGAPID); err != nil {
		return nil, err
	}
	m := &PDUSessionResourceSetupResponse{
		AMFUENGAPID: x.AMFUENGAPID.Value, RANUENGAPID: x.RANUENGAPID.Value,
		CriticalityDiagnostics: critDiagFrom(x.CriticalityDiagnostics),
	}
	var err error
	if l := x.PDUSessionResourceSetupListSURes; l != nil {
		m.Setup, err = itemsFrom("PDU session resource setup list", l.List, func(it *ie.PDUSessionResourceSetupItemSURes) (*ie.PDUSessionID, *aper.OctetString) {
			return it.PDUSessionID, it.PDUSessionResourceSetupResponseTransfer
		})
		if err != nil {
			return nil, err
		}
	}
	if l := x.PDUSessionResourceFailedToSetupListSURes; l != nil {
		m.Failed, err = itemsFrom("PDU session resource failed to setup list", l.List, func(it *ie.PDUSessionResourceFailedToSetupItemSURes) (*ie.PDUSessionID, *aper.OctetString) {
			return it.PDUSessionID, it.PDUSessionResourceSetupUnsuccessfulTransfer
		})
		if err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *PDUSessionResourceModifyRequest) toFree5GC() (f5.Message, error) {
	if err := checkIDs(m.AMFUENGAPID, m.RANUENGAPID); err != nil {
		return nil, err
	}
	if err := checkListLen("PDU session resource modify list", len(m.Items)); err != nil {
		return nil, err
	}
	l := &ie.PDUSessionResourceModifyListModReq{List: make([]ie.PDUSessionResourceModifyItemModReq, len(m.Items))}
	for i, it := range m.Items {
		tr, err := transferIE(it.ID, it.Transfer)
		if err != nil {
			return nil, fmt.Errorf("PDU session resource modify list: %w", err)
		}
		x := ie.PDUSessionResourceModifyItemModReq{PDUSessionID: &ie.PDUSessionID{Value: int64(it.ID)}, PDUSessionResourceModifyRequestTransfer: tr}
		if it.NASPDU != nil {
			if x.NASPDU, err = nasPDU(it.NASPDU); err != nil {
				return nil, fmt.Errorf("PDU session %d: %w", it.ID, err)
			}
		}
		l.List[i] = x
	}
	return &f5.PDUSessionResourceModifyRequest{
		AMFUENGAPID: amfID(m.AMFUENGAPID), RANUENGAPID: ranID(m.RANUENGAPID), PDUSessionResourceModifyListModReq: l,
	}, nil
}

func pduSessionResourceModifyRequestFrom(x *f5.PDUSessionResourceModifyRequest) (Message, error) {
	if err := needIDs(x.AMFUENGAPID, x.RANUENGAPID); err != nil {
		return nil, err
	}
	if x.PDUSessionResourceModifyListModReq == nil {
		return nil, missing("PDUSessionResourceModifyListModReq", ie.ProtocolIEIDPDUSessionResourceModifyListModReq)
	}
	m := &PDUSessionResourceModifyRequest{
		AMFUENGAPID: x.AMFUENGAPID.Value, RANUENGAPID: x.RANUENGAPID.Value,
		Items: make([]PDUSessionResourceModifyItemModReq, len(x.PDUSessionResourceModifyListModReq.List)),
	}
	for i, it := range x.PDUSessionResourceModifyListModReq.List {
		id, err := sessionIDFrom(it.PDUSessionID)
		if err != nil {
			return nil, fmt.Errorf("PDU session resource modify list: %w", err)
		}
		tr, err := transferFrom(id, it.PDUSessionResourceModifyRequestTransfer)
		if err != nil {
			return nil, fmt.Errorf("PDU session resource modify list: %w", err)
		}
		m.Items[i] = PDUSessionResourceModifyItemModReq{ID: id, Transfer: tr}
		if it.NASPDU != nil {
			m.Items[i].NASPDU = it.NASPDU.Value
		}
	}
	return m, nil
}

func (m *PDUSessionResourceModifyResponse) toFree5GC() (f5.Message, error) {
	if err := checkIDs(m.AMFUENGAPID, m.RANUENGAPID); err != nil {
		return nil, err
	}
	out := &f5.PDUSessionResourceModifyResponse{
		AMFUENGAPID: amfID(m.AMFUENGAPID), RANUENGAPID: ranID(m.RANUENGAPID),
		CriticalityDiagnostics: critDiagIE(m.CriticalityDiagnostics),
	}
	if m.Modified != nil {
		l, err := itemsIE("PDU session resource modify list", m.Modified, func(id *ie.PDUSessionID, tr *aper.OctetString) ie.PDUSessionResourceModifyItemModRes {
			return ie.PDUSessionResourceModifyItemModRes{PDUSessionID: id, PDUSessionResourceModifyResponseTransfer: tr}
		})
		if err != nil {
			return nil, err
		}
		out.PDUSessionResourceModifyListModRes = &ie.PDUSessionResourceModifyListModRes{List: l}
	}
	if m.Failed != nil {
		l, err := itemsIE("PDU session resource failed to modify list", m.Failed, func(id *ie.PDUSessionID, tr *aper.OctetString) ie.PDUSessionResourceFailedToModifyItemModRes {
			return ie.PDUSessionResourceFailedToModifyItemModRes{PDUSessionID: id, PDUSessionResourceModifyUnsuccessfulTransfer: tr}
		})
		if err != nil {
			return nil, err
		}
		out.PDUSessionResourceFailedToModifyListModRes = &ie.PDUSessionResourceFailedToModifyListModRes{List: l}
	}
	return out, nil
}

func pduSessionResourceModifyResponseFrom(x *f5.PDUSessionResourceModifyResponse) (Message, error) {
	if err := needIDs(x.AMFUENGAPID, x.RANUENGAPID); err != nil {
		return nil, err
	}
	m := &PDUSessionResourceModifyResponse{
		AMFUENGAPID: x.AMFUENGAPID.Value, RANUENGAPID: x.RANUENGAPID.Value,
		CriticalityDiagnostics: critDiagFrom(x.CriticalityDiagnostics),
	}
	var err error
	if l := x.PDUSessionResourceModifyListModRes; l != nil {
		m.Modified, err = itemsFrom("PDU session resource modify list", l.List, func(it *ie.PDUSessionResourceModifyItemModRes) (*ie.PDUSessionID, *aper.OctetString) {
			return it.PDUSessionID, it.PDUSessionResourceModifyResponseTransfer
		})
		if err != nil {
			return nil, err
		}
	}
	if l := x.PDUSessionResourceFailedToModifyListModRes; l != nil {
		m.Failed, err = itemsFrom("PDU session resource failed to modify list", l.List, func(it *ie.PDUSessionResourceFailedToModifyItemModRes) (*ie.PDUSessionID, *aper.OctetString) {
			return it.PDUSessionID, it.PDUSessionResourceModifyUnsuccessfulTransfer
		})
		if err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *PDUSessionResourceReleaseCommand) toFree5GC() (f5.Message, error) {
	if err := checkIDs(m.AMFUENGAPID, m.RANUENGAPID); err != nil {
		return nil, err
	}
	l, err := itemsIE("PDU session resource to release list", m.Items, func(id *ie.PDUSessionID, tr *aper.OctetString) ie.PDUSessionResourceToReleaseItemRelCmd {
		return ie.PDUSessionResourceToReleaseItemRelCmd{PDUSessionID: id, PDUSessionResourceReleaseCommandTransfer: tr}
	})
	if err != nil {
		return nil, err
	}
	out := &f5.PDUSessionResourceReleaseCommand{
		AMFUENGAPID: amfID(m.AMFUENGAPID), RANUENGAPID: ranID(m.RANUENGAPID),
		PDUSessionResourceToReleaseListRelCmd: &ie.PDUSessionResourceToReleaseListRelCmd{List: l},
	}
	if m.NASPDU != nil {
		if out.NASPDU, err = nasPDU(m.NASPDU); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func pduSessionResourceReleaseCommandFrom(x *f5.PDUSessionResourceReleaseCommand) (Message, error) {
	if err := needIDs(x.AMFUENGAPID, x.RANUENGAPID); err != nil {
		return nil, err
	}
	if x.PDUSessionResourceToReleaseListRelCmd == nil {
		return nil, missing("PDUSessionResourceToReleaseListRelCmd", ie.ProtocolIEIDPDUSessionResourceToReleaseListRelCmd)
	}
	items, err := itemsFrom("PDU session resource to release list", x.PDUSessionResourceToReleaseListRelCmd.List, func(it *ie.PDUSessionResourceToReleaseItemRelCmd) (*ie.PDUSessionID, *aper.OctetString) {
		return it.PDUSessionID, it.PDUSessionResourceReleaseCommandTransfer
	})
	if err != nil {
		return nil, err
	}
	m := &PDUSessionResourceReleaseCommand{AMFUENGAPID: x.AMFUENGAPID.Value, RANUENGAPID: x.RANUENGAPID.Value, Items: items}
	if x.NASPDU != nil {
		m.NASPDU = x.NASPDU.Value
	}
	return m, nil
}

func (m *PDUSessionResourceReleaseResponse) toFree5GC() (f5.Message, error) {
	if err := checkIDs(m.AMFUENGAPID, m.RANUENGAPID); err != nil {
		return nil, err
	}
	l, err := itemsIE("PDU session resource released list", m.Released, func(id *ie.PDUSessionID, tr *aper.OctetString) ie.PDUSessionResourceReleasedItemRelRes {
		return ie.PDUSessionResourceReleasedItemRelRes{PDUSessionID: id, PDUSessionResourceReleaseResponseTransfer: tr}
	})
	if err != nil {
		return nil, err
	}
	return &f5.PDUSessionResourceReleaseResponse{
		AMFUENGAPID: amfID(m.AMFUENGAPID), RANUENGAPID: ranID(m.RANUENGAPID),
		PDUSessionResourceReleasedListRelRes: &ie.PDUSessionResourceReleasedListRelRes{List: l},
		CriticalityDiagnostics:               critDiagIE(m.CriticalityDiagnostics),
	}, nil
}

func pduSessionResourceReleaseResponseFrom(x *f5.PDUSessionResourceReleaseResponse) (Message, error) {
	if err := needIDs(x.AMFUENGAPID, x.RANUENGAPID); err != nil {
		return nil, err
	}
	if x.PDUSessionResourceReleasedListRelRes == nil {
		return nil, missing("PDUSessionResourceReleasedListRelRes", ie.ProtocolIEIDPDUSessionResourceReleasedListRelRes)
	}
	items, err := itemsFrom("PDU session resource released list", x.PDUSessionResourceReleasedListRelRes.List, func(it *ie.PDUSessionResourceReleasedItemRelRes) (*ie.PDUSessionID, *aper.OctetString) {
		return it.PDUSessionID, it.PDUSessionResourceReleaseResponseTransfer
	})
	if err != nil {
		return nil, err
	}
	return &PDUSessionResourceReleaseResponse{
		AMFUENGAPID: x.AMFUENGAPID.Value, RANUENGAPID: x.RANUENGAPID.Value, Released: items,
		CriticalityDiagnostics: critDiagFrom(x.CriticalityDiagnostics),
	}, nil
}

// icsSetupListIE builds the PDU Session Resource Setup List Cxt Req of an
// Initial Context Setup Request (TS 38.413 §9.2.2.1).
func icsSetupListIE(l []PDUSessionResourceSetupItemSUReq) (*ie.PDUSessionResourceSetupListCxtReq, error) {
	items, err := setupItemsIE("PDU session resource setup list", l)
	if err != nil {
		return nil, err
	}
	out := &ie.PDUSessionResourceSetupListCxtReq{List: make([]ie.PDUSessionResourceSetupItemCxtReq, len(items))}
	for i, x := range items {
		out.List[i] = ie.PDUSessionResourceSetupItemCxtReq{PDUSessionID: x.id, NASPDU: x.nas, SNSSAI: x.snssai, PDUSessionResourceSetupRequestTransfer: x.tr}
	}
	return out, nil
}

func icsSetupListFrom(x *ie.PDUSessionResourceSetupListCxtReq) ([]PDUSessionResourceSetupItemSUReq, error) {
	out := make([]PDUSessionResourceSetupItemSUReq, len(x.List))
	for i, it := range x.List {
		var err error
		out[i], err = setupItemFrom("PDU session resource setup list", setupItemIE{
			id: it.PDUSessionID, nas: it.NASPDU, snssai: it.SNSSAI, tr: it.PDUSessionResourceSetupRequestTransfer,
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (m *InitialContextSetupResponse) toFree5GC() (f5.Message, error) {
	if err := checkIDs(m.AMFUENGAPID, m.RANUENGAPID); err != nil {
		return nil, err
	}
	out := &f5.InitialContextSetupResponse{
		AMFUENGAPID: amfID(m.AMFUENGAPID), RANUENGAPID: ranID(m.RANUENGAPID),
		CriticalityDiagnostics: critDiagIE(m.CriticalityDiagnostics),
	}
	if m.PDUSessionResourceSetupItems != nil {
		l, err := itemsIE("PDU session resource setup list", m.PDUSessionResourceSetupItems, func(id *ie.PDUSessionID, tr *aper.OctetString) ie.PDUSessionResourceSetupItemCxtRes {
			return ie.PDUSessionResourceSetupItemCxtRes{PDUSessionID: id, PDUSessionResourceSetupResponseTransfer: tr}
		})
		if err != nil {
			return nil, err
		}
		out.PDUSessionResourceSetupListCxtRes = &ie.PDUSessionResourceSetupListCxtRes{List: l}
	}
	if m.PDUSessionResourceFailedItems != nil {
		l, err := itemsIE("PDU session resource failed to setup list", m.PDUSessionResourceFailedItems, func(id *ie.PDUSessionID, tr *aper.OctetString) ie.PDUSessionResourceFailedToSetupItemCxtRes {
			return ie.PDUSessionResourceFailedToSetupItemCxtRes{PDUSessionID: id, PDUSessionResourceSetupUnsuccessfulTransfer: tr}
		})
		if err != nil {
			return nil, err
		}
		out.PDUSessionResourceFailedToSetupListCxtRes = &ie.PDUSessionResourceFailedToSetupListCxtRes{List: l}
	}
	return out, nil
}

func initialContextSetupResponseFrom(x *f5.InitialContextSetupResponse) (Message, error) {
	if err := needIDs(x.AMFUENGAPID, x.RANUENGAPID); err != nil {
		return nil, err
	}
	m := &InitialContextSetupResponse{
		AMFUENGAPID: x.AMFUENGAPID.Value, RANUENGAPID: x.RANUENGAPID.Value,
		CriticalityDiagnostics: critDiagFrom(x.CriticalityDiagnostics),
	}
	var err error
	if l := x.PDUSessionResourceSetupListCxtRes; l != nil {
		m.PDUSessionResourceSetupItems, err = itemsFrom("PDU session resource setup list", l.List, func(it *ie.PDUSessionResourceSetupItemCxtRes) (*ie.PDUSessionID, *aper.OctetString) {
			return it.PDUSessionID, it.PDUSessionResourceSetupResponseTransfer
		})
		if err != nil {
			return nil, err
		}
	}
	if l := x.PDUSessionResourceFailedToSetupListCxtRes; l != nil {
		m.PDUSessionResourceFailedItems, err = itemsFrom("PDU session resource failed to setup list", l.List, func(it *ie.PDUSessionResourceFailedToSetupItemCxtRes) (*ie.PDUSessionID, *aper.OctetString) {
			return it.PDUSessionID, it.PDUSessionResourceSetupUnsuccessfulTransfer
		})
		if err != nil {
			return nil, err
		}
	}
	return m, nil
}

func releasedSessionsIE(ids []uint8) (*ie.PDUSessionResourceListCxtRelCpl, error) {
	if err := checkListLen("PDU session resource list", len(ids)); err != nil {
		return nil, err
	}
	l := &ie.PDUSessionResourceListCxtRelCpl{List: make([]ie.PDUSessionResourceItemCxtRelCpl, len(ids))}
	for i, id := range ids {
		l.List[i].PDUSessionID = &ie.PDUSessionID{Value: int64(id)}
	}
	return l, nil
}

func releasedSessionsFrom(x *ie.PDUSessionResourceListCxtRelCpl) ([]uint8, error) {
	out := make([]uint8, len(x.List))
	for i, it := range x.List {
		id, err := sessionIDFrom(it.PDUSessionID)
		if err != nil {
			return nil, fmt.Errorf("PDU session resource list: %w", err)
		}
		out[i] = id
	}
	return out, nil
}
