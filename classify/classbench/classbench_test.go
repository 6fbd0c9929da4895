package classbench_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tern5g/tern/classify"
	"github.com/tern5g/tern/classify/classbench"
)

func TestParseRules(t *testing.T) {
	in := "@195.120.234.169/32\t16.254.228.0/24\t0 : 65535\t19856 : 19856\t0x06/0xFF\t0x1000/0x1000\n" +
		"@0.0.0.0/0\t0.0.0.0/0\t0 : 65535\t0 : 65535\t0x00/0x00\t0x0000/0x0000\n"
	rules, err := classbench.ParseRules(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 2 || rules[0].ID != 0 || rules[1].Precedence != 1 {
		t.Fatalf("rules %+v", rules)
	}
	r := rules[0]
	if r.SrcIP != classify.PrefixFrom4(0xc378eaa9, 32) || r.DstIP.Len != 96+24 ||
		r.Has != classify.FieldDstPort|classify.FieldProto || r.DstPort.Lo != 19856 || r.Proto != 6 {
		t.Fatalf("rule 0 %+v", r)
	}
	if rules[1].Has != 0 || rules[1].SrcIP.Len != 0 {
		t.Fatalf("rule 1 not a wildcard: %+v", rules[1])
	}
	h := classify.Header{SrcIP: classify.AddrFrom4(0xc378eaa9), DstIP: classify.AddrFrom4(0x10fee401), DstPort: 19856, Proto: 6}
	if !r.Matches(&h) {
		t.Fatal("rule 0 does not match its header")
	}
	for _, bad := range []string{"195.1.1.1/32", "@1.2.3.4/33 1.2.3.4/32 0 : 1 0 : 1 0x06/0xFF 0/0",
		"@1.2.3.4/32 1.2.3.4/32 5 : 1 0 : 1 0x06/0xFF 0/0", "@1.2.3.4/32 1.2.3.4/32 0 : 1 0 : 1 0x06/0x0F 0/0"} {
		if _, err := classbench.ParseRules(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestParseTrace(t *testing.T) {
	ps, err := classbench.ParseTrace(strings.NewReader("2222391060\t2271845308\t0\t65535\t6\t33559040\t95\n"))
	if err != nil || len(ps) != 1 || ps[0].From != 95 || ps[0].Header.DstPort != 65535 ||
		ps[0].Header.SrcIP != classify.AddrFrom4(2222391060) {
		t.Fatalf("%+v %v", ps, err)
	}
	if _, err := classbench.ParseTrace(strings.NewReader("1 2 3\n")); err == nil {
		t.Error("short line accepted")
	}
	if _, err := classbench.ParseTrace(strings.NewReader("1 2 3 70000 6\n")); err == nil {
		t.Error("port 70000 accepted")
	}
}

func FuzzParse(f *testing.F) {
	f.Add("@30.73.49.192/28\t30.73.54.112/28\t123 : 123\t80 : 80\t0x11/0xFF\t0x0000/0x0000\n")
	f.Add("0\t3744939048\t0\t53\t6\t33559040\t230\n")
	f.Add("@1.2.3.4/32 5.6.7.8/0 0 : 65535 1 : 2 0x00/0x00 0/0")
	f.Fuzz(func(t *testing.T, s string) {
		if rules, err := classbench.ParseRules(strings.NewReader(s)); err == nil {
			for i := range rules {
				if err := rules[i].Validate(); err != nil {
					t.Fatalf("parsed an invalid rule: %v", err)
				}
			}
		}
		_, _ = classbench.ParseTrace(strings.NewReader(s))
	})
}

// TestDefaultDirInsideRepository: without TERN_CLASSBENCH the sets are
// looked for inside the repository (testdata/classbench at the module
// root), never beside the clone.
func TestDefaultDirInsideRepository(t *testing.T) {
	t.Setenv("TERN_CLASSBENCH", "")
	d := classbench.DefaultDir()
	root := filepath.Dir(filepath.Dir(d))
	if filepath.Base(d) != "classbench" || filepath.Base(filepath.Dir(d)) != "testdata" {
		t.Fatalf("DefaultDir() = %s", d)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("DefaultDir() = %s: not at the module root: %v", d, err)
	}
	if err := classbench.Available(t.TempDir(), "acl1_1k"); err == nil || !strings.Contains(err.Error(), "TERN_CLASSBENCH") {
		t.Fatalf("Available(empty dir) = %v", err)
	}
}
