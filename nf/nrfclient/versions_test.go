package nrfclient

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nf/nrf"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/httpsbi"
	"github.com/tern5g/tern/sbi/ops"
	"github.com/tern5g/tern/sbi/ops/opstest"
)

// servedServices are the services tern's NFs register (core/nf.go).
var servedServices = []models.Nrf_NFMgmt_ServiceName{
	models.Nrf_NFMgmt_ServiceName_NAUSF_AUTH, models.Nrf_NFMgmt_ServiceName_NUDM_UEAU, models.Nrf_NFMgmt_ServiceName_NUDM_SDM,
	models.Nrf_NFMgmt_ServiceName_NUDM_UECM, models.Nrf_NFMgmt_ServiceName_NUDR_DR, models.Nrf_NFMgmt_ServiceName_NNSSF_NSSELECTION,
	models.Nrf_NFMgmt_ServiceName_NPCF_SMPOLICYCONTROL, models.Nrf_NFMgmt_ServiceName_NSMF_PDUSESSION, models.Nrf_NFMgmt_ServiceName_NAMF_COMM,
}

// A consumer that builds each URI from the profile, as TS 29.501 §4.4.1
// has it ({apiRoot}/{apiName}/{apiVersionInUri}/...), reaches every
// operation tern serves: nudm-sdm, nudr-dr and nnssf-nsselection at v2.
func TestProfileVersionsAreWhereServed(t *testing.T) {
	srv := httptest.NewServer(httpsbi.NewHandler(nil, opstest.NewProducer()))
	t.Cleanup(srv.Close)
	p, err := ProfileFor(sbi.NFTypeUDM, "00000000-0000-4000-8000-000000000001", srv.URL, servedServices...)
	if err != nil {
		t.Fatal(err)
	}
	param := regexp.MustCompile(`\{[^}]+\}`)
	for _, s := range p.NfServices {
		if len(s.Versions) != 1 {
			t.Fatalf("%s: versions %+v", s.ServiceName, s.Versions)
		}
		v := s.Versions[0]
		if major, _, _ := strings.Cut(v.ApiFullVersion, "."); "v"+major != v.ApiVersionInUri {
			t.Errorf("%s: apiFullVersion %s with apiVersionInUri %s", s.ServiceName, v.ApiFullVersion, v.ApiVersionInUri)
		}
		n := 0
		for _, op := range ops.All {
			if op.Service() != string(s.ServiceName) {
				continue
			}
			n++
			// The path after /{apiName}/{version}, from the table.
			rest := strings.SplitN(op.Path, "/", 4)[3]
			uri := srv.URL + "/" + string(s.ServiceName) + "/" + v.ApiVersionInUri + "/" + param.ReplaceAllString(rest, opstest.SUPI)
			req, _ := http.NewRequest(op.Method, uri, strings.NewReader("{}"))
			req.Header.Set("Content-Type", "application/json")
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var pd models.ProblemDetails
			_ = json.Unmarshal(body, &pd)
			if pd.Cause == sbi.CauseResourceURIStructureNotFound {
				t.Errorf("%s from the profile: %s %s: %d %s", op, op.Method, uri, resp.StatusCode, body)
			}
		}
		if n == 0 {
			t.Errorf("%s: no operation", s.ServiceName)
		}
	}
	if _, err := ProfileFor(sbi.NFTypeSMF, "00000000-0000-4000-8000-000000000001", srv.URL, models.Nrf_NFMgmt_ServiceName_NSMF_EVENT_EXPOSURE); err == nil {
		t.Error("a profile advertising a service tern does not serve")
	}
}

