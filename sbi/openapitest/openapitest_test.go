package openapitest

import (
	"bytes"
	"fmt"
	"maps"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/free5gc/openapi/models"
)

const (
	supi  = "imsi-001010000000001"
	snn   = "5G:mnc001.mcc001.3gppnetwork.org"
	hal   = "application/3gppHal+json"
	jsonT = "application/json"
	probT = "application/problem+json"
)

func authInfo() models.Ausf_UEAU_AuthenticationInfo {
	return models.Ausf_UEAU_AuthenticationInfo{SupiOrSuci: "suci-0-001-01-0000-0-0-0000000001", ServingNetworkName: snn}
}

func authCtx() models.Ausf_UEAU_UEAuthenticationCtx {
	return models.Ausf_UEAU_UEAuthenticationCtx{
		AuthType: models.Ausf_UEAU_AuthType_5_G_AKA,
		Var5gAuthData: models.Ausf_UEAU_Av5gAka{
			Rand:      "00112233445566778899aabbccddeeff",
			Autn:      "00112233445566778899aabbccddeeff",
			HxresStar: "00112233445566778899aabbccddeeff",
		},
		Links: map[string][]models.Link{"5g-aka": {{Href: "http://ausf/nausf-auth/v1/ue-authentications/1/5g-aka-confirmation"}}},
	}
}

const ausfURI = "http://ausf.example:8000/nausf-auth/v1/ue-authentications"

// TestAusfAuthenticate is the example exchange of the brief: Nausf
// UEAuthentication's POST, valid and broken in each way that matters.
func TestAusfAuthenticate(t *testing.T) {
	v := load(t)
	const op = "POST /nausf-auth/v1/ue-authentications" // the spec gives it no operationId
	loc := ausfURI + "/1"

	t.Run("valid", func(t *testing.T) {
		req, rb := request(t, "POST", ausfURI, authInfo(), jsonT)
		resp, sb := response(t, 201, authCtx(), hal, "Location", loc)
		wantOK(t, v, op, req, rb, resp, sb)
	})
	t.Run("missing servingNetworkName", func(t *testing.T) {
		info := authInfo()
		info.ServingNetworkName = ""
		req, rb := request(t, "POST", ausfURI, info, jsonT)
		resp, sb := response(t, 201, authCtx(), hal, "Location", loc)
		wantErr(t, v, req, rb, resp, sb, "request body", "servingNetworkName")
	})
	t.Run("member the schema does not define", func(t *testing.T) {
		// Misspelt: servingNetworkName.
		body := []byte(`{"supiOrSuci":"suci-0-001-01-0000-0-0-0000000001","servingNetworkName":"` + snn + `","servingNetworkname":"x"}`)
		req, rb := request(t, "POST", ausfURI, body, jsonT)
		resp, sb := response(t, 201, authCtx(), hal, "Location", loc)
		wantErr(t, v, req, rb, resp, sb, `property "servingNetworkname" is not defined`)
	})
	t.Run("problem details", func(t *testing.T) {
		req, rb := request(t, "POST", ausfURI, authInfo(), jsonT)
		resp, sb := response(t, 400, models.ProblemDetails{Title: "Bad Request", Status: 400, Cause: "MANDATORY_IE_MISSING"}, probT)
		wantOK(t, v, op, req, rb, resp, sb)
	})
	t.Run("problem details as plain JSON", func(t *testing.T) {
		req, rb := request(t, "POST", ausfURI, authInfo(), jsonT)
		resp, sb := response(t, 400, models.ProblemDetails{Status: 400}, jsonT)
		wantErr(t, v, req, rb, resp, sb, "response 400", `"application/json" not allowed`)
	})
	t.Run("context as plain JSON", func(t *testing.T) {
		// TS 29.509 answers with the HAL media type, not application/json.
		req, rb := request(t, "POST", ausfURI, authInfo(), jsonT)
		resp, sb := response(t, 201, authCtx(), jsonT, "Location", loc)
		wantErr(t, v, req, rb, resp, sb, "response 201 body", "application/3gppHal+json")
	})
	t.Run("request content type", func(t *testing.T) {
		req, rb := request(t, "POST", ausfURI, authInfo(), "text/plain")
		resp, sb := response(t, 201, authCtx(), hal, "Location", loc)
		wantErr(t, v, req, rb, resp, sb, "request body", `"text/plain" not allowed`)
	})
	t.Run("no Location", func(t *testing.T) {
		req, rb := request(t, "POST", ausfURI, authInfo(), jsonT)
		resp, sb := response(t, 201, authCtx(), hal)
		wantErr(t, v, req, rb, resp, sb, "Location")
	})
	t.Run("undocumented success status", func(t *testing.T) {
		req, rb := request(t, "POST", ausfURI, authInfo(), jsonT)
		resp, sb := response(t, 200, authCtx(), hal)
		wantErr(t, v, req, rb, resp, sb, "status not defined")
	})
	t.Run("undocumented error status", func(t *testing.T) {
		// This operation has no "default" response.
		req, rb := request(t, "POST", ausfURI, authInfo(), jsonT)
		resp, sb := response(t, 418, models.ProblemDetails{Status: 418}, probT)
		wantErr(t, v, req, rb, resp, sb, "status not defined")
	})
	t.Run("no body where the spec has one", func(t *testing.T) {
		req, rb := request(t, "POST", ausfURI, authInfo(), jsonT)
		resp, sb := response(t, 201, nil, "", "Location", loc)
		wantErr(t, v, req, rb, resp, sb, "body is empty")
	})
	t.Run("wrong method", func(t *testing.T) {
		req, rb := request(t, "GET", ausfURI, nil, "")
		wantErr(t, v, req, rb, nil, nil, "method not allowed")
	})
}

