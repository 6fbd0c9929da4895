package jsonpatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/free5gc/openapi/models"
)

// The examples of RFC 6902 Appendix A (and the escaping example of RFC
// 6901 §3), as JSON: doc, patch, and the result or "" for an error. A.11
// (an unknown member) and A.13 (a duplicate "op") cannot be said with
// PatchItem, which drops the one and keeps the last of the other.
var rfc6902AppendixA = []struct{ name, doc, patch, want string }{
	{"A.1 adding an object member", `{"foo":"bar"}`, `[{"op":"add","path":"/baz","value":"qux"}]`, `{"baz":"qux","foo":"bar"}`},
	{"A.2 adding an array element", `{"foo":["bar","baz"]}`, `[{"op":"add","path":"/foo/1","value":"qux"}]`, `{"foo":["bar","qux","baz"]}`},
	{"A.3 removing an object member", `{"baz":"qux","foo":"bar"}`, `[{"op":"remove","path":"/baz"}]`, `{"foo":"bar"}`},
	{"A.4 removing an array element", `{"foo":["bar","qux","baz"]}`, `[{"op":"remove","path":"/foo/1"}]`, `{"foo":["bar","baz"]}`},
	{"A.5 replacing a value", `{"baz":"qux","foo":"bar"}`, `[{"op":"replace","path":"/baz","value":"boo"}]`, `{"baz":"boo","foo":"bar"}`},
	{"A.6 moving a value", `{"foo":{"bar":"baz","waldo":"fred"},"qux":{"corge":"grault"}}`, `[{"op":"move","from":"/foo/waldo","path":"/qux/thud"}]`,
		`{"foo":{"bar":"baz"},"qux":{"corge":"grault","thud":"fred"}}`},
	{"A.7 moving an array element", `{"foo":["all","grass","cows","eat"]}`, `[{"op":"move","from":"/foo/1","path":"/foo/3"}]`, `{"foo":["all","cows","eat","grass"]}`},
	{"A.8 testing a value: success", `{"baz":"qux","foo":["a",2,"c"]}`, `[{"op":"test","path":"/baz","value":"qux"},{"op":"test","path":"/foo/1","value":2}]`,
		`{"baz":"qux","foo":["a",2,"c"]}`},
	{"A.9 testing a value: error", `{"baz":"qux"}`, `[{"op":"test","path":"/baz","value":"bar"}]`, ""},
	{"A.10 adding a nested member object", `{"foo":"bar"}`, `[{"op":"add","path":"/child","value":{"grandchild":{}}}]`, `{"foo":"bar","child":{"grandchild":{}}}`},
	{"A.12 adding to a nonexistent target", `{"foo":"bar"}`, `[{"op":"add","path":"/baz/bat","value":"qux"}]`, ""},
	{"A.14 ~ escape ordering", `{"/":9,"~1":10}`, `[{"op":"test","path":"/~01","value":10}]`, `{"/":9,"~1":10}`},
	{"A.15 comparing strings and numbers", `{"/":9,"~1":10}`, `[{"op":"test","path":"/~01","value":"10"}]`, ""},
	{"A.16 adding an array value", `{"foo":["bar"]}`, `[{"op":"add","path":"/foo/-","value":["abc","def"]}]`, `{"foo":["bar",["abc","def"]]}`},
	{"RFC 6901 §3 a/b", `{"a/b":1,"m~n":2}`, `[{"op":"replace","path":"/a~1b","value":3},{"op":"remove","path":"/m~0n"}]`, `{"a/b":3}`},
	// And what RFC 6901 does not allow.
	{"negative index", `{"foo":["bar","baz"]}`, `[{"op":"remove","path":"/foo/-1"}]`, ""},
	{"pointer without /", `{"foo":"bar"}`, `[{"op":"replace","path":"foo","value":1}]`, ""},
	{"relative pointer", `{"a":{"b":1}}`, `[{"op":"replace","path":"a/b","value":2}]`, ""},
	{"relative pointer, add", `{"a":{}}`, `[{"op":"add","path":"a/b","value":1}]`, ""}, // the library would add /b
	{"bad escape", `{"~2":1}`, `[{"op":"remove","path":"/~2"}]`, ""},
	{"unknown op", `{"foo":"bar"}`, `[{"op":"bogus","path":"/foo"}]`, ""},
	// All or nothing: the first operation applies only if the second does.
	{"atomic", `{"foo":"bar"}`, `[{"op":"add","path":"/baz","value":1},{"op":"test","path":"/foo","value":"qux"}]`, ""},
}

