package openapitest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// yamlCache holds every 3GPP file parsed so far in this process, keyed by
// absolute path. The files are large (CommonData and Subscription_Data run to
// thousands of lines) and nearly every API refers to CommonData, so parsing
// each once per process keeps a test binary that checks all twelve APIs fast.
// It is the package's only global state besides apiCache.
var yamlCache sync.Map // string -> *yamlEntry

type yamlEntry struct {
	once sync.Once
	tree map[string]any
	err  error
}

// readYAML returns the parsed tree of file in dir, reading it on first use.
// The tree is shared: callers must not modify it (the bundler copies).
// A missing file reports an error wrapping fs.ErrNotExist.
func readYAML(dir, file string) (map[string]any, error) {
	p := filepath.Join(dir, file)
	e, _ := yamlCache.LoadOrStore(p, &yamlEntry{})
	ent := e.(*yamlEntry)
	ent.once.Do(func() {
		data, err := os.ReadFile(p)
		if err != nil {
			ent.err = err
			return
		}
		var v any
		if err := yaml.Unmarshal(data, &v); err != nil {
			ent.err = fmt.Errorf("parse %s: %w", file, err)
			return
		}
		m, ok := normalize(v).(map[string]any)
		if !ok {
			ent.err = fmt.Errorf("parse %s: top level is not a mapping", file)
			return
		}
		ent.tree = m
	})
	return ent.tree, ent.err
}

// normalize turns the map[any]any that yaml.v3 produces for mappings with
// non-string keys (3GPP sometimes writes response codes unquoted: `200:`)
// into map[string]any, so the tree marshals to JSON.
func normalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = normalize(x)
		}
		return t
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[fmt.Sprint(k)] = normalize(x)
		}
		return m
	case []any:
		for i, x := range t {
			t[i] = normalize(x)
		}
		return t
	}
	return v
}

// bundle builds one self-contained OpenAPI document (as JSON) for the API in
// root: the root file plus every component it reaches through $refs into the
// other files, copied under its components with a name qualified by the file
// it came from ("TS29571_CommonData.PlmnId").
//
// Why not kin-openapi's own cross-file loader (IsExternalRefsAllowed)? On
// these files it fails:
//   - a local ref ("#/components/schemas/SorCmci") inside a schema that was
//     itself reached from another file is resolved against the wrong
//     document ("map key SorCmci not found" while loading Namf_Communication;
//     the same for TsnPortNumber while loading Npcf_SMPolicyControl);
//   - the set of files is not closed: TS29534_Npcf_AMPolicyAuthorization
//     refers to TS29555_N5g-ddnmf_Discovery.yaml, which is not in
//     shared/openapi, and the loader walks every ref of every file it opens
//     (not just the ones the API needs), so every API fails to load.
//
// Bundling only the components an API reaches sidesteps both: a target that
// is missing (file or component) becomes a permissive stub, recorded in
// stubs, so validation still covers everything else.
func bundle(dir, root string) (doc []byte, stubs []string, err error) {
	b := &bundler{dir: dir, root: root, names: map[compKey]string{}, out: map[string]map[string]any{}}
	tree, err := readYAML(dir, root)
	if err != nil {
		return nil, nil, err
	}
	top, err := b.rewrite(tree, root, "")
	if err != nil {
		return nil, nil, err
	}
	for len(b.queue) > 0 {
		k := b.queue[0]
		b.queue = b.queue[1:]
		if err := b.importComponent(k); err != nil {
			return nil, nil, err
		}
	}
	m := top.(map[string]any)
	comps, _ := m["components"].(map[string]any)
	if comps == nil {
		comps = map[string]any{}
		m["components"] = comps
	}
	for kind, add := range b.out {
		have, _ := comps[kind].(map[string]any)
		if have == nil {
			have = map[string]any{}
			comps[kind] = have
		}
		for name, v := range add {
			have[name] = v
		}
	}
	m["servers"] = []any{map[string]any{"url": basePath(m["servers"])}}
	doc, err = json.Marshal(m)
	if err != nil {
		return nil, nil, fmt.Errorf("bundle %s: marshal: %w", root, err)
	}
	slices.Sort(b.stubs)
	return doc, b.stubs, nil
}

