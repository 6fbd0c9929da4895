package openapitest

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/tern5g/tern/sbi/ops"
)

// The versions NF profiles advertise (ops.ServiceVersion) are those of
// the 3GPP files: apiFullVersion is the file's info.version, and
// apiVersionInUri the version of its server URL, {apiRoot}/{name}/{v}.
func TestServiceVersionsMatchTheFiles(t *testing.T) {
	v := load(t)
	for _, service := range slices.Sorted(maps.Keys(services)) {
		if service == "oauth2" {
			continue // Nnrf_AccessToken has no version in its URI
		}
		a, err := v.api(service)
		if err != nil {
			t.Fatal(err)
		}
		inURI, full, ok := ops.ServiceVersion(service)
		if !ok || full != a.doc.Info.Version {
			t.Errorf("%s: apiFullVersion %q (%v), %s says %q", service, full, ok, a.file, a.doc.Info.Version)
		}
		var urls []string
		for _, s := range a.doc.Servers {
			urls = append(urls, s.URL)
		}
		if !slices.ContainsFunc(urls, func(u string) bool { return strings.HasSuffix(u, "/"+service+"/"+inURI) }) {
			t.Errorf("%s: apiVersionInUri %q, %s serves at %q", service, inURI, a.file, urls)
		}
	}
}
