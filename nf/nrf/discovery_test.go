package nrf

import (
	"context"
	"slices"
	"testing"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/sbi"
)

var home = identity.PLMN{MCC: "208", MNC: "93"}

func TestDiscoverSMFByDNNSliceAndTAI(t *testing.T) {
	ctx := context.Background()
	n, _ := newNRF(t, Config{})
	plmn := sbi.PLMNToModel(home)
	// smf-internet serves "internet" in 1-010203 and "ims" in 2, in TACs
	// 1 and 0x10-0x1f; smf-iot serves any DNN of slice 3 in TACs matching
	// 0002..; smf-any says nothing and serves everything.
	internet := profile("smf-internet", sbi.NFTypeSMF, models.Nrf_NFMgmt_ServiceName_NSMF_PDUSESSION)
	internet.SmfInfo = &models.Nrf_NFMgmt_SmfInfo{
		SNssaiSmfInfoList: []models.Nrf_NFMgmt_SnssaiSmfInfoItem{
			{SNssai: &models.ExtSnssai{Sst: 1, Sd: "010203"}, DnnSmfInfoList: []models.Nrf_NFMgmt_DnnSmfInfoItem{{Dnn: "internet"}}},
			{SNssai: &models.ExtSnssai{Sst: 2}, DnnSmfInfoList: []models.Nrf_NFMgmt_DnnSmfInfoItem{{Dnn: "ims"}}},
		},
		TaiList: []models.Tai{{PlmnId: &plmn, Tac: "000001"}},
		TaiRangeList: []models.Nrf_NFMgmt_TaiRange{{PlmnId: &plmn,
			TacRangeList: []models.Nrf_NFMgmt_TacRange{{Start: "000010", End: "00001F"}}}},
	}
	iot := profile("smf-iot", sbi.NFTypeSMF, models.Nrf_NFMgmt_ServiceName_NSMF_PDUSESSION)
	iot.SmfInfoList = map[string]models.Nrf_NFMgmt_SmfInfo{"a": {
		SNssaiSmfInfoList: []models.Nrf_NFMgmt_SnssaiSmfInfoItem{
			{SNssai: &models.ExtSnssai{Sst: 3}, DnnSmfInfoList: []models.Nrf_NFMgmt_DnnSmfInfoItem{{Dnn: "*"}}},
		},
		TaiRangeList: []models.Nrf_NFMgmt_TaiRange{{PlmnId: &plmn,
			TacRangeList: []models.Nrf_NFMgmt_TacRange{{Pattern: "0002[0-9a-f]{2}"}}}},
	}}
	anySMF := profile("smf-any", sbi.NFTypeSMF, models.Nrf_NFMgmt_ServiceName_NSMF_PDUSESSION)
	for _, p := range []*models.Nrf_NFMgmt_NFProfile{internet, iot, anySMF} {
		mustRegister(t, n, p)
	}
	tai := func(tac uint32) *identity.TAI { return &identity.TAI{PLMN: home, TAC: tac} }
	s1 := identity.SNSSAI{SST: 1, SD: 0x010203}
	s2 := identity.SNSSAI{SST: 2, SD: identity.NoSD}
	s3 := identity.SNSSAI{SST: 3, SD: identity.NoSD}
	for _, c := range []struct {
		name string
		q    sbi.DiscoveryQuery
		want []string
	}{
		{"no filter", sbi.DiscoveryQuery{}, []string{"smf-any", "smf-internet", "smf-iot"}},
		{"dnn internet", sbi.DiscoveryQuery{DNN: "internet"}, []string{"smf-any", "smf-internet", "smf-iot"}},
		{"dnn case-insensitive", sbi.DiscoveryQuery{DNN: "Internet", SNSSAIs: []identity.SNSSAI{s1}}, []string{"smf-any", "smf-internet"}},
		{"dnn in the wrong slice", sbi.DiscoveryQuery{DNN: "internet", SNSSAIs: []identity.SNSSAI{s2}}, []string{"smf-any"}},
		{"dnn ims in slice 2", sbi.DiscoveryQuery{DNN: "ims", SNSSAIs: []identity.SNSSAI{s2}}, []string{"smf-any", "smf-internet"}},
		{"slice 3 alone", sbi.DiscoveryQuery{SNSSAIs: []identity.SNSSAI{s3}}, []string{"smf-any", "smf-iot"}},
		{"slice 1 or 3", sbi.DiscoveryQuery{SNSSAIs: []identity.SNSSAI{s1, s3}}, []string{"smf-any", "smf-internet", "smf-iot"}},
		{"wildcard dnn of slice 3", sbi.DiscoveryQuery{DNN: "sensors", SNSSAIs: []identity.SNSSAI{s3}}, []string{"smf-any", "smf-iot"}},
		{"tai in list", sbi.DiscoveryQuery{TAI: tai(1)}, []string{"smf-any", "smf-internet"}},
		{"tai in range", sbi.DiscoveryQuery{TAI: tai(0x1a)}, []string{"smf-any", "smf-internet"}},
		{"tai by pattern", sbi.DiscoveryQuery{TAI: tai(0x0002ab)}, []string{"smf-any", "smf-iot"}},
		{"tai nowhere", sbi.DiscoveryQuery{TAI: tai(0x99)}, []string{"smf-any"}},
		{"tai of another plmn", sbi.DiscoveryQuery{TAI: &identity.TAI{PLMN: identity.PLMN{MCC: "001", MNC: "01"}, TAC: 1}}, []string{"smf-any"}},
		{"dnn and tai in one smfInfo", sbi.DiscoveryQuery{DNN: "internet", TAI: tai(0x0002ab)}, []string{"smf-any", "smf-iot"}},
		{"target instance", sbi.DiscoveryQuery{TargetNFInstanceID: "smf-iot"}, []string{"smf-iot"}},
	} {
		r, err := n.Discover(ctx, sbi.NFTypeSMF, c.q)
		if err != nil || !slices.Equal(ids(r), c.want) {
			t.Errorf("%s: %v, %v; want %v", c.name, ids(r), err, c.want)
		}
	}
}