// basePath reduces the 3GPP server URL "{apiRoot}/nausf-auth/v1" to the path
// "/nausf-auth/v1". The router would otherwise substitute the variable's
// default ("https://example.com") and match only that host; tern's
// endpoints live on whatever address a test gave them. A file with no
// servers (Nnrf_AccessToken: its path is the absolute /oauth2/token) gets "/".
func basePath(servers any) string {
	list, _ := servers.([]any)
	if len(list) == 0 {
		return "/"
	}
	s, _ := list[0].(map[string]any)
	u, _ := s["url"].(string)
	if strings.HasPrefix(u, "{") {
		if i := strings.Index(u, "}"); i >= 0 {
			u = u[i+1:]
		}
	} else if p, err := url.Parse(u); err == nil {
		u = p.Path
	}
	if u == "" {
		u = "/"
	}
	return u
}

type compKey struct{ file, kind, name string }

type bundler struct {
	dir, root string
	names     map[compKey]string // components imported (or queued), by new name
	queue     []compKey
	out       map[string]map[string]any // kind -> new name -> value
	stubs     []string
}

// rewrite deep-copies v, which comes from file, rewriting each $ref so it
// resolves inside the bundle. where is a JSON path for error messages.
func (b *bundler) rewrite(v any, file, where string) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		if ref, ok := t["$ref"].(string); ok {
			return b.rewriteRef(ref, file, where)
		}
		m := make(map[string]any, len(t))
		for k, x := range t {
			y, err := b.rewrite(x, file, where+"/"+k)
			if err != nil {
				return nil, err
			}
			m[k] = y
		}
		closeEnum(m)
		if m["type"] == "array" && m["items"] == nil {
			// OpenAPI 3.0 requires items with type array; 3GPP leaves
			// it out (Subscription_Data's OperatorSpecificDataContainer
			// value: oneOf [..., {type: array}]), meaning any items, and
			// kin-openapi rejects the document without it.
			m["items"] = map[string]any{}
		}
		return m, nil
	case []any:
		s := make([]any, len(t))
		for i, x := range t {
			y, err := b.rewrite(x, file, fmt.Sprintf("%s/%d", where, i))
			if err != nil {
				return nil, err
			}
			s[i] = y
		}
		return s, nil
	}
	return v, nil
}

// rewriteRef maps one $ref found in file. Siblings of $ref are dropped, as
// OpenAPI 3.0 says they are ignored.
func (b *bundler) rewriteRef(ref, file, where string) (any, error) {
	target, frag, _ := strings.Cut(ref, "#")
	target = strings.TrimSpace(target)
	if target == "" {
		target = file
	} else {
		target = path.Clean(target)
	}
	parts, err := splitPointer(frag)
	if err != nil {
		return nil, fmt.Errorf("%s%s: $ref %q: %w", file, where, ref, err)
	}
	switch {
	case len(parts) == 3 && parts[0] == "components":
		kind, name := parts[1], parts[2]
		if target == b.root {
			// The root file's own components are copied with the root.
			return map[string]any{"$ref": "#/components/" + kind + "/" + name}, nil
		}
		k := compKey{target, kind, name}
		n, ok := b.names[k]
		if !ok {
			n = strings.TrimSuffix(target, path.Ext(target)) + "." + name
			b.names[k] = n
			b.queue = append(b.queue, k)
		}
		return map[string]any{"$ref": "#/components/" + kind + "/" + n}, nil
	case len(parts) == 2 && parts[0] == "paths":
		// Nudr_DR's paths are refs to path items in Subscription_Data,
		// Policy_Data and the other data files: inline them (a path item
		// cannot live under components in OpenAPI 3.0).
		tree, err := readYAML(b.dir, target)
		if err != nil {
			return nil, fmt.Errorf("%s%s: $ref %q: %w", file, where, ref, err)
		}
		paths, _ := tree["paths"].(map[string]any)
		item, ok := paths[parts[1]]
		if !ok {
			return nil, fmt.Errorf("%s%s: $ref %q: no such path in %s", file, where, ref, target)
		}
		return b.rewrite(item, target, "/paths/"+parts[1])
	}
	return nil, fmt.Errorf("%s%s: $ref %q: unsupported target (want #/components/<kind>/<name> or #/paths/<path>)", file, where, ref)
}

