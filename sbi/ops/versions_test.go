package ops

import (
	"strings"
	"testing"
)

// Every 3GPP API of the table has one version in its paths, and a full
// version of the same major (TS 29.501 §4.3.1.1: the URI carries "v"
// and the major version); nudm-sdm, nudr-dr and nnssf-nsselection are
// at v2.
func TestServiceVersions(t *testing.T) {
	seen := map[string]string{}
	for _, op := range All {
		s := op.Service()
		if op.Path == "" || s == "oauth2" || strings.HasPrefix(s, "tern-") {
			continue // callbacks, the token endpoint, tern's own paths
		}
		_, rest, _ := strings.Cut(strings.TrimPrefix(op.Path, "/"), "/")
		v, _, _ := strings.Cut(rest, "/")
		if prev, ok := seen[s]; ok && prev != v {
			t.Errorf("%s: %s at %s, another operation at %s", s, op, v, prev)
		}
		seen[s] = v
		inURI, full, ok := ServiceVersion(s)
		major, _, _ := strings.Cut(full, ".")
		if !ok || inURI != v || "v"+major != v {
			t.Errorf("%s: ServiceVersion = %q, %q, %v; the path has %s", op, inURI, full, ok, v)
		}
	}
	for s, want := range map[string]string{"nudm-sdm": "v2", "nudr-dr": "v2", "nnssf-nsselection": "v2", "nudm-uecm": "v1", "nnrf-nfm": "v1"} {
		if got, _, _ := ServiceVersion(s); got != want {
			t.Errorf("%s at %q, want %s", s, got, want)
		}
	}
	if _, _, ok := ServiceVersion("nsmf-event-exposure"); ok {
		t.Error("a version for a service without operations")
	}
}