// part is one binary part of a multipart/related body.
type part struct{ ct, id, data string }

// multipartRelated builds a multipart/related body: the JSON root, then the
// binary parts.
func multipartRelated(t *testing.T, root any, parts ...part) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	p, err := w.CreatePart(textproto.MIMEHeader{"Content-Type": {jsonT}})
	if err != nil {
		t.Fatal(err)
	}
	p.Write(mustJSON(t, root))
	for _, x := range parts {
		h := textproto.MIMEHeader{"Content-Type": {x.ct}}
		if x.id != "" {
			h.Set("Content-Id", x.id)
		}
		p, err := w.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		p.Write([]byte(x.data))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), "multipart/related; boundary=" + w.Boundary()
}

const smfURI = "http://smf.example:8000/nsmf-pdusession/v1/sm-contexts"

// smContextCreate is what tern's AMF sends (nf/amf/session.go), with an
// HTTP callback URI in place of its URN.
func smContextCreate() models.Smf_PDUSess_SmContextCreateData {
	plmn := models.PlmnId{Mcc: "001", Mnc: "01"}
	return models.Smf_PDUSess_SmContextCreateData{
		Supi:         supi,
		Pei:          "imeisv-4370816125816151",
		PduSessionId: 1,
		Dnn:          "internet",
		SNssai:       &models.Snssai{Sst: 1, Sd: "010203"},
		ServingNfId:  "6f3e7a4c-0b1d-4c59-9a55-2f2c1f0b7a11",
		Guami:        &models.Guami{PlmnId: &models.PlmnIdNid{Mcc: "001", Mnc: "01"}, AmfId: "cafe00"},
		ServingNetwork: &models.PlmnIdNid{
			Mcc: "001", Mnc: "01",
		},
		RequestType: models.Smf_PDUSess_RequestType_INITIAL_REQUEST,
		N1SmMsg:     &models.RefToBinaryData{ContentId: "n1SmMsg"},
		AnType:      models.AccessType_3_GPP_ACCESS,
		RatType:     models.RatType_NR,
		UeLocation: &models.UserLocation{NrLocation: &models.NrLocation{
			Tai:  &models.Tai{PlmnId: &plmn, Tac: "000001"},
			Ncgi: &models.Ncgi{PlmnId: &plmn, NrCellId: "000000010"},
		}},
		SmContextStatusUri: "http://amf.example:8000/namf-callback/v1/sm-context-status/imsi-001010000000001/1",
		SelMode:            models.Smf_PDUSess_DnnSelectionMode_VERIFIED,
	}
}

func smContextCreated() models.Smf_PDUSess_SmContextCreatedData {
	return models.Smf_PDUSess_SmContextCreatedData{PduSessionId: 1, SNssai: &models.Snssai{Sst: 1, Sd: "010203"}}
}

