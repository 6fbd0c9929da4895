package upfc

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/tern5g/tern/pfcp"
	"github.com/tern5g/tern/upf/rules"
)

// IE types used as Offending IE that package pfcp has no constant for
// (TS 29.244 §8.1.2 Table 8.1.2-1).
const (
	ieNetworkInstance     uint16 = 22
	ieSDFFilter           uint16 = 23
	ieVolumeThreshold     uint16 = 31
	ieVolumeQuota         uint16 = 73
	ieMeasurementPeriod   uint16 = 64
	ieOuterHeaderCreation uint16 = 84
	ieUEIPAddress         uint16 = 93
	ieOuterHeaderRemoval  uint16 = 95
	ieQFI                 uint16 = 124
)

// gtpuPort is the GTP-U UDP port (TS 29.281 §4.4.2.3).
const gtpuPort = 2152

// txn applies one establishment or modification to a working session. It
// touches nothing outside the session except for reading the UPF-wide TEID
// table: TEIDs it allocates stay pending until commit.
type txn struct {
	c         *UPFC
	s         *session
	now       time.Time
	pending   map[uint32]struct{} // TEIDs allocated by this message
	chooseIDs map[uint8]uint32    // CHOOSE ID -> TEID, within this message (§5.5.3)
	created   []pfcp.CreatedPDR
	// endMarkers are the FARs this message updated with SNDEM (§8.2.31):
	// an instruction for this change only, not kept in the FAR.
	endMarkers map[uint32]bool
	// onCommit changes reporting state shared with the current session
	// (urrTrack): run once the modification is valid and committed.
	onCommit []func()
}

func (c *UPFC) newTxn(s *session) *txn {
	return &txn{c: c, s: s, now: time.Now()}
}

func (tx *txn) createAll(fars []pfcp.CreateFAR, qers []pfcp.CreateQER, urrs []pfcp.CreateURR, bar *pfcp.CreateBAR, pdrs []pfcp.CreatePDR) *reject {
	for i := range fars {
		if rej := tx.createFAR(&fars[i]); rej != nil {
			return rej
		}
	}
	for i := range qers {
		if rej := tx.createQER(&qers[i]); rej != nil {
			return rej
		}
	}
	for i := range urrs {
		if rej := tx.createURR(&urrs[i]); rej != nil {
			return rej
		}
	}
	if bar != nil {
		// A session has at most one BAR (§7.5.2.6).
		if tx.s.bar != nil {
			return ruleFailure(pfcp.RuleTypeBAR, uint32(bar.ID), "session already has BAR %d", tx.s.bar.ID)
		}
		b := *bar
		tx.s.bar = &b
	}
	for i := range pdrs {
		if rej := tx.createPDR(&pdrs[i]); rej != nil {
			return rej
		}
	}
	return nil
}

// --- PDR (§7.5.2.2, §7.5.4.2) ---

func (tx *txn) createPDR(p *pfcp.CreatePDR) *reject {
	if tx.s.pdrs[p.ID] != nil {
		return ruleFailure(pfcp.RuleTypePDR, uint32(p.ID), "duplicate PDR ID")
	}
	// The FAR ID is conditional on Activate Predefined Rules, which tern
	// does not support, so it is always needed (§7.5.2.2-1). FAR ID 0 is
	// a FAR ID like any other (§8.2.74).
	if p.NoFARID {
		return missingIE(pfcp.CauseConditionalIEMissing, pfcp.IEFARID, "PDR %d has no FAR ID", p.ID)
	}
	st := &pdrState{spec: clonePDR(p)}
	if rej := tx.setPDI(st, &st.spec.PDI, 0); rej != nil {
		return rej
	}
	if rej := checkOuterHeaderRemoval(p.ID, p.OuterHeaderRemoval); rej != nil {
		return rej
	}
	tx.s.pdrs[p.ID] = st
	return nil
}

