package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tern5g/tern/store"
)

const (
	csvK   = "8baf473f2f8fd09487cccbd7097c6862"
	csvOPc = "8e27b6af0e692e750f32667a3b14605d"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func storeLen(t *testing.T, db string) int {
	t.Helper()
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n, err := st.Len()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSubscriberImportCSV10000: ten thousand rows go in at once, quickly,
// with every column as subscriber add would set it.
func TestSubscriberImportCSV10000(t *testing.T) {
	var b strings.Builder
	b.WriteString("IMSI, K, OPc, AMF, SQN, slices, dnns\n# a comment line\n")
	for i := range 10000 {
		fmt.Fprintf(&b, "2089300%08d,%s,%s,8001,%d,1-010203;2,internet;ims\n", i, csvK, csvOPc, i)
	}
	csv := writeFile(t, "subs.csv", b.String())
	db := filepath.Join(t.TempDir(), "subs.db")
	start := time.Now()
	if err := runSubscriber([]string{"import", "--store", db, "--csv", csv}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("10,000 rows imported in %v", took)
	if took > 10*time.Second && !raceEnabled {
		t.Errorf("10,000 rows took %v", took)
	}
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n, _ := st.Len(); n != 10000 {
		t.Fatalf("%d subscribers, want 10000", n)
	}
	sub, err := st.Get("imsi-208930000009999")
	if err != nil {
		t.Fatal(err)
	}
	if sub.SQN != 9999 || fmt.Sprintf("%x", []byte(sub.AMF)) != "8001" || sub.OPType != store.OPTypeOPc ||
		fmt.Sprintf("%x", []byte(sub.K)) != csvK || len(sub.Slices) != 2 || sub.Slices[1].SNSSAI != "2" ||
		len(sub.Slices[0].DNNs) != 2 || sub.Slices[0].DNNs[1].Name != "ims" || !sub.Slices[0].Default {
		t.Fatalf("imported %+v", sub)
	}
}

// TestSubscriberImportCSVBadRows: every bad row is reported with its line
// number, and nothing is written.
func TestSubscriberImportCSVBadRows(t *testing.T) {
	csv := writeFile(t, "subs.csv", strings.Join([]string{
		"imsi,k,opc,dnns",
		"208930000000001," + csvK + "," + csvOPc + ",internet",     // 2: good
		"208930000000002,zz," + csvOPc + ",internet",               // 3: bad K
		"208930000000003," + csvK + "," + csvOPc + ",corp",         // 4: DNN not served
		"208930000000004," + csvK + "," + csvOPc,                   // 5: short row
		"208930000000001," + csvK + "," + csvOPc + ",ims",          // 6: IMSI again
		"12ab," + csvK + "," + csvOPc + ",internet",                // 7: bad IMSI
		"208930000000007," + csvK + ",,internet",                   // 8: no OPc
		"208930000000008," + csvK + "," + csvOPc + ",\"internet",   // 9: open quote
		"208930000000009," + csvK + "," + csvOPc + ",internet;ims", // last: good
	}, "\n")+"\n")
	db := filepath.Join(t.TempDir(), "subs.db")
	err := runSubscriber([]string{"import", "--store", db, "--csv", csv})
	if err == nil {
		t.Fatal("a file with bad rows was imported")
	}
	for _, want := range []string{
		"7 of 8 rows are bad, nothing imported",
		`line 3: column k: want 32 hex digits, have 2 characters`,
		`line 4: column dnns: "corp" is not served by the configuration`,
		"line 5: 3 fields, the header names 4",
		"line 6: imsi-208930000000001 is also on line 2",
		`line 7: column imsi: "12ab" is not 6-15 digits`,
		"line 8: column opc or column op is required",
		"line 9:",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("a refused import created the store: %v", err)
	}

	for _, c := range []struct{ content, want string }{
		{"", "empty: want a header row"},
		{"imsi,k,opc,colour\n", `unknown column "colour"`},
		{"imsi,k\n", "no opc or op column"},
		{"imsi,k,opc,k\n", `column "k" given twice`},
		{"imsi,k,opc\n", "no subscribers after the header"},
	} {
		err := runSubscriber([]string{"import", "--store", db, "--csv", writeFile(t, "h.csv", c.content)})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.content, err, c.want)
		}
	}
}

// TestSubscriberImportCSVExisting: an IMSI already in the store fails the
// whole import, naming its line, unless --replace.
func TestSubscriberImportCSVExisting(t *testing.T) {
	db := filepath.Join(t.TempDir(), "subs.db")
	if err := runSubscriber([]string{"add", "--store", db, "--imsi", "208930000000002", "--k", csvK, "--opc", csvOPc, "--sqn", "77"}); err != nil {
		t.Fatal(err)
	}
	csv := writeFile(t, "subs.csv", "imsi,k,op\n"+
		"208930000000001,"+csvK+","+csvOPc+"\n"+
		"208930000000002,"+csvK+","+csvOPc+"\n"+
		"208930000000003,"+csvK+","+csvOPc+"\n")
	err := runSubscriber([]string{"import", "--store", db, "--csv", csv})
	if err == nil || !strings.Contains(err.Error(), "1 subscribers are already in "+db+", nothing imported (--replace overwrites them)") ||
		!strings.Contains(err.Error(), "line 3: imsi-208930000000002") {
		t.Fatalf("import over an existing IMSI: %v", err)
	}
	if n := storeLen(t, db); n != 1 {
		t.Fatalf("%d subscribers after a refused import, want 1", n)
	}
	if err := runSubscriber([]string{"import", "--store", db, "--csv", csv, "--replace"}); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n, _ := st.Len(); n != 3 {
		t.Fatalf("%d subscribers after --replace, want 3", n)
	}
	if sub, _ := st.Get("imsi-208930000000002"); sub.SQN != 0 || sub.OPType != store.OPTypeOP {
		t.Fatalf("replaced subscriber %+v, want the file's (OP, sqn 0)", sub)
	}
	if err := runSubscriber([]string{"import", "--store", db, "--csv", csv, "--from", csv}); err == nil || !strings.Contains(err.Error(), "give one, not both") {
		t.Fatalf("--csv with --from: %v", err)
	}
}

// TestSubscriberImportCSVErrorsBounded: a bad key is described by its
// length, never repeated (it is a secret, one digit short), and a file of
// many bad rows, or of many IMSIs already stored, gets the first 20 lines
// and how many more.
func TestSubscriberImportCSVErrorsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("imsi,k,opc\n")
	keys := make([]string, 30)
	for i := range keys {
		keys[i] = fmt.Sprintf("%031x", 0xabcdef0000+i) // one digit short
		fmt.Fprintf(&b, "2089300%08d,%s,%s\n", i, keys[i], csvOPc)
	}
	b.WriteString("208930000009999," + csvK + "," + csvOPc[1:] + "\n") // OPc one short
	db := filepath.Join(t.TempDir(), "subs.db")
	err := runSubscriber([]string{"import", "--store", db, "--csv", writeFile(t, "bad.csv", b.String())})
	if err == nil {
		t.Fatal("imported")
	}
	msg := err.Error()
	for _, k := range append(keys, csvK, csvOPc[1:]) {
		if strings.Contains(msg, k) {
			t.Fatalf("the error repeats a key:\n%s", msg)
		}
	}
	if !strings.Contains(msg, "31 of 31 rows are bad") || !strings.Contains(msg, "line 2: column k: want 32 hex digits, have 31 characters") ||
		strings.Count(msg, "\n  line ") != 20 || !strings.HasSuffix(msg, "\n  and 11 more") {
		t.Fatalf("error:\n%s\nwant 31 bad rows, the first 20 listed by the length of their key, and 11 more", msg)
	}
	if err := runSubscriber([]string{"add", "--store", db, "--imsi", "208930000000101", "--k", csvK[:31] + "x", "--opc", csvOPc}); err == nil ||
		strings.Contains(err.Error(), csvK[:31]) || !strings.Contains(err.Error(), "32 characters that are not all hex digits") {
		t.Fatalf("subscriber add with a bad K: %v", err)
	}

	b.Reset()
	b.WriteString("imsi,k,opc\n")
	for i := range 30 {
		fmt.Fprintf(&b, "2089300%08d,%s,%s\n", i, csvK, csvOPc)
	}
	good := writeFile(t, "good.csv", b.String())
	if err := runSubscriber([]string{"import", "--store", db, "--csv", good}); err != nil {
		t.Fatal(err)
	}
	err = runSubscriber([]string{"import", "--store", db, "--csv", good})
	if err == nil || !strings.Contains(err.Error(), "30 subscribers are already in") || strings.Count(err.Error(), "\n  line ") != 20 ||
		!strings.HasSuffix(err.Error(), "\n  and 10 more") {
		t.Fatalf("import of IMSIs already stored: %v", err)
	}
}