// TestSmContextCreateMultipart covers multipart/related: the JSON root
// part against SmContextCreateData, the binary parts by Content-ID.
func TestSmContextCreateMultipart(t *testing.T) {
	v := load(t)
	n1 := part{"application/vnd.3gpp.5gnas", "n1SmMsg", "\x2e\x01\x01\xc1\xff\xff\x91"}
	created := func(t *testing.T) (*http.Response, []byte) {
		return response(t, 201, smContextCreated(), jsonT, "Location", smfURI+"/1")
	}

	t.Run("valid", func(t *testing.T) {
		body, ct := multipartRelated(t, smContextCreate(), n1)
		req, rb := request(t, "POST", smfURI, body, ct)
		resp, sb := created(t)
		wantOK(t, v, "PostSmContexts", req, rb, resp, sb)
	})
	t.Run("binary part missing", func(t *testing.T) {
		body, ct := multipartRelated(t, smContextCreate())
		req, rb := request(t, "POST", smfURI, body, ct)
		resp, sb := created(t)
		wantErr(t, v, req, rb, resp, sb, `contentId "n1SmMsg"`)
	})
	t.Run("binary part not referred to", func(t *testing.T) {
		body, ct := multipartRelated(t, smContextCreate(), n1, part{"application/vnd.3gpp.ngap", "n2SmInfo", "\x00"})
		req, rb := request(t, "POST", smfURI, body, ct)
		resp, sb := created(t)
		wantErr(t, v, req, rb, resp, sb, `Content-ID "n2SmInfo"`, "not referred to")
	})
	t.Run("binary part of a type the spec does not allow", func(t *testing.T) {
		body, ct := multipartRelated(t, smContextCreate(), part{"application/octet-stream", "n1SmMsg", "\x2e"})
		req, rb := request(t, "POST", smfURI, body, ct)
		resp, sb := created(t)
		wantErr(t, v, req, rb, resp, sb, "application/octet-stream")
	})
	t.Run("JSON part violates the schema", func(t *testing.T) {
		d := smContextCreate()
		d.SNssai.Sd = "xyz"
		body, ct := multipartRelated(t, d, n1)
		req, rb := request(t, "POST", smfURI, body, ct)
		resp, sb := created(t)
		wantErr(t, v, req, rb, resp, sb, "jsonData", "sNssai/sd")
	})
}

// TestSdmAmDataQuery covers a query parameter whose value is JSON (content:
// application/json in the spec).
func TestSdmAmDataQuery(t *testing.T) {
	v := load(t)
	uri := func(q string) string { return "http://udm.example:8000/nudm-sdm/v2/" + supi + "/am-data?" + q }
	am := models.Udm_SDM_AccessAndMobilitySubscriptionData{
		Gpsis:            []string{"msisdn-0123456789"},
		Nssai:            &models.Udm_SDM_Nssai{DefaultSingleNssais: []models.Snssai{{Sst: 1}}},
		SubscribedUeAmbr: &models.AmbrRm{Uplink: "1 Gbps", Downlink: "2 Gbps"},
	}

	t.Run("valid", func(t *testing.T) {
		req, rb := request(t, "GET", uri("plmn-id="+url.QueryEscape(`{"mcc":"001","mnc":"01"}`)), nil, "")
		resp, sb := response(t, 200, am, jsonT)
		wantOK(t, v, "GetAmData", req, rb, resp, sb)
	})
	t.Run("bad plmn-id", func(t *testing.T) {
		req, rb := request(t, "GET", uri("plmn-id="+url.QueryEscape(`{"mcc":"1","mnc":"01"}`)), nil, "")
		resp, sb := response(t, 200, am, jsonT)
		wantErr(t, v, req, rb, resp, sb, "plmn-id", "mcc")
	})
	t.Run("unknown query parameter", func(t *testing.T) {
		req, rb := request(t, "GET", uri("plmn="+url.QueryEscape(`{"mcc":"001","mnc":"01"}`)), nil, "")
		resp, sb := response(t, 200, am, jsonT)
		wantErr(t, v, req, rb, resp, sb, `query parameter "plmn" is not defined`)
	})
	t.Run("bad response body", func(t *testing.T) {
		bad := am
		bad.SubscribedUeAmbr = &models.AmbrRm{Uplink: "fast", Downlink: "2 Gbps"}
		req, rb := request(t, "GET", uri(""), nil, "")
		resp, sb := response(t, 200, bad, jsonT)
		wantErr(t, v, req, rb, resp, sb, "response 200 body", "subscribedUeAmbr")
	})
	t.Run("error only default covers", func(t *testing.T) {
		// 429 falls to "default"; its body must still be ProblemDetails.
		req, rb := request(t, "GET", uri(""), nil, "")
		resp, sb := response(t, 429, []byte(`{"status":"busy"}`), probT)
		wantErr(t, v, req, rb, resp, sb, "response 429 body", "status")
		resp, sb = response(t, 429, models.ProblemDetails{Status: 429}, probT)
		wantOK(t, v, "GetAmData", req, rb, resp, sb)
		resp, sb = response(t, 429, nil, "")
		wantOK(t, v, "GetAmData", req, rb, resp, sb)
	})
}