func (tx *txn) updatePDR(u *pfcp.UpdatePDR) *reject {
	old := tx.s.pdrs[u.ID]
	if old == nil {
		return ruleFailure(pfcp.RuleTypePDR, uint32(u.ID), "update unknown PDR")
	}
	st := &pdrState{spec: old.spec, teid: old.teid, filters: old.filters}
	if u.Precedence != nil {
		st.spec.Precedence = *u.Precedence
	}
	if u.PDI != nil {
		st.spec.PDI = clonePDI(u.PDI)
		if rej := tx.setPDI(st, &st.spec.PDI, old.teid); rej != nil {
			return rej
		}
	}
	if u.OuterHeaderRemoval != nil {
		if rej := checkOuterHeaderRemoval(u.ID, u.OuterHeaderRemoval); rej != nil {
			return rej
		}
		st.spec.OuterHeaderRemoval = clonePtr(u.OuterHeaderRemoval)
	}
	if u.FARID != nil {
		st.spec.FARID = *u.FARID
	}
	// A QER/URR ID list replaces the PDR's list (nil: unchanged).
	if u.QERIDs != nil {
		st.spec.QERIDs = slices.Clone(u.QERIDs)
	}
	if u.URRIDs != nil {
		st.spec.URRIDs = slices.Clone(u.URRIDs)
	}
	tx.s.pdrs[u.ID] = st
	return nil
}

// setPDI validates a PDI, parses its SDF filters and resolves its local
// F-TEID into st. prevTEID is the PDR's TEID before an update (0: none).
func (tx *txn) setPDI(st *pdrState, pdi *pfcp.PDI, prevTEID uint32) *reject {
	if rej := checkPDI(st, pdi); rej != nil {
		return rej
	}
	teid, rej := tx.localTEID(st.spec.ID, pdi.FTEID, prevTEID)
	if rej != nil {
		return rej
	}
	st.teid = teid
	return nil
}

// checkPDI validates a PDI and parses its SDF filters into st.
func checkPDI(st *pdrState, pdi *pfcp.PDI) *reject {
	id := st.spec.ID
	if pdi.SourceInterface > pfcp.InterfaceCPFunction {
		return missingIE(pfcp.CauseMandatoryIEIncorrect, pfcp.IESourceInterface, "PDR %d: source interface %d", id, pdi.SourceInterface)
	}
	for _, q := range pdi.QFIs {
		if q > 63 {
			return missingIE(pfcp.CauseMandatoryIEIncorrect, ieQFI, "PDR %d: QFI %d", id, q)
		}
	}
	if pdi.UEIP != nil && !pdi.UEIP.IPv4.Is4() {
		return missingIE(pfcp.CauseMandatoryIEIncorrect, ieUEIPAddress, "PDR %d: UE IP address %v", id, pdi.UEIP.IPv4)
	}
	st.filters = make([]*FlowDescription, 0, len(pdi.SDFFilters))
	for _, f := range pdi.SDFFilters {
		fd, err := ParseFlowDescription(f.FlowDescription)
		if err != nil {
			rej := ruleFailure(pfcp.RuleTypePDR, uint32(id), "SDF filter: %v", err)
			rej.offendingIE = ieSDFFilter
			return rej
		}
		st.filters = append(st.filters, fd)
	}
	return nil
}

