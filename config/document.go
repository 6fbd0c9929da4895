package config

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// checkDocument walks a parsed document beside the Config type and fails on
// the first key that is not one of Config's, or whose value cannot be of
// its key's type. The decoder finds the same mistakes but names Go types
// ("field n2Adress not found in type amf.Config", "cannot unmarshal !!str
// `abc` into uint32"); these messages name the key by its path from the
// document's root (amf.tais[0].tac), suggest the key that was probably
// meant, and say what the value should look like.
func checkDocument(doc *yaml.Node) error {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil
	}
	return checkNode(doc.Content[0], reflect.TypeFor[Config](), "")
}

var durationType = reflect.TypeFor[time.Duration]()

// documentError is one mistake, at a line of the document.
func documentError(n *yaml.Node, path, format string, args ...any) error {
	return fmt.Errorf("config: line %d: %s: %s", n.Line, path, fmt.Sprintf(format, args...))
}

func checkNode(n *yaml.Node, t reflect.Type, path string) error {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil // the key's zero value, which means its default
	}
	if t == durationType {
		return checkScalar(n, t, path)
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return documentError(n, root(path), "want a mapping of keys (%s), not %s", strings.Join(keyNames(structKeys(t)), ", "), describe(n))
		}
		keys := structKeys(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" { // <<: *anchor brings in keys of this mapping
				if err := checkMerge(v, t, path); err != nil {
					return err
				}
				continue
			}
			key := join(path, k.Value)
			j := slices.IndexFunc(keys, func(f yamlKey) bool { return f.name == k.Value })
			if j < 0 {
				return unknownKey(k, key, keyNames(keys))
			}
			if err := checkNode(v, keys[j].typ, key); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return documentError(n, path, "want a list (- item lines, or [a, b]), not %s", describe(n))
		}
		for i, item := range n.Content {
			if err := checkNode(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return documentError(n, path, "want a mapping (key: value lines), not %s", describe(n))
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" { // as in a struct: the merged mappings' entries are this map's
				if err := checkMerge(v, t, path); err != nil {
					return err
				}
				continue
			}
			if err := checkNode(v, t.Elem(), join(path, k.Value)); err != nil {
				return err
			}
		}
	case reflect.Interface:
		return nil
	default:
		return checkScalar(n, t, path)
	}
	return nil
}

// checkMerge checks the mappings a merge key (<<) brings into a mapping of
// type t: one, or a list of them.
func checkMerge(v *yaml.Node, t reflect.Type, path string) error {
	if v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	if v.Kind != yaml.SequenceNode {
		return checkNode(v, t, path)
	}
	for _, m := range v.Content {
		if err := checkNode(m, t, path); err != nil {
			return err
		}
	}
	return nil
}

// checkScalar decodes n into a value of type t as the decoder will, and
// explains a failure by what t expects.
func checkScalar(n *yaml.Node, t reflect.Type, path string) error {
	if n.Kind != yaml.ScalarNode {
		return documentError(n, path, "want %s, not %s", expected(t), describe(n))
	}
	if n.Decode(reflect.New(t).Interface()) == nil {
		return nil
	}
	v := n.Value
	switch {
	case t == durationType:
		if _, err := strconv.ParseFloat(v, 64); err == nil {
			return documentError(n, path, "%s is not a duration: write %ss (a number with a unit: ms, s, m, h)", v, v)
		}
		return documentError(n, path, "%q is not a duration: write it as a number with a unit, like 5s, 500ms or 2m", v)
	case isInt(t.Kind()):
		if _, err := strconv.ParseFloat(strings.ReplaceAll(v, "_", ""), 64); err == nil {
			if n.Tag == "!!str" {
				return documentError(n, path, "%q is quoted: write the number without quotes (%s)", v, expected(t))
			}
			return documentError(n, path, "%s is out of range: want %s", v, expected(t))
		}
		return documentError(n, path, "%q is not a number: want %s", v, expected(t))
	}
	return documentError(n, path, "%q is not %s", v, expected(t))
}

func isInt(k reflect.Kind) bool {
	return (k >= reflect.Int && k <= reflect.Int64) || (k >= reflect.Uint && k <= reflect.Uintptr)
}

// expected says in words what a scalar of type t looks like (checkNode
// explains mappings and lists itself).
func expected(t reflect.Type) string {
	if t == durationType {
		return "a duration, like 5s or 500ms"
	}
	switch k := t.Kind(); {
	case k >= reflect.Int && k <= reflect.Int64:
		bits := t.Bits()
		return fmt.Sprintf("a whole number from %d to %d", -(int64(1) << (bits - 1)), int64(1)<<(bits-1)-1)
	case k >= reflect.Uint && k <= reflect.Uintptr:
		return fmt.Sprintf("a whole number from 0 to %d", uint64(math.MaxUint64)>>(64-t.Bits()))
	case k == reflect.Float32 || k == reflect.Float64:
		return "a number"
	case k == reflect.Bool:
		return "true or false"
	case k == reflect.String:
		return "a string"
	}
	return t.String()
}

// describe names what a node is, for "want X, not Y".
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return strconv.Quote(n.Value)
}

// unknownKey reports key, which is not one of valid: the key it was
// renamed to, or the nearest valid one, or all of them.
func unknownKey(k *yaml.Node, key string, valid []string) error {
	if now, ok := renamedKeys[key]; ok {
		return fmt.Errorf("config: line %d: %s is now spelled %s", k.Line, key, now)
	}
	if near := nearest(k.Value, valid); near != "" {
		return documentError(k, key, "no such key; did you mean %s?", near)
	}
	return documentError(k, key, "no such key (the keys here: %s)", strings.Join(valid, ", "))
}

// nearest returns the key of valid that word is most likely a misspelling
// of: the same but for case, or within an edit distance of about one
// letter in four; "" if none is that close.
func nearest(word string, valid []string) string {
	best, bestD := "", math.MaxInt
	for _, v := range valid {
		if d := editDistance(strings.ToLower(word), strings.ToLower(v)); d < bestD {
			best, bestD = v, d
		}
	}
	if bestD <= max(1, len(word)/4) {
		return best
	}
	return ""
}

// editDistance is the number of letters to insert, delete, change or swap
// with their neighbour to turn a into b (the optimal string alignment
// distance: a swap, the commonest slip, counts as one).
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// yamlKey is one key of a struct type and the type of its value.
type yamlKey struct {
	name string
	typ  reflect.Type
}

// structKeys lists the YAML keys of struct type t in declaration order, as
// yaml.v3 names them: the tag's name, or the field's name in lower case,
// with the keys of ",inline" fields in their parent's place.
func structKeys(t reflect.Type) []yamlKey {
	var keys []yamlKey
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if slices.Contains(strings.Split(opts, ","), "inline") {
			keys = append(keys, structKeys(f.Type)...)
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		keys = append(keys, yamlKey{name, f.Type})
	}
	return keys
}

func keyNames(keys []yamlKey) []string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.name
	}
	return names
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// root names the document's root in messages.
func root(path string) string {
	if path == "" {
		return "the document"
	}
	return path
}