// TestNrfDiscovery covers NF discovery's query: enums and
// form-exploded arrays.
func TestNrfDiscovery(t *testing.T) {
	v := load(t)
	const base = "http://nrf.example:8000/nnrf-disc/v1/nf-instances?"
	result := models.Nrf_NFDisc_SearchResult{
		ValidityPeriod: 3600,
		NfInstances: []models.Nrf_NFDisc_NFProfile{{
			NfInstanceId:  "6f3e7a4c-0b1d-4c59-9a55-2f2c1f0b7a11",
			NfType:        models.Nrf_NFMgmt_NFType_AMF,
			NfStatus:      models.Nrf_NFMgmt_NFStatus_REGISTERED,
			Ipv4Addresses: []string{"10.0.0.1"},
		}},
	}
	t.Run("valid", func(t *testing.T) {
		req, rb := request(t, "GET", base+"target-nf-type=AMF&requester-nf-type=SMF&service-names=namf-comm", nil, "")
		resp, sb := response(t, 200, result, jsonT)
		wantOK(t, v, "SearchNFInstances", req, rb, resp, sb)
	})
	t.Run("target-nf-type missing", func(t *testing.T) {
		req, rb := request(t, "GET", base+"requester-nf-type=SMF", nil, "")
		resp, sb := response(t, 200, result, jsonT)
		wantErr(t, v, req, rb, resp, sb, "target-nf-type")
	})
	t.Run("NF type not in the enum", func(t *testing.T) {
		req, rb := request(t, "GET", base+"target-nf-type=amf&requester-nf-type=SMF", nil, "")
		resp, sb := response(t, 200, result, jsonT)
		wantErr(t, v, req, rb, resp, sb, "target-nf-type")
	})
}

// TestAccessToken covers the token endpoint's form body, whose fields
// hold JSON.
func TestAccessToken(t *testing.T) {
	v := load(t)
	form := url.Values{
		"grant_type":        {"client_credentials"},
		"nfInstanceId":      {"6f3e7a4c-0b1d-4c59-9a55-2f2c1f0b7a11"},
		"nfType":            {"AMF"},
		"targetNfType":      {"SMF"},
		"scope":             {"nsmf-pdusession"},
		"requesterPlmn":     {`{"mcc":"001","mnc":"01"}`},
		"targetSnssaiList":  {`[{"sst":1}]`},
		"requesterPlmnList": {`{"mcc":"001","mnc":"01"}`, `{"mcc":"001","mnc":"02"}`},
	}
	rsp := models.Nrf_AccTok_AccessTokenRsp{Access_token: "eyJ.x.y", Token_type: "Bearer", Expires_in: 3600, Scope: "nsmf-pdusession"}
	const uri = "http://nrf.example:8000/oauth2/token"
	t.Run("valid", func(t *testing.T) {
		req, rb := request(t, "POST", uri, []byte(form.Encode()), "application/x-www-form-urlencoded")
		resp, sb := response(t, 200, rsp, jsonT, "Cache-Control", "no-store", "Pragma", "no-cache")
		wantOK(t, v, "AccessTokenRequest", req, rb, resp, sb)
	})
	t.Run("cacheable token", func(t *testing.T) {
		// RFC 6749 §5.1, as TS 29.510 requires: the token must not be cached.
		req, rb := request(t, "POST", uri, []byte(form.Encode()), "application/x-www-form-urlencoded")
		resp, sb := response(t, 200, rsp, jsonT)
		wantErr(t, v, req, rb, resp, sb, "Cache-Control")
	})
	t.Run("bad grant_type", func(t *testing.T) {
		f := url.Values{}
		for k, x := range form {
			f[k] = x
		}
		f.Set("grant_type", "password")
		req, rb := request(t, "POST", uri, []byte(f.Encode()), "application/x-www-form-urlencoded")
		resp, sb := response(t, 200, rsp, jsonT, "Cache-Control", "no-store", "Pragma", "no-cache")
		wantErr(t, v, req, rb, resp, sb, "grant_type")
	})
}