// localTEID resolves a PDI's Local F-TEID (§5.5.3). With CHOOSE the UPF
// allocates a TEID on its N3 address, the same one for PDRs of this message
// with the same CHOOSE ID; an update that asks to CHOOSE again keeps the
// PDR's TEID, since the modification response has no Updated PDR IE in our
// codec to announce a new one. A TEID set by the CP must not belong to
// another session.
//
// Departure from TS 29.244 §5.5.1 (Rel-17): a UP function that advertises
// FTUP, as this one does with an N3 address, "shall reject" a new PDR
// with an F-TEID the CP function chose ("Invalid F-TEID allocation
// option"), except for a session re-established in a restoration. This
// one accepts it whether or not the request carries RESTI, and holds the
// TEID like one it allocated (CHOOSE never hands it out while the session
// lives): SMF simulators that choose uplink TEIDs themselves (pfcpsim,
// point 10 of issue 37) and tern bench upf, which builds its frames for
// TEIDs it chose, would otherwise create no session here. An SMF that
// asks the UPF to CHOOSE, as tern's does, gets the spec's behaviour.
func (tx *txn) localTEID(pdrID uint16, f *pfcp.FTEID, prevTEID uint32) (uint32, *reject) {
	if f == nil {
		return 0, nil
	}
	c := tx.c
	if !f.Choose {
		if f.TEID == 0 || !f.IPv4.Is4() {
			return 0, missingIE(pfcp.CauseMandatoryIEIncorrect, pfcp.IEFTEID, "PDR %d: F-TEID %#x %v", pdrID, f.TEID, f.IPv4)
		}
		if c.cfg.N3Addr.IsValid() && f.IPv4 != c.cfg.N3Addr {
			return 0, ruleFailure(pfcp.RuleTypePDR, uint32(pdrID), "F-TEID address %v is not N3 %v", f.IPv4, c.cfg.N3Addr)
		}
		if owner, used := c.teids[f.TEID]; used && owner != tx.s.seid {
			return 0, ruleFailure(pfcp.RuleTypePDR, uint32(pdrID), "TEID %#x belongs to another session", f.TEID)
		}
		if _, mine := tx.pending[f.TEID]; mine {
			return 0, ruleFailure(pfcp.RuleTypePDR, uint32(pdrID), "TEID %#x was just allocated by CHOOSE", f.TEID)
		}
		return f.TEID, nil
	}
	if !c.cfg.N3Addr.Is4() {
		return 0, missingIE(pfcp.CauseInvalidFTEIDAllocationOption, pfcp.IEFTEID, "PDR %d: CHOOSE without an N3 address", pdrID)
	}
	if f.ChooseID != 0 {
		if teid, ok := tx.chooseIDs[f.ChooseID]; ok {
			tx.announce(pdrID, teid)
			return teid, nil
		}
	}
	teid := prevTEID
	if teid == 0 {
		var ok bool
		if teid, ok = tx.allocTEID(); !ok {
			return 0, &reject{cause: pfcp.CauseNoResourcesAvailable, detail: "no free TEID"}
		}
	}
	if f.ChooseID != 0 {
		if tx.chooseIDs == nil {
			tx.chooseIDs = make(map[uint8]uint32)
		}
		tx.chooseIDs[f.ChooseID] = teid
	}
	tx.announce(pdrID, teid)
	return teid, nil
}

// announce adds a Created PDR with the UPF-allocated F-TEID (§7.5.3.2).
func (tx *txn) announce(pdrID uint16, teid uint32) {
	tx.created = slices.DeleteFunc(tx.created, func(p pfcp.CreatedPDR) bool { return p.ID == pdrID })
	tx.created = append(tx.created, pfcp.CreatedPDR{ID: pdrID, LocalFTEID: &pfcp.FTEID{TEID: teid, IPv4: tx.c.cfg.N3Addr}})
}

// allocTEID finds a TEID free UPF-wide. TEIDs count up and wrap (skipping
// 0, which GTP-U reserves for signalling), so a freed TEID is not reused
// soon and stale G-PDUs for it do not reach a new session. While a place
// (Config.TEIDPlaces) is free, the TEID is one at a free place: sessions
// that outlive a wrap of the places do not make new ones share theirs.
func (tx *txn) allocTEID() (uint32, bool) {
	c := tx.c
	if n := c.cfg.TEIDPlaces; n > 1 && len(c.places)+len(tx.pending) < int(n) {
		// n+1 TEIDs in a row cover every place, but for 0's.
		for range n + 1 {
			teid := c.nextTEID
			c.nextTEID++
			if teid != 0 && !tx.placeTaken(teid) {
				return tx.reserve(teid), true
			}
		}
	}
	for range len(c.teids) + len(tx.pending) + 2 {
		teid := c.nextTEID
		c.nextTEID++
		if teid == 0 {
			continue
		}
		if _, used := c.teids[teid]; used {
			continue
		}
		if _, used := tx.pending[teid]; used {
			continue
		}
		return tx.reserve(teid), true
	}
	return 0, false
}

// placeTaken says whether a live or pending TEID has teid's place (a
// TEID at a free place is itself free).
func (tx *txn) placeTaken(teid uint32) bool {
	p := tx.c.place(teid)
	if tx.c.places[p] > 0 {
		return true
	}
	for t := range tx.pending {
		if tx.c.place(t) == p {
			return true
		}
	}
	return false
}

func (tx *txn) reserve(teid uint32) uint32 {
	if tx.pending == nil {
		tx.pending = make(map[uint32]struct{})
	}
	tx.pending[teid] = struct{}{}
	return teid
}

func checkOuterHeaderRemoval(pdrID uint16, ohr *uint8) *reject {
	if ohr == nil {
		return nil
	}
	switch *ohr {
	case pfcp.OuterHeaderRemovalGTPUUDPIPv4, pfcp.OuterHeaderRemovalGTPUUDPIP:
		return nil
	}
	return ruleFailure(pfcp.RuleTypePDR, uint32(pdrID), "outer header removal %d not supported", *ohr)
}