// importComponent copies one component from another file into the bundle,
// or a stub when the file or the component is missing.
func (b *bundler) importComponent(k compKey) error {
	name := b.names[k]
	if b.out[k.kind] == nil {
		b.out[k.kind] = map[string]any{}
	}
	tree, err := readYAML(b.dir, k.file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	var v any
	if tree != nil {
		comps, _ := tree["components"].(map[string]any)
		kind, _ := comps[k.kind].(map[string]any)
		v = kind[k.name]
	}
	if v == nil {
		stub, err := b.stub(k)
		if err != nil {
			return err
		}
		b.out[k.kind][name] = stub
		return nil
	}
	c, err := b.rewrite(v, k.file, "/components/"+k.kind+"/"+k.name)
	if err != nil {
		return err
	}
	b.out[k.kind][name] = c
	return nil
}

// stub stands in for a component the files do not have: a schema that
// accepts anything, or a response with no content. Either means that part
// of a message goes unchecked, so each is recorded (TestLoadAll logs them;
// with the files as they are, none of the twelve APIs reaches one).
func (b *bundler) stub(k compKey) (any, error) {
	what := k.file + "#/components/" + k.kind + "/" + k.name
	desc := "openapitest stub: " + what + " is missing from the OpenAPI directory"
	switch k.kind {
	case "schemas":
		b.stubs = append(b.stubs, what)
		return map[string]any{"description": desc}, nil
	case "responses":
		b.stubs = append(b.stubs, what)
		return map[string]any{"description": desc}, nil
	}
	return nil, fmt.Errorf("bundle %s: %s is missing and cannot be stubbed", b.root, what)
}

// splitPointer splits a $ref fragment ("/components/schemas/X", or
// "/paths/~1subscription-data~1%7BueId%7D") into its unescaped segments: the
// fragment is percent-encoded (RFC 3986) around a JSON pointer (RFC 6901).
func splitPointer(frag string) ([]string, error) {
	frag, err := url.PathUnescape(frag)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, fmt.Errorf("fragment %q is not a JSON pointer", frag)
	}
	parts := strings.Split(frag[1:], "/")
	for i, p := range parts {
		parts[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(p)
	}
	return parts, nil
}

// closeEnum turns 3GPP's extensible enumeration
//
//	anyOf: [{type: string, enum: [A, B]}, {type: string, description: ...}]
//
// into the closed {type: string, enum: [A, B]}. The open alternative exists
// so that a receiver accepts values of later releases (TS 29.501 §5.2.3.2.3);
// with it, any string passes and a misspelt or empty enum value from tern
// would go unnoticed. tern is both sender and receiver of everything these
// tests see, and speaks Release 17, so holding it to the listed values is
// the check worth having.
func closeEnum(m map[string]any) {
	alts, _ := m["anyOf"].([]any)
	if len(alts) != 2 {
		return
	}
	var enum map[string]any
	open := false
	for _, a := range alts {
		x, _ := a.(map[string]any)
		switch {
		case x == nil:
			return
		case x["enum"] != nil && x["type"] == "string":
			enum = x
		case x["type"] == "string" && len(x) <= 2 && (len(x) == 1 || x["description"] != nil):
			open = true
		}
	}
	if enum == nil || !open {
		return
	}
	delete(m, "anyOf")
	for k, v := range enum {
		if _, ok := m[k]; !ok || k == "enum" || k == "type" {
			m[k] = v
		}
	}
}