// TestCallbackLearned: the SM context status URI in a create request makes
// a later POST to it a smContextStatusNotification.
func TestCallbackLearned(t *testing.T) {
	v := load(t)
	d := smContextCreate()
	d.SmContextStatusUri = "http://amf.example:8000/namf-callback/v1/learned/" + t.Name()
	body, ct := multipartRelated(t, d, part{"application/vnd.3gpp.5gnas", "n1SmMsg", "\x2e"})
	req, rb := request(t, "POST", smfURI, body, ct)
	resp, sb := response(t, 201, smContextCreated(), jsonT, "Location", smfURI+"/1")
	wantOK(t, v, "PostSmContexts", req, rb, resp, sb)

	n := models.Smf_PDUSess_SmContextStatusNotification{StatusInfo: &models.Smf_PDUSess_StatusInfo{
		ResourceStatus: models.Smf_PDUSess_ResourceStatus_RELEASED,
		Cause:          models.Smf_PDUSess_Cause_REL_DUE_TO_UNSPECIFIED_REASON,
	}}
	// A different scheme reaches the same callback.
	req, rb = request(t, "POST", strings.Replace(d.SmContextStatusUri, "http:", "https:", 1), n, jsonT)
	resp, sb = response(t, 204, nil, "")
	wantOK(t, v, "PostSmContexts/smContextStatusNotification", req, rb, resp, sb)

	n.StatusInfo.ResourceStatus = "GONE"
	req, rb = request(t, "POST", d.SmContextStatusUri, n, jsonT)
	wantErr(t, v, req, rb, resp, sb, "resourceStatus")

	// Another URI under the same host is not the callback.
	req, rb = request(t, "POST", d.SmContextStatusUri+"/x", n, jsonT)
	wantErr(t, v, req, rb, resp, sb, `service "namf-callback"`, "ExpectCallback")
}

// TestExpectCallback: a callback named explicitly, chosen among its
// templates by what follows the expression.
func TestExpectCallback(t *testing.T) {
	v := load(t)
	if err := v.ExpectCallback("http://smf.example:9000/pcf-events", "npcf-smpolicycontrol", "SmPolicyUpdateNotification"); err != nil {
		t.Fatal(err)
	}
	if err := v.ExpectCallback("/udm-events/", "nudm-uecm", "deregistrationNotification"); err != nil {
		t.Fatal(err)
	}
	n := models.Pcf_SMPolCtrl_SmPolicyNotification{ResourceUri: "http://pcf.example/npcf-smpolicycontrol/v1/sm-policies/1"}
	req, rb := request(t, "POST", "http://smf.example:9000/pcf-events/1/update", n, jsonT)
	resp, sb := response(t, 204, nil, "")
	wantOK(t, v, "CreateSMPolicy/SmPolicyUpdateNotification", req, rb, resp, sb)

	req, rb = request(t, "POST", "http://smf.example:9000/pcf-events/1/terminate", n, jsonT)
	wantErr(t, v, req, rb, resp, sb, "no URI template that fits")

	dereg := models.Udm_UECM_DeregistrationData{DeregReason: models.Udm_UECM_DeregistrationReason_SUBSCRIPTION_WITHDRAWN}
	req, rb = request(t, "POST", "http://amf.example/udm-events/imsi-001010000000001", dereg, jsonT)
	wantOK(t, v, "3GppRegistration/deregistrationNotification", req, rb, resp, sb)

	if err := v.ExpectCallback("/x", "npcf-smpolicycontrol", "NoSuchCallback"); err == nil || !strings.Contains(err.Error(), "SmPolicyUpdateNotification") {
		t.Errorf("unknown callback: got %v, want an error listing the callbacks there are", err)
	}
	if err := v.ExpectCallback("/x", "npcf-nope", "X"); err == nil {
		t.Error("unknown service: no error")
	}
}