// --- FAR (§7.5.2.3, §7.5.4.3) ---

// Rule IDs have no reserved value (§8.2.36, §8.2.54, §8.2.74, §8.2.75):
// 0 is an ID like any other, and the decoder, not a zero, tells that a
// mandatory one is missing.

func (tx *txn) createFAR(f *pfcp.CreateFAR) *reject {
	if tx.s.fars[f.ID] != nil {
		return ruleFailure(pfcp.RuleTypeFAR, f.ID, "duplicate FAR ID")
	}
	spec := cloneFAR(f)
	if rej := tx.checkFAR(&spec, pfcp.IEForwardingParameters); rej != nil {
		return rej
	}
	tx.s.fars[f.ID] = &farState{spec: spec}
	return nil
}

func (tx *txn) updateFAR(u *pfcp.UpdateFAR) *reject {
	old := tx.s.fars[u.ID]
	if old == nil {
		return ruleFailure(pfcp.RuleTypeFAR, u.ID, "update unknown FAR")
	}
	spec := old.spec
	if u.ApplyAction != nil {
		spec.ApplyAction = *u.ApplyAction
	}
	if uf := u.Forwarding; uf != nil {
		// Update Forwarding Parameters (§7.5.4.3-2) carry only what
		// changes; the rest of the FAR's Forwarding Parameters stays.
		var fw pfcp.ForwardingParameters
		switch {
		case spec.Forwarding != nil:
			fw = *spec.Forwarding
		case uf.NoDestination:
			// Nothing to keep: the Destination Interface, mandatory in
			// Forwarding Parameters (§7.5.2.3-2), must come now.
			return missingIE(pfcp.CauseConditionalIEMissing, pfcp.IEDestinationInterface,
				"FAR %d: first forwarding parameters without a destination interface", u.ID)
		}
		if !uf.NoDestination {
			fw.Destination = uf.Destination
		}
		if uf.NetworkInstance != "" {
			fw.NetworkInstance = uf.NetworkInstance
		}
		if uf.OuterHeaderCreation != nil {
			fw.OuterHeaderCreation = clonePtr(uf.OuterHeaderCreation)
		}
		spec.Forwarding = &fw
		if uf.SendEndMarker {
			// TS 23.502 §4.9.1.2.2 step 6 / §4.9.1.3.3 step 4: the SMF
			// switches the downlink tunnel and asks for End Markers on
			// the old one; UPF-U sends them if the tunnel changed.
			if tx.endMarkers == nil {
				tx.endMarkers = make(map[uint32]bool)
			}
			tx.endMarkers[u.ID] = true
		}
	}
	if u.BARID != nil {
		spec.BARID = clonePtr(u.BARID)
	}
	if rej := tx.checkFAR(&spec, pfcp.IEUpdateFAR); rej != nil {
		return rej
	}
	tx.s.fars[u.ID] = &farState{spec: spec}
	return nil
}

// gtpuTunnel reports whether o describes a tunnel UPF-U can send to:
// GTP-U/UDP/IPv4 (§8.2.56) to a real IPv4 address.
func gtpuTunnel(o *pfcp.OuterHeaderCreation) bool {
	return o.Description == pfcp.OuterHeaderCreationGTPUUDPIPv4 && o.IPv4.Is4() && !o.IPv4.IsUnspecified()
}

// validActions are the Apply Action flags tern executes.
const validActions = pfcp.ActionDrop | pfcp.ActionForward | pfcp.ActionBuffer | pfcp.ActionNotifyCP | pfcp.ActionDuplicate

