package nrf

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/sbi"
)

// Discover implements sbi.NFDiscovery (NFDiscover, TS 29.510 §5.3.2.2).
// Only REGISTERED instances are returned (SUSPENDED and UNDISCOVERABLE
// ones are not: TS 29.510 §6.1.6.3, NFStatus). The profiles in the result share
// nested slices and maps with the registry: treat them as read-only.
func (n *NRF) Discover(ctx context.Context, target sbi.NFType, q sbi.DiscoveryQuery) (*models.Nrf_NFDisc_SearchResult, error) {
	if target == "" {
		return nil, sbi.NewProblem(http.StatusBadRequest, sbi.CauseMandatoryIEMissing, "target-nf-type")
	}
	s := n.snap.Load()
	res := &models.Nrf_NFDisc_SearchResult{ValidityPeriod: int32(n.cfg.ValidityPeriod / time.Second)}
	for _, e := range s.byType[target] {
		if e.mgmt.NfStatus == models.Nrf_NFMgmt_NFStatus_REGISTERED && e.matches(q) {
			res.NfInstances = append(res.NfInstances, e.disc)
		}
	}
	res.NumNfInstComplete = int32(len(res.NfInstances))
	return res, nil
}

// matches applies the query filters (TS 29.510 §6.2.3.2.3.1). A profile
// that leaves a list or an info out places no restriction (TS 29.510
// §6.1.6.2.2: e.g. no smfInfo means any DNN and TA, no supiRanges any SUPI).
func (e *entry) matches(q sbi.DiscoveryQuery) bool {
	p := &e.mgmt
	if q.TargetNFInstanceID != "" && p.NfInstanceId != q.TargetNFInstanceID {
		return false
	}
	if q.RequesterNFType != "" && len(p.AllowedNfTypes) > 0 && !slices.Contains(p.AllowedNfTypes, q.RequesterNFType) {
		return false
	}
	if len(q.ServiceNames) > 0 && !offersAny(p, q.ServiceNames) {
		return false
	}
	if len(q.SNSSAIs) > 0 && len(p.SNssais) > 0 && !slices.ContainsFunc(q.SNSSAIs, func(s identity.SNSSAI) bool { return servesSlice(p.SNssais, s) }) {
		return false
	}
	if q.PLMN != nil && len(p.PlmnList) > 0 && !slices.Contains(p.PlmnList, sbi.PLMNToModel(*q.PLMN)) {
		return false
	}
	if (q.DNN != "" || q.TAI != nil || len(q.SNSSAIs) > 0) && !e.smfServes(q) {
		return false
	}
	if q.TAI != nil && !e.amfServes(*q.TAI) {
		return false
	}
	if q.SUPI != "" && !e.servesSUPI(q.SUPI) {
		return false
	}
	return true
}

func offersAny(p *models.Nrf_NFMgmt_NFProfile, names []models.Nrf_NFMgmt_ServiceName) bool {
	for _, s := range p.NfServices {
		if slices.Contains(names, s.ServiceName) {
			return true
		}
	}
	for _, s := range p.NfServiceList {
		if slices.Contains(names, s.ServiceName) {
			return true
		}
	}
	return false
}

func servesSlice(list []models.ExtSnssai, s identity.SNSSAI) bool {
	want := sbi.SNSSAIToModel(s)
	for _, e := range list {
		if e.Sst == want.Sst && (strings.EqualFold(e.Sd, want.Sd) || e.WildcardSd) {
			return true
		}
	}
	return false
}

// smfInfos are the profile's smfInfo and smfInfoList entries.
func smfInfos(p *models.Nrf_NFMgmt_NFProfile) []*models.Nrf_NFMgmt_SmfInfo {
	var out []*models.Nrf_NFMgmt_SmfInfo
	if p.SmfInfo != nil {
		out = append(out, p.SmfInfo)
	}
	for _, k := range sortedKeys(p.SmfInfoList) {
		i := p.SmfInfoList[k]
		out = append(out, &i)
	}
	return out
}