func TestUnknownService(t *testing.T) {
	v := load(t)
	req, rb := request(t, "GET", "http://x.example/nfoo-bar/v1/things", nil, "")
	wantErr(t, v, req, rb, nil, nil, `service "nfoo-bar"`)
	req, rb = request(t, "GET", "http://udm.example/nudm-sdm/v2/"+supi+"/no-such-data", nil, "")
	wantErr(t, v, req, rb, nil, nil, "TS29503_Nudm_SDM.yaml")
}

// captureTB records Errorf calls instead of failing the test.
type captureTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (c *captureTB) Errorf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}

// TestTransport runs real HTTP exchanges through a Recorder: violations
// are reported naming method, path and operation, the code under test
// sees the bodies intact, and the operations are recorded.
func TestTransport(t *testing.T) {
	v := load(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/nausf-auth/v1/ue-authentications":
			w.Header().Set("Content-Type", hal)
			w.Header().Set("Location", "http://"+r.Host+r.URL.Path+"/1")
			w.WriteHeader(201)
			w.Write(mustJSON(t, authCtx()))
		case strings.HasPrefix(r.URL.Path, "/nudm-sdm/"):
			// Wrong: the spec answers GetAmData with a body.
			w.WriteHeader(204)
		default:
			w.WriteHeader(404)
		}
	}))
	defer srv.Close()

	tb := &captureTB{TB: t}
	rec := v.Transport(tb, nil)
	client := &http.Client{Transport: rec}

	resp, err := client.Post(srv.URL+"/nausf-auth/v1/ue-authentications", jsonT, bytes.NewReader(mustJSON(t, authInfo())))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if !strings.Contains(buf.String(), "5G_AKA") {
		t.Errorf("body not passed on intact: %q", buf.String())
	}
	resp, err = client.Get(srv.URL + "/nudm-sdm/v2/" + supi + "/am-data")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	if got, want := rec.Operations(), []string{"GetAmData", "POST /nausf-auth/v1/ue-authentications"}; !slices.Equal(got, want) {
		t.Errorf("Operations() = %q, want %q", got, want)
	}
	if len(tb.errs) != 1 {
		t.Fatalf("reported %d violations, want 1: %q", len(tb.errs), tb.errs)
	}
	for _, s := range []string{"GET", "/nudm-sdm/v2/" + supi + "/am-data", "GetAmData", "status not defined"} {
		if !strings.Contains(tb.errs[0], s) {
			t.Errorf("report does not mention %q: %s", s, tb.errs[0])
		}
	}
}

// TestTransportLearnsBeforeSending: a notification can arrive while the
// request announcing its URI is still in flight (the SMF may notify
// before the AMF has its answer), so the Recorder learns the URI first.
func TestTransportLearnsBeforeSending(t *testing.T) {
	v := load(t)
	tb := &captureTB{TB: t}
	var rec *Recorder
	var notifyURI string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/nsmf-pdusession/v1/sm-contexts" {
			// Notify before answering.
			n := models.Smf_PDUSess_SmContextStatusNotification{StatusInfo: &models.Smf_PDUSess_StatusInfo{ResourceStatus: models.Smf_PDUSess_ResourceStatus_RELEASED}}
			resp, err := (&http.Client{Transport: rec}).Post(notifyURI, jsonT, bytes.NewReader(mustJSON(t, n)))
			if err == nil {
				resp.Body.Close()
			}
			w.Header().Set("Content-Type", jsonT)
			w.Header().Set("Location", "http://"+r.Host+r.URL.Path+"/1")
			w.WriteHeader(201)
			w.Write(mustJSON(t, smContextCreated()))
			return
		}
		w.WriteHeader(204)
	}))
	defer srv.Close()
	rec = v.Transport(tb, nil)
	notifyURI = srv.URL + "/amf-callbacks/status/1"
	d := smContextCreate()
	d.SmContextStatusUri = notifyURI
	body, ct := multipartRelated(t, d, part{"application/vnd.3gpp.5gnas", "n1SmMsg", "\x2e"})
	resp, err := (&http.Client{Transport: rec}).Post(srv.URL+"/nsmf-pdusession/v1/sm-contexts", ct, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(tb.errs) != 0 {
		t.Errorf("violations: %q", tb.errs)
	}
	if got, want := rec.Operations(), []string{"PostSmContexts", "PostSmContexts/smContextStatusNotification"}; !slices.Equal(got, want) {
		t.Errorf("Operations() = %q, want %q", got, want)
	}
}