// checkFAR validates a FAR as it will be after the change. fwIE is the
// Offending IE for missing forwarding parameters.
func (tx *txn) checkFAR(f *pfcp.CreateFAR, fwIE uint16) *reject {
	a := f.ApplyAction
	// §8.2.26: exactly one of DROP, FORW, BUFF; NOCP only with BUFF.
	n := 0
	for _, bit := range []pfcp.ApplyAction{pfcp.ActionDrop, pfcp.ActionForward, pfcp.ActionBuffer} {
		if a&bit != 0 {
			n++
		}
	}
	if n != 1 || a&^validActions != 0 || (a&pfcp.ActionNotifyCP != 0 && a&pfcp.ActionBuffer == 0) {
		return missingIE(pfcp.CauseMandatoryIEIncorrect, pfcp.IEApplyAction, "FAR %d: apply action %#x", f.ID, a)
	}
	if a&pfcp.ActionDuplicate != 0 {
		// Duplicating Parameters are not in tern's codec and UPF-U does not
		// duplicate: refuse rather than silently not do it.
		return ruleFailure(pfcp.RuleTypeFAR, f.ID, "duplication not supported")
	}
	fw := f.Forwarding
	if a&pfcp.ActionForward == 0 {
		// §7.5.2.3-1: Forwarding Parameters are conditional on FORW. On a
		// FAR that drops or buffers they do nothing, so whatever they hold
		// (a zeroed Outer Header Creation, say) is no reason to fail the
		// session; they are checked when an update makes the FAR forward.
		if fw != nil {
			tx.c.log.Debug("PFCP forwarding parameters of a FAR that does not forward ignored", "far", f.ID, "action", a)
		}
		return nil
	}
	if fw == nil {
		return missingIE(pfcp.CauseConditionalIEMissing, fwIE, "FAR %d forwards without forwarding parameters", f.ID)
	}
	if fw.Destination > pfcp.InterfaceCPFunction {
		return missingIE(pfcp.CauseMandatoryIEIncorrect, pfcp.IEDestinationInterface, "FAR %d: destination %d", f.ID, fw.Destination)
	}
	if ohc := fw.OuterHeaderCreation; ohc != nil {
		if ohc.Description != pfcp.OuterHeaderCreationGTPUUDPIPv4 {
			return ruleFailure(pfcp.RuleTypeFAR, f.ID, "outer header creation %#x not supported", ohc.Description)
		}
		if !ohc.IPv4.Is4() || ohc.IPv4.IsUnspecified() {
			return missingIE(pfcp.CauseMandatoryIEIncorrect, ieOuterHeaderCreation, "FAR %d: outer header address %v", f.ID, ohc.IPv4)
		}
		return nil
	}
	if fw.Destination == pfcp.InterfaceAccess {
		// §7.5.2.3-2: Outer Header Creation is there when the UP function
		// must add an outer header, which every packet to the 5G-AN needs
		// (GTP-U on N3). Without it UPF-U would send the packets out N6.
		return missingIE(pfcp.CauseConditionalIEMissing, ieOuterHeaderCreation, "FAR %d forwards to access without outer header creation", f.ID)
	}
	if fw.Destination != pfcp.InterfaceCore && fw.Destination != pfcp.InterfaceSGiLAN {
		return nil
	}
	// Decapsulated to the core: UPF-U sends it out the N6 of the FAR's
	// Network Instance (§5.2.1: it selects the DN). Accepting a FAR whose
	// packets UPF-U would drop for want of one is a silent failure; the
	// spec's answer is Rule creation/modification Failure (§7.5.3.1).
	// A FAR without one, where there are several, gets one from the
	// session's UE address once all its rules are known (resolveNetworks).
	nets := tx.c.cfg.NetworkInstances
	if len(nets) > 0 && fw.NetworkInstance != "" && !slices.Contains(nets, fw.NetworkInstance) {
		rej := ruleFailure(pfcp.RuleTypeFAR, f.ID, "no N6 for network instance %q", fw.NetworkInstance)
		rej.offendingIE = ieNetworkInstance
		return rej
	}
	return nil
}

// needsNetwork reports whether f sends decapsulated packets out an N6
// without naming which, where the UPF has several.
func (tx *txn) needsNetwork(f *pfcp.CreateFAR) bool {
	fw := f.Forwarding
	return len(tx.c.cfg.NetworkInstances) > 1 && f.ApplyAction&pfcp.ActionForward != 0 && fw != nil &&
		fw.NetworkInstance == "" && fw.OuterHeaderCreation == nil &&
		(fw.Destination == pfcp.InterfaceCore || fw.Destination == pfcp.InterfaceSGiLAN)
}