// smfServes reports whether one of the SMF's smfInfo serves the query's
// DNN and one of its S-NSSAIs (the DNN within that S-NSSAI) in its TAI:
// all must hold in the same smfInfo (TS 29.510 §6.1.6.2, SmfInfo).
func (e *entry) smfServes(q sbi.DiscoveryQuery) bool {
	infos := smfInfos(&e.mgmt)
	if len(infos) == 0 {
		return true
	}
	for _, si := range infos {
		if q.TAI != nil && !e.taiIn(si.TaiList, si.TaiRangeList, *q.TAI) {
			continue
		}
		if (q.DNN != "" || len(q.SNSSAIs) > 0) && !dnnIn(si, q.DNN, q.SNSSAIs) {
			continue
		}
		return true
	}
	return false
}

// dnnIn reports whether si lists dnn ("*" is any DNN: TS 29.510 §6.1.6.2,
// DnnSmfInfoItem; an empty dnn is any) under one of snssais (any when
// there are none). DNN labels are case-insensitive (TS 23.003 §9.1).
func dnnIn(si *models.Nrf_NFMgmt_SmfInfo, dnn string, snssais []identity.SNSSAI) bool {
	if len(si.SNssaiSmfInfoList) == 0 {
		return true
	}
	for _, item := range si.SNssaiSmfInfoList {
		if len(snssais) > 0 && item.SNssai != nil &&
			!slices.ContainsFunc(snssais, func(s identity.SNSSAI) bool { return servesSlice([]models.ExtSnssai{*item.SNssai}, s) }) {
			continue
		}
		if dnn == "" {
			return true
		}
		for _, d := range item.DnnSmfInfoList {
			if d.Dnn == "*" || strings.EqualFold(d.Dnn, dnn) {
				return true
			}
		}
	}
	return false
}

// amfServes reports whether one of the profile's amfInfo covers tai
// (TS 29.510 §6.1.6.2, AmfInfo taiList and taiRangeList).
func (e *entry) amfServes(tai identity.TAI) bool {
	p := &e.mgmt
	var infos []*models.Nrf_NFMgmt_AmfInfo
	if p.AmfInfo != nil {
		infos = append(infos, p.AmfInfo)
	}
	for _, k := range sortedKeys(p.AmfInfoList) {
		i := p.AmfInfoList[k]
		infos = append(infos, &i)
	}
	if len(infos) == 0 {
		return true
	}
	for _, ai := range infos {
		if e.taiIn(ai.TaiList, ai.TaiRangeList, tai) {
			return true
		}
	}
	return false
}

// taiIn reports whether tai is in list or ranges; both empty means every
// TA.
func (e *entry) taiIn(list []models.Tai, ranges []models.Nrf_NFMgmt_TaiRange, tai identity.TAI) bool {
	if len(list) == 0 && len(ranges) == 0 {
		return true
	}
	plmn := sbi.PLMNToModel(tai.PLMN)
	for _, t := range list {
		if t.PlmnId != nil && *t.PlmnId == plmn {
			if v, err := strconv.ParseUint(t.Tac, 16, 32); err == nil && uint32(v) == tai.TAC {
				return true
			}
		}
	}
	tac := fmt.Sprintf("%06x", tai.TAC)
	for _, r := range ranges {
		if r.PlmnId == nil || *r.PlmnId != plmn {
			continue
		}
		for _, tr := range r.TacRangeList {
			if tr.Pattern != "" {
				// A TAC is in the range if its string fully matches
				// (TS 29.510 §6.1.6.2, TacRange); TACs are hex, either case.
				if re := e.patterns[tr.Pattern]; re != nil && (re.MatchString(tac) || re.MatchString(strings.ToUpper(tac))) {
					return true
				}
				continue
			}
			start, err1 := strconv.ParseUint(tr.Start, 16, 32)
			end, err2 := strconv.ParseUint(tr.End, 16, 32)
			if err1 == nil && err2 == nil && uint64(tai.TAC) >= start && uint64(tai.TAC) <= end {
				return true
			}
		}
	}
	return false
}