// Profiles as deployed NFs register them: free5GC's puts its whole apiRoot
// in apiPrefix and says v1 for every service; Open5GS's uses the
// nfServiceList map and says v2 for nudm-sdm.
func TestAPIRootOfDeployedProfiles(t *testing.T) {
	const free5gc = `{"nfInstanceId":"a1b2c3d4-0000-4000-8000-000000000001","nfType":"UDM","nfStatus":"REGISTERED",
		"ipv4Addresses":["10.100.200.8"],"nfServices":[{"serviceInstanceId":"1","serviceName":"nudm-sdm",
		"versions":[{"apiFullVersion":"1.0.3","apiVersionInUri":"v1"}],"scheme":"http","nfServiceStatus":"REGISTERED",
		"apiPrefix":"http://10.100.200.8:8000","ipEndPoints":[{"ipv4Address":"10.100.200.8","transport":"TCP","port":8000}]}]}`
	const open5gs = `{"nfInstanceId":"a1b2c3d4-0000-4000-8000-000000000002","nfType":"UDM","nfStatus":"REGISTERED",
		"heartBeatTimer":10,"ipv4Addresses":["127.0.0.12"],"allowedNfTypes":["AMF","SMF","AUSF"],"priority":0,"capacity":100,"load":0,
		"nfServiceList":{"7e3fbb6c-0000-4000-8000-000000000003":{"serviceInstanceId":"7e3fbb6c-0000-4000-8000-000000000003",
		"serviceName":"nudm-sdm","versions":[{"apiVersionInUri":"v2","apiFullVersion":"2.0.0"}],"scheme":"http",
		"nfServiceStatus":"REGISTERED","ipEndPoints":[{"ipv4Address":"127.0.0.12","port":7777}],"allowedNfTypes":["AMF","SMF"]}},
		"nfProfileChangesSupportInd":true}`
	for _, c := range []struct{ name, profile, want string }{
		{"free5GC", free5gc, "http://10.100.200.8:8000"},
		{"Open5GS", open5gs, "http://127.0.0.12:7777"},
		{"apiPrefix with a path", strings.Replace(free5gc, `"http://10.100.200.8:8000"`, `"https://udm.example:8443/core/"`, 1), "https://udm.example:8443/core"},
		{"apiPrefix a path", strings.Replace(free5gc, `"http://10.100.200.8:8000"`, `"core"`, 1), "http://10.100.200.8:8000/core"},
		{"apiPrefix not an apiRoot", strings.Replace(free5gc, `"http://10.100.200.8:8000"`, `"ftp://x"`, 1), "http://10.100.200.8:8000/ftp://x"},
	} {
		var p models.Nrf_NFDisc_NFProfile
		if err := json.Unmarshal([]byte(c.profile), &p); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got, err := APIRoot(&p, models.Nrf_NFMgmt_ServiceName_NUDM_SDM); err != nil || got != c.want {
			t.Errorf("%s: APIRoot = %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}

// Registered with the NRF, a free5GC-style UDM (apiPrefix its apiRoot,
// v1 advertised for everything) is reached at its /nudm-sdm/v2; with an
// instance beside it that lists v2, that one is preferred.
func TestPickWithDeployedProfiles(t *testing.T) {
	ctx := context.Background()
	n, err := nrf.New(nrf.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	srv := httptest.NewServer(httpsbi.NewHandler(nil, opstest.NewProducer()))
	t.Cleanup(srv.Close)
	register := func(id, root, version string) {
		t.Helper()
		p := &models.Nrf_NFMgmt_NFProfile{NfInstanceId: id, NfType: sbi.NFTypeUDM, NfStatus: models.Nrf_NFMgmt_NFStatus_REGISTERED,
			Ipv4Addresses: []string{"10.100.200.8"}, // not where it listens: apiPrefix says
			NfServices: []models.Nrf_NFMgmt_NFService{{ServiceInstanceId: "1", ServiceName: models.Nrf_NFMgmt_ServiceName_NUDM_SDM,
				Versions: []models.Nrf_NFMgmt_NFServiceVersion{{ApiVersionInUri: version, ApiFullVersion: version[1:] + ".0.3"}},
				Scheme:   models.UriScheme_HTTP, NfServiceStatus: models.Nrf_NFMgmt_NFServiceStatus_REGISTERED, ApiPrefix: root}}}
		if _, _, err := n.Register(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	const v1, v2 = "00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002"
	register(v1, srv.URL, "v1")
	d, err := NewDiscoverer(DiscovererConfig{NRF: n})
	if err != nil {
		t.Fatal(err)
	}
	c := ops.NewClient(NewRouter(d, sbi.NFTypeUDM, models.Nrf_NFMgmt_ServiceName_NUDM_SDM, sbi.DiscoveryQuery{RequesterNFType: sbi.NFTypeAMF},
		func(root string) ops.Caller { return httpsbi.NewCaller(srv.Client(), root) }), "")
	plmn, _ := identity.ParsePLMN("00101")
	if _, err := c.GetAmData(ctx, opstest.SUPI, plmn); err != nil {
		t.Fatalf("GetAmData from a free5GC-style profile: %v", err)
	}

	register(v2, "http://10.0.0.2:8000", "v2")
	_, id, err := Pick(ctx, d, sbi.NFTypeUDM, models.Nrf_NFMgmt_ServiceName_NUDM_SDM, sbi.DiscoveryQuery{})
	if err != nil || id != v2 {
		t.Fatalf("Pick = %s, %v; want %s, which lists v2", id, err, v2)
	}
}