// resolveNetworks names the N6 of every FAR that forwards to the core
// without a Network Instance while the UPF has several: the network whose
// pool (Config.NetworkPools) holds the UE address of the PDRs that use
// the FAR or, when those carry none (an uplink PDR matched by its tunnel
// alone), of the session's other PDRs. The Network Instance of Forwarding
// Parameters is optional (TS 29.244 §7.5.2.3-2, NOTE 1: needed where the
// UPF serves several networks); where the UE address does not decide (no
// address, in no pool, in several, or addresses in different pools) the
// FAR cannot be created: Rule creation/modification failure (§7.5.3.1)
// with the FAR as failed rule and the Network Instance as offending IE.
func (tx *txn) resolveNetworks() *reject {
	s := tx.s
	for _, id := range sortedKeys(s.fars) {
		f := s.fars[id]
		if !tx.needsNetwork(&f.spec) {
			continue
		}
		ni, why := tx.networkOf(id)
		if ni == "" {
			rej := ruleFailure(pfcp.RuleTypeFAR, id, "no network instance, and %d N6 networks to choose from: %s",
				len(tx.c.cfg.NetworkInstances), why)
			rej.offendingIE = ieNetworkInstance
			return rej
		}
		// farStates are shared with the committed session: a new one.
		spec := f.spec
		fw := *spec.Forwarding
		fw.NetworkInstance = ni
		spec.Forwarding = &fw
		s.fars[id] = &farState{spec: spec}
	}
	return nil
}

// networkOf is the N6 network of FAR far by the session's UE addresses,
// or "" and why there is none.
func (tx *txn) networkOf(far uint32) (string, string) {
	var addrs []netip.Addr
	ueAddrs := func(useFAR bool) {
		for _, id := range sortedKeys(tx.s.pdrs) {
			p := &tx.s.pdrs[id].spec
			if (!useFAR || p.FARID == far) && p.PDI.UEIP != nil && p.PDI.UEIP.IPv4.IsValid() {
				addrs = append(addrs, p.PDI.UEIP.IPv4)
			}
		}
	}
	ueAddrs(true)
	if len(addrs) == 0 {
		ueAddrs(false)
	}
	if len(addrs) == 0 {
		return "", "no UE IP address in the session to choose by"
	}
	found := ""
	for _, a := range addrs {
		var in []string
		for _, n := range tx.c.cfg.NetworkInstances {
			if p, ok := tx.c.cfg.NetworkPools[n]; ok && p.Contains(a) {
				in = append(in, n)
			}
		}
		switch {
		case len(in) == 0:
			return "", fmt.Sprintf("UE address %v is in no N6 pool", a)
		case len(in) > 1:
			return "", fmt.Sprintf("UE address %v is in the pools of %v", a, in)
		case found != "" && found != in[0]:
			return "", fmt.Sprintf("UE addresses in the pools of %s and %s", found, in[0])
		}
		found = in[0]
	}
	return found, ""
}

// --- QER (§7.5.2.5, §7.5.4.5) ---

func (tx *txn) createQER(q *pfcp.CreateQER) *reject {
	if tx.s.qers[q.ID] != nil {
		return ruleFailure(pfcp.RuleTypeQER, q.ID, "duplicate QER ID")
	}
	if q.QFI > 63 {
		return missingIE(pfcp.CauseMandatoryIEIncorrect, ieQFI, "QER %d: QFI %d", q.ID, q.QFI)
	}
	st := &qerState{spec: cloneQER(q)}
	st.mbrUL, st.mbrDL = tx.buckets(st.spec.MBR, nil, nil)
	tx.s.qers[q.ID] = st
	return nil
}

func (tx *txn) updateQER(u *pfcp.UpdateQER) *reject {
	old := tx.s.qers[u.ID]
	if old == nil {
		return ruleFailure(pfcp.RuleTypeQER, u.ID, "update unknown QER")
	}
	st := &qerState{spec: old.spec, mbrUL: old.mbrUL, mbrDL: old.mbrDL}
	if u.Gate != nil {
		st.spec.Gate = *u.Gate
	}
	if u.QFI != nil {
		if *u.QFI > 63 {
			return missingIE(pfcp.CauseMandatoryIEIncorrect, ieQFI, "QER %d: QFI %d", u.ID, *u.QFI)
		}
		st.spec.QFI = *u.QFI
	}
	if u.GBR != nil {
		st.spec.GBR = clonePtr(u.GBR)
	}
	if u.MBR != nil {
		m := *u.MBR
		st.spec.MBR = &m
		st.mbrUL, st.mbrDL = tx.buckets(&m, old.mbrUL, old.mbrDL)
	}
	tx.s.qers[u.ID] = st
	return nil
}