// TestConcurrent: one Validator used from many goroutines at once, as the
// NFs of a test share it (run with -race).
func TestConcurrent(t *testing.T) {
	v := load(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := smContextCreate()
			d.SmContextStatusUri = fmt.Sprintf("http://amf.example/concurrent/%d", i)
			body, ct := multipartRelated(t, d, part{"application/vnd.3gpp.5gnas", "n1SmMsg", "\x2e"})
			req, rb := request(t, "POST", smfURI, body, ct)
			resp, sb := response(t, 201, smContextCreated(), jsonT, "Location", smfURI+"/1")
			wantOK(t, v, "PostSmContexts", req, rb, resp, sb)
			req, rb = request(t, "POST", ausfURI, authInfo(), jsonT)
			resp, sb = response(t, 201, authCtx(), hal, "Location", ausfURI+"/1")
			wantOK(t, v, "POST /nausf-auth/v1/ue-authentications", req, rb, resp, sb)
			n := models.Smf_PDUSess_SmContextStatusNotification{StatusInfo: &models.Smf_PDUSess_StatusInfo{ResourceStatus: models.Smf_PDUSess_ResourceStatus_RELEASED}}
			req, rb = request(t, "POST", d.SmContextStatusUri, n, jsonT)
			resp, sb = response(t, 204, nil, "")
			wantOK(t, v, "PostSmContexts/smContextStatusNotification", req, rb, resp, sb)
		}()
	}
	wg.Wait()
}

// TestLoadAll prepares every API tern serves: each must bundle into a
// valid document. What the files lack (stubbed) or get wrong is logged.
func TestLoadAll(t *testing.T) {
	v := load(t)
	for _, service := range slices.Sorted(maps.Keys(services)) {
		a, err := v.api(service)
		if err != nil {
			t.Errorf("%s: %v", service, err)
			continue
		}
		for _, s := range a.stubs {
			t.Logf("%s: stubbed (missing from the files): %s", a.file, s)
		}
		for _, p := range slices.Sorted(maps.Keys(a.defects)) {
			t.Logf("%s: spec defect on %s: %v", a.file, p, a.defects[p])
		}
	}
}

// TestJSONPatch covers an application/json-patch+json body (the NRF
// heartbeat, TS 29.510 §5.2.2.3.2).
func TestJSONPatch(t *testing.T) {
	v := load(t)
	uri := "http://nrf.example/nnrf-nfm/v1/nf-instances/6f3e7a4c-0b1d-4c59-9a55-2f2c1f0b7a11"
	patch := []models.PatchItem{{Op: models.PatchOperation_REPLACE, Path: "/nfStatus", Value: "REGISTERED"}}
	req, rb := request(t, "PATCH", uri, patch, "application/json-patch+json")
	resp, sb := response(t, 204, nil, "")
	wantOK(t, v, "UpdateNFInstance", req, rb, resp, sb)

	patch[0].Op = "set"
	req, rb = request(t, "PATCH", uri, patch, "application/json-patch+json")
	wantErr(t, v, req, rb, resp, sb, "0/op")
}

// TestDirSkips: without ../shared/openapi beside the module, Dir skips.
func TestDirSkips(t *testing.T) {
	root := t.TempDir()
	mod := filepath.Join(root, "repo")
	if err := os.MkdirAll(filepath.Join(mod, "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	skipped := false
	t.Run("absent", func(t *testing.T) {
		t.Chdir(filepath.Join(mod, "pkg"))
		t.Cleanup(func() { skipped = t.Skipped() })
		Dir(t)
		t.Error("Dir returned without skipping")
	})
	if !skipped {
		t.Error("Dir did not skip")
	}
}