func TestRFC6902AppendixA(t *testing.T) {
	for _, c := range rfc6902AppendixA {
		check(t, c.name, c.doc, c.patch, c.want, Options{})
	}
}

// With ReplaceAbsent, a replace of a member an object lacks adds it (what
// free5GC's UDM sends for an AMF registration without pei), judged
// against the document the operations before it made; everything else is
// as RFC 6902 says, and without the option the same replace fails (§4.3).
func TestReplaceAbsent(t *testing.T) {
	cases := []struct{ name, doc, patch, want string }{
		{"absent member", `{"guami":{"amfId":"cafe00"}}`, `[{"op":"replace","path":"/pei","value":"imeisv-1"}]`,
			`{"guami":{"amfId":"cafe00"},"pei":"imeisv-1"}`},
		{"absent nested member", `{"a":{}}`, `[{"op":"replace","path":"/a/b~1c","value":1}]`, `{"a":{"b/c":1}}`},
		{"present member", `{"pei":"x"}`, `[{"op":"replace","path":"/pei","value":"y"}]`, `{"pei":"y"}`},
		{"removed by the operation before", `{"pei":"x"}`, `[{"op":"remove","path":"/pei"},{"op":"replace","path":"/pei","value":"y"}]`, `{"pei":"y"}`},
		{"missing parent", `{}`, `[{"op":"replace","path":"/a/b","value":1}]`, ""},
		{"missing array element", `{"a":[1]}`, `[{"op":"replace","path":"/a/1","value":2}]`, ""},
		{"atomic", `{"a":1}`, `[{"op":"replace","path":"/b","value":2},{"op":"test","path":"/a","value":9}]`, ""},
		{"array parent", `{"a":[1]}`, `[{"op":"replace","path":"/a/b","value":2}]`, ""},
		{"null parent", `{"a":null}`, `[{"op":"replace","path":"/a/b","value":2}]`, ""},
		{"array element", `{"a":[1,2]}`, `[{"op":"replace","path":"/a/1","value":3}]`, `{"a":[1,3]}`},
		// A token that can be an index keeps RFC 6902's replace, on an
		// object too (see Options.ReplaceAbsent).
		{"index-like member", `{"m":{}}`, `[{"op":"replace","path":"/m/1","value":2}]`, ""},
		{"index-like member present", `{"m":{"1":1}}`, `[{"op":"replace","path":"/m/1","value":2}]`, `{"m":{"1":2}}`},
	}
	for _, c := range cases {
		check(t, c.name, c.doc, c.patch, c.want, Options{ReplaceAbsent: true})
	}
	check(t, "absent member, RFC 6902", cases[0].doc, cases[0].patch, "", Options{})
}