// buckets returns the MBR token buckets, reusing the old ones whose rate
// is unchanged so that their state carries over. A rate of 0 kbit/s means
// no limit (the gate, not the MBR, closes a flow).
func (tx *txn) buckets(mbr *pfcp.BitRate, oldUL, oldDL *rules.TokenBucket) (ul, dl *rules.TokenBucket) {
	if mbr == nil {
		return nil, nil
	}
	return bucket(mbr.UL, oldUL), bucket(mbr.DL, oldDL)
}

func bucket(kbps uint64, old *rules.TokenBucket) *rules.TokenBucket {
	if kbps == 0 {
		return nil
	}
	rate := kbps * 1000 / 8 // kbit/s on the wire (§8.2.8) -> bytes/s
	if old != nil && old.Rate() == rate {
		return old
	}
	// Burst: 100 ms at the rate, at least a few full-size packets, so that
	// a low MBR still passes whole packets.
	return rules.NewTokenBucket(rate, max(rate/10, 3*1500))
}

// --- URR (§7.5.2.4, §7.5.4.4) ---

func (tx *txn) createURR(u *pfcp.CreateURR) *reject {
	if tx.s.urrs[u.ID] != nil {
		return ruleFailure(pfcp.RuleTypeURR, u.ID, "duplicate URR ID")
	}
	spec := cloneURR(u)
	if rej := tx.checkURR(&spec); rej != nil {
		return rej
	}
	tx.s.urrs[u.ID] = &urrState{spec: spec, counters: &rules.Counters{}, track: &urrTrack{start: tx.now}}
	return nil
}

func (tx *txn) updateURR(u *pfcp.UpdateURR) *reject {
	old := tx.s.urrs[u.ID]
	if old == nil {
		return ruleFailure(pfcp.RuleTypeURR, u.ID, "update unknown URR")
	}
	spec := old.spec
	if u.Method != nil {
		spec.Method = *u.Method
	}
	if u.Triggers != nil {
		spec.Triggers = *u.Triggers
	}
	if u.VolumeThreshold != nil {
		spec.VolumeThreshold = clonePtr(u.VolumeThreshold)
	}
	newQuota := u.VolumeQuota != nil
	if newQuota {
		spec.VolumeQuota = clonePtr(u.VolumeQuota)
	}
	if u.MeasurementPeriod != nil {
		spec.MeasurementPeriod = *u.MeasurementPeriod
	}
	if rej := tx.checkURR(&spec); rej != nil {
		return rej
	}
	tx.s.urrs[u.ID] = &urrState{spec: spec, counters: old.counters, track: old.track}
	if newQuota {
		// §5.2.2.2.1: a new quota counts from now. The track is shared
		// with the current session state, so this is applied only once
		// the whole modification is valid (tx.commits).
		tx.onCommit = append(tx.onCommit, func() {
			t := old.track
			t.quotaSpent = false
			t.base = old.counters.Load()
			t.start = tx.now
		})
	}
	return nil
}

func (tx *txn) checkURR(u *pfcp.CreateURR) *reject {
	if u.Method == 0 || u.Method&^(pfcp.MethodDuration|pfcp.MethodVolume|pfcp.MethodEvent) != 0 {
		return missingIE(pfcp.CauseMandatoryIEIncorrect, pfcp.IEMeasurementMethod, "URR %d: measurement method %#x", u.ID, u.Method)
	}
	// §7.5.2.4: Volume Threshold is present when VOLTH is set, Volume
	// Quota when VOLQU is, Measurement Period when PERIO is.
	if u.Triggers&pfcp.TriggerVolumeThreshold != 0 && u.VolumeThreshold == nil {
		return missingIE(pfcp.CauseConditionalIEMissing, ieVolumeThreshold, "URR %d: VOLTH without volume threshold", u.ID)
	}
	if u.Triggers&pfcp.TriggerVolumeQuota != 0 && u.VolumeQuota == nil {
		return missingIE(pfcp.CauseConditionalIEMissing, ieVolumeQuota, "URR %d: VOLQU without volume quota", u.ID)
	}
	if u.Triggers&pfcp.TriggerPeriodic != 0 && u.MeasurementPeriod <= 0 {
		return missingIE(pfcp.CauseConditionalIEMissing, ieMeasurementPeriod, "URR %d: PERIO without measurement period", u.ID)
	}
	// UPF-U reports volume thresholds, volume quotas and periods (and,
	// on request, usage at Query URR, removal and deletion), nothing
	// else. A URR asking for another report (a time quota, start of
	// traffic...) would be accepted and never honoured, so it fails as a
	// rule the UP function cannot create (§7.5.3.1: Rule
	// creation/modification Failure with the Failed Rule ID), naming the
	// IE it cannot honour.
	if other := u.Triggers &^ supportedTriggers; other != 0 {
		rej := ruleFailure(pfcp.RuleTypeURR, u.ID, "reporting triggers %#x not supported", other)
		rej.offendingIE = pfcp.IEReportingTriggers
		return rej
	}
	return nil
}