// supiRangeLists are the supiRanges of each udmInfo, ausfInfo, udrInfo and
// pcfInfo of the profile: the NFs that serve a subset of subscribers.
func supiRangeLists(p *models.Nrf_NFMgmt_NFProfile) [][]models.Nrf_NFMgmt_SupiRange {
	var out [][]models.Nrf_NFMgmt_SupiRange
	if p.UdmInfo != nil {
		out = append(out, p.UdmInfo.SupiRanges)
	}
	for _, k := range sortedKeys(p.UdmInfoList) {
		out = append(out, p.UdmInfoList[k].SupiRanges)
	}
	if p.AusfInfo != nil {
		out = append(out, p.AusfInfo.SupiRanges)
	}
	for _, k := range sortedKeys(p.AusfInfoList) {
		out = append(out, p.AusfInfoList[k].SupiRanges)
	}
	if p.UdrInfo != nil {
		out = append(out, p.UdrInfo.SupiRanges)
	}
	for _, k := range sortedKeys(p.UdrInfoList) {
		out = append(out, p.UdrInfoList[k].SupiRanges)
	}
	if p.PcfInfo != nil {
		out = append(out, p.PcfInfo.SupiRanges)
	}
	for _, k := range sortedKeys(p.PcfInfoList) {
		out = append(out, p.PcfInfoList[k].SupiRanges)
	}
	return out
}

// servesSUPI reports whether supi is in the profile's SUPI ranges (TS
// 29.510 §6.1.6.2, SupiRange: start/end are IMSI digits compared as
// numbers; pattern must match the whole SUPI). An info without ranges
// serves every SUPI.
func (e *entry) servesSUPI(supi string) bool {
	lists := supiRangeLists(&e.mgmt)
	if len(lists) == 0 {
		return true
	}
	imsi, imsiErr := identity.ParseSUPI(supi)
	for _, l := range lists {
		if len(l) == 0 {
			return true
		}
		for _, r := range l {
			if r.Pattern != "" {
				if re := e.patterns[r.Pattern]; re != nil && re.MatchString(supi) {
					return true
				}
				continue
			}
			if imsiErr == nil && digitsBetween(imsi, r.Start, r.End) {
				return true
			}
		}
	}
	return false
}

// digitsBetween compares decimal digit strings as numbers (IMSIs have at
// most 15 digits, so they fit a uint64).
func digitsBetween(v, start, end string) bool {
	x, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return false
	}
	lo, err1 := strconv.ParseUint(start, 10, 64)
	hi, err2 := strconv.ParseUint(end, 10, 64)
	return err1 == nil && err2 == nil && lo <= x && x <= hi
}

// compilePatterns compiles the supiRanges and tacRanges patterns of p,
// anchored because a value is in the range only if it fully matches. The
// spec's patterns are ECMA-262; the RE2 subset Go compiles covers the ones
// NFs use (digits, classes, repetition).
func compilePatterns(p *models.Nrf_NFMgmt_NFProfile) (map[string]*regexp.Regexp, error) {
	var srcs []string
	for _, l := range supiRangeLists(p) {
		for _, r := range l {
			if r.Pattern != "" {
				srcs = append(srcs, r.Pattern)
			}
		}
	}
	addTAC := func(ranges []models.Nrf_NFMgmt_TaiRange) {
		for _, r := range ranges {
			for _, tr := range r.TacRangeList {
				if tr.Pattern != "" {
					srcs = append(srcs, tr.Pattern)
				}
			}
		}
	}
	for _, si := range smfInfos(p) {
		addTAC(si.TaiRangeList)
	}
	if p.AmfInfo != nil {
		addTAC(p.AmfInfo.TaiRangeList)
	}
	for _, ai := range p.AmfInfoList {
		addTAC(ai.TaiRangeList)
	}
	if len(srcs) == 0 {
		return nil, nil
	}
	out := make(map[string]*regexp.Regexp, len(srcs))
	for _, s := range srcs {
		if _, ok := out[s]; ok {
			continue
		}
		re, err := regexp.Compile(`^(?:` + s + `)$`)
		if err != nil {
			return nil, fmt.Errorf("pattern %q: %v", s, err)
		}
		out[s] = re
	}
	return out, nil
}

// sortedKeys makes the *InfoList maps iterate in a stable order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