// TestReplaceAbsentCost: with ReplaceAbsent a patch costs what it costs
// without, one decoding of the document, not one per operation: 64
// replaces of a member next to a 256 KiB one allocate a small multiple
// of the document, where judging each replace against a re-parsed
// document allocated over 64 times it.
func TestReplaceAbsentCost(t *testing.T) {
	big := strings.Repeat("x", 256<<10)
	doc, _ := json.Marshal(map[string]any{"big": big, "guami": map[string]any{"amfId": "cafe00"}})
	patch := make([]models.PatchItem, MaxOperations)
	for i := range patch {
		patch[i] = models.PatchItem{Op: models.PatchOperation_REPLACE, Path: "/pei", Value: fmt.Sprintf("imeisv-%016d", i)}
	}
	allocated := func() uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		out, err := ApplyWith(doc, patch, Options{ReplaceAbsent: true})
		runtime.ReadMemStats(&after)
		if err != nil || !bytes.Contains(out, []byte(`"pei":"imeisv-0000000000000063"`)) {
			t.Fatalf("%s, %v", out[len(out)-80:], err)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	allocated() // warm up
	if got, limit := allocated(), uint64(16*len(doc)); got > limit {
		t.Errorf("%d operations on a %d-byte document allocated %d bytes, more than %d", len(patch), len(doc), got, limit)
	}
}

// TestBounds: a patch over MaxOperations, a document, a patch or a
// result over MaxDocument, and copies that grow the document past it are
// refused with ErrTooLarge, with or without ReplaceAbsent; at the bounds
// the patch applies.
func TestBounds(t *testing.T) {
	replaces := func(n int) []models.PatchItem {
		p := make([]models.PatchItem, n)
		for i := range p {
			p[i] = models.PatchItem{Op: models.PatchOperation_REPLACE, Path: "/a", Value: i}
		}
		return p
	}
	half := strings.Repeat("x", MaxDocument/2)
	withHalf, _ := json.Marshal(map[string]string{"a": "", "h": half})
	over, _ := json.Marshal(map[string]string{"a": "", "h": half + half})
	cases := []struct {
		name  string
		doc   []byte
		patch []models.PatchItem
		ok    bool
	}{
		{"MaxOperations", []byte(`{"a":0}`), replaces(MaxOperations), true},
		{"one operation more", []byte(`{"a":0}`), replaces(MaxOperations + 1), false},
		{"half the size", withHalf, replaces(1), true},
		{"document over", over, replaces(1), false},
		{"patch over", []byte(`{"a":0}`), []models.PatchItem{
			{Op: models.PatchOperation_ADD, Path: "/b", Value: half},
			{Op: models.PatchOperation_ADD, Path: "/c", Value: half},
			{Op: models.PatchOperation_REMOVE, Path: "/b"}, {Op: models.PatchOperation_REMOVE, Path: "/c"}}, false},
		{"result over", withHalf, []models.PatchItem{{Op: models.PatchOperation_ADD, Path: "/b", Value: half}}, false},
		{"copies over", withHalf, []models.PatchItem{
			{Op: models.PatchOperation_COPY, From: "/h", Path: "/b"}, {Op: models.PatchOperation_COPY, From: "/h", Path: "/c"},
			{Op: models.PatchOperation_REMOVE, Path: "/b"}, {Op: models.PatchOperation_REMOVE, Path: "/c"}}, false},
	}
	for _, c := range cases {
		for _, o := range []Options{{}, {ReplaceAbsent: true}} {
			_, err := ApplyWith(c.doc, c.patch, o)
			if c.ok && err != nil {
				t.Errorf("%s (%+v): %v", c.name, o, err)
			}
			if !c.ok && !errors.Is(err, ErrTooLarge) {
				t.Errorf("%s (%+v): %v, want ErrTooLarge", c.name, o, err)
			}
		}
	}
}

// check applies patch to doc with o and compares with want ("" for an
// error), and that doc was left as it was.
func check(t *testing.T, name, docText, patchText, want string, o Options) {
	t.Helper()
	var patch []models.PatchItem
	if err := json.Unmarshal([]byte(patchText), &patch); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	doc := []byte(docText)
	got, err := ApplyWith(doc, patch, o)
	if string(doc) != docText {
		t.Errorf("%s: the input document changed to %s", name, doc)
	}
	if want == "" {
		if err == nil {
			t.Errorf("%s: applied, giving %s; want an error", name, got)
		}
		return
	}
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: result %s: %v", name, got, err)
	}
	_ = json.Unmarshal([]byte(want), &w)
	gj, _ := json.Marshal(g) // sorted keys: comparable
	wj, _ := json.Marshal(w)
	if !bytes.Equal(gj, wj) {
		t.Errorf("%s: %s, want %s", name, gj, wj)
	}
}