// supportedTriggers are the Reporting Triggers (§8.2.19) UPF-U acts on.
const supportedTriggers = pfcp.TriggerVolumeThreshold | pfcp.TriggerVolumeQuota | pfcp.TriggerPeriodic

// --- references and compilation ---

// finish checks that every rule reference resolves in the session as it
// will be, then compiles it.
func (tx *txn) finish() *reject {
	if rej := checkRefs(tx.s); rej != nil {
		return rej
	}
	if rej := tx.resolveNetworks(); rej != nil {
		return rej
	}
	snap, rej := tx.c.compile(tx.s, tx.endMarkers)
	if rej != nil {
		return rej
	}
	tx.s.snapshot = snap
	return nil
}

// checkRefs checks that every rule a rule names is in s.
func checkRefs(s *session) *reject {
	for _, id := range sortedKeys(s.pdrs) {
		p := &s.pdrs[id].spec
		if s.fars[p.FARID] == nil {
			return ruleFailure(pfcp.RuleTypePDR, uint32(id), "unknown FAR %d", p.FARID)
		}
		for _, q := range p.QERIDs {
			if s.qers[q] == nil {
				return ruleFailure(pfcp.RuleTypePDR, uint32(id), "unknown QER %d", q)
			}
		}
		for _, u := range p.URRIDs {
			if s.urrs[u] == nil {
				return ruleFailure(pfcp.RuleTypePDR, uint32(id), "unknown URR %d", u)
			}
		}
	}
	for _, id := range sortedKeys(s.fars) {
		f := &s.fars[id].spec
		if f.BARID != nil && (s.bar == nil || s.bar.ID != *f.BARID) {
			return ruleFailure(pfcp.RuleTypeFAR, id, "unknown BAR %d", *f.BARID)
		}
	}
	return nil
}

// --- copies: the session never aliases the caller's slices ---

// clonePtr returns a copy of *p in new memory (nil for nil), so that a
// session's stored rules never alias a request's.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func clonePDI(p *pfcp.PDI) pfcp.PDI {
	n := *p
	n.FTEID = clonePtr(p.FTEID)
	n.UEIP = clonePtr(p.UEIP)
	n.SDFFilters = slices.Clone(p.SDFFilters)
	n.QFIs = slices.Clone(p.QFIs)
	return n
}

func clonePDR(p *pfcp.CreatePDR) pfcp.CreatePDR {
	n := *p
	n.PDI = clonePDI(&p.PDI)
	n.OuterHeaderRemoval = clonePtr(p.OuterHeaderRemoval)
	n.QERIDs = slices.Clone(p.QERIDs)
	n.URRIDs = slices.Clone(p.URRIDs)
	return n
}

func cloneFAR(f *pfcp.CreateFAR) pfcp.CreateFAR {
	n := *f
	if f.Forwarding != nil {
		fw := *f.Forwarding
		fw.OuterHeaderCreation = clonePtr(fw.OuterHeaderCreation)
		n.Forwarding = &fw
	}
	n.BARID = clonePtr(f.BARID)
	return n
}

func cloneQER(q *pfcp.CreateQER) pfcp.CreateQER {
	n := *q
	n.MBR = clonePtr(q.MBR)
	n.GBR = clonePtr(q.GBR)
	return n
}

func cloneURR(u *pfcp.CreateURR) pfcp.CreateURR {
	n := *u
	n.VolumeThreshold = clonePtr(u.VolumeThreshold)
	n.VolumeQuota = clonePtr(u.VolumeQuota)
	return n
}

func sortedKeys[K uint8 | uint16 | uint32 | uint64, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