func TestDiscoverBySUPIRange(t *testing.T) {
	ctx := context.Background()
	n, _ := newNRF(t, Config{})
	low := profile("udm-low", sbi.NFTypeUDM, models.Nrf_NFMgmt_ServiceName_NUDM_SDM)
	low.UdmInfo = &models.Nrf_NFMgmt_UdmInfo{SupiRanges: []models.Nrf_NFMgmt_SupiRange{{Start: "208930000000000", End: "208930000000999"}}}
	high := profile("udm-high", sbi.NFTypeUDM, models.Nrf_NFMgmt_ServiceName_NUDM_SDM)
	high.UdmInfo = &models.Nrf_NFMgmt_UdmInfo{SupiRanges: []models.Nrf_NFMgmt_SupiRange{{Pattern: `imsi-20893000000[1-9][0-9]{3}`}}}
	ausf := profile("ausf-low", sbi.NFTypeAUSF, models.Nrf_NFMgmt_ServiceName_NAUSF_AUTH)
	ausf.AusfInfo = &models.Nrf_NFMgmt_AusfInfo{SupiRanges: []models.Nrf_NFMgmt_SupiRange{{Start: "208930000000000", End: "208930000000999"}}}
	ausfAny := profile("ausf-any", sbi.NFTypeAUSF, models.Nrf_NFMgmt_ServiceName_NAUSF_AUTH)
	ausfAny.AusfInfo = &models.Nrf_NFMgmt_AusfInfo{GroupId: "g"} // an info without ranges: any SUPI
	for _, p := range []*models.Nrf_NFMgmt_NFProfile{low, high, ausf, ausfAny} {
		mustRegister(t, n, p)
	}
	for _, c := range []struct {
		target sbi.NFType
		supi   string
		want   []string
	}{
		{sbi.NFTypeUDM, "imsi-208930000000001", []string{"udm-low"}},
		{sbi.NFTypeUDM, "imsi-208930000001234", []string{"udm-high"}},
		{sbi.NFTypeUDM, "imsi-001010000000001", nil},
		{sbi.NFTypeUDM, "nai-someone@example", nil},
		{sbi.NFTypeAUSF, "imsi-208930000000999", []string{"ausf-any", "ausf-low"}},
		{sbi.NFTypeAUSF, "imsi-208930000001000", []string{"ausf-any"}},
	} {
		r, err := n.Discover(ctx, c.target, sbi.DiscoveryQuery{SUPI: c.supi})
		if err != nil || !slices.Equal(ids(r), c.want) {
			t.Errorf("%s %s: %v, %v; want %v", c.target, c.supi, ids(r), err, c.want)
		}
	}
}

func TestDiscoverAMFByTAIAndBadPattern(t *testing.T) {
	ctx := context.Background()
	n, _ := newNRF(t, Config{})
	plmn := sbi.PLMNToModel(home)
	amf := profile("amf-1", sbi.NFTypeAMF)
	amf.AmfInfo = &models.Nrf_NFMgmt_AmfInfo{TaiList: []models.Tai{{PlmnId: &plmn, Tac: "0001"}}}
	mustRegister(t, n, amf)
	for tac, want := range map[uint32]int{1: 1, 2: 0} {
		r, _ := n.Discover(ctx, sbi.NFTypeAMF, sbi.DiscoveryQuery{TAI: &identity.TAI{PLMN: home, TAC: tac}})
		if len(r.NfInstances) != want {
			t.Errorf("AMF for TAC %d: %v", tac, ids(r))
		}
	}
	bad := profile("udm-bad", sbi.NFTypeUDM)
	bad.UdmInfo = &models.Nrf_NFMgmt_UdmInfo{SupiRanges: []models.Nrf_NFMgmt_SupiRange{{Pattern: "imsi-(("}}}
	if _, _, err := n.Register(ctx, bad); sbi.CauseOf(err) != sbi.CauseOptionalIEIncorrect {
		t.Fatalf("bad pattern: %v", err)
	}
	if _, err := n.Discover(ctx, "", sbi.DiscoveryQuery{}); sbi.CauseOf(err) != sbi.CauseMandatoryIEMissing {
		t.Fatalf("no target: %v", err)
	}
}
