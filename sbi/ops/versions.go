package ops

import (
	"strings"
)

// apiFullVersions are the versions (info.version) of the Release 17
// OpenAPI files whose operations All describes, by API name: what an NF
// profile advertises as apiFullVersion (TS 29.510 §6.1.6.2.4,
// NFServiceVersion; TS 29.501 §4.3.1.1). The version in the URI is not
// repeated here: it is read from the paths. sbi/openapitest checks these
// against the files.
var apiFullVersions = map[string]string{
	"nausf-auth":           "1.2.3", // TS 29.509
	"nudm-ueau":            "1.2.2", // TS 29.503
	"nudm-sdm":             "2.2.4",
	"nudm-uecm":            "1.2.5",
	"nudr-dr":              "2.2.4", // TS 29.504
	"nnssf-nsselection":    "2.2.1", // TS 29.531
	"nnrf-nfm":             "1.2.6", // TS 29.510
	"nnrf-disc":            "1.2.6",
	"nsmf-pdusession":      "1.2.5", // TS 29.502
	"namf-comm":            "1.2.4", // TS 29.518
	"npcf-smpolicycontrol": "1.2.4", // TS 29.512
}

// ServiceVersion is the version at which tern serves the API of service
// (a service name of TS 29.510, "nudm-sdm"): inURI is the apiVersion of
// its operations' paths ("v2" in /nudm-sdm/v2/...; TS 29.501 §4.4.1) and
// full the version of the OpenAPI file they follow ("2.2.4"). ok is false
// for a service without operations here.
func ServiceVersion(service string) (inURI, full string, ok bool) {
	inURI = pathVersion(service)
	full, ok = apiFullVersions[service]
	return inURI, full, ok && inURI != ""
}

// pathVersion is the version segment of the first operation of service.
func pathVersion(service string) string {
	for _, o := range All {
		if o.Service() != service {
			continue
		}
		_, rest, _ := strings.Cut(strings.TrimPrefix(o.Path, "/"), "/")
		v, _, _ := strings.Cut(rest, "/")
		return v
	}
	return ""
}
