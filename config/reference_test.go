package config

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite docs/config.md from the config types")

// referencePath is the configuration reference, generated from the types:
// every key (yaml tags), its default (Default()) and its doc comment.
const referencePath = "../docs/config.md"

// TestConfigReference fails when docs/config.md is not what the types say;
// go generate ./config (go test -run TestConfigReference -args -update)
// rewrites it.
func TestConfigReference(t *testing.T) {
	got := reference(t)
	if *update {
		if err := os.WriteFile(referencePath, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatalf("%v (go generate ./config writes it)", err)
	}
	if string(want) != got {
		t.Errorf("docs/config.md differs from the config types: run go generate ./config")
	}
}

const modulePath = "github.com/tern5g/tern"

// fieldDocs reads the doc comments of the struct fields of a package from
// its source: "Type.Field" -> one line of text.
type fieldDocs map[string]map[string]string // package path -> key -> doc

func (d fieldDocs) get(t *testing.T, typ reflect.Type, field string) string {
	pkg := typ.PkgPath()
	if d[pkg] == nil {
		d[pkg] = parseFieldDocs(t, pkg)
	}
	return d[pkg][typ.Name()+"."+field]
}

func parseFieldDocs(t *testing.T, pkg string) map[string]string {
	rel, ok := strings.CutPrefix(pkg, modulePath)
	if !ok {
		return nil
	}
	dir := filepath.Join("..", filepath.FromSlash(strings.TrimPrefix(rel, "/")))
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pkgs {
		for _, f := range p.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSpec)
				if !ok {
					return true
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					return false
				}
				for _, fld := range st.Fields.List {
					doc := fld.Doc.Text()
					if doc == "" {
						doc = fld.Comment.Text()
					}
					doc = strings.Join(strings.Fields(doc), " ")
					for _, name := range fld.Names {
						out[ts.Name.Name+"."+name.Name] = doc
					}
				}
				return false
			})
		}
	}
	return out
}

type refRow struct{ key, def, doc string }

func reference(t *testing.T) string {
	docs := fieldDocs{}
	var b strings.Builder
	b.WriteString(`# Configuration reference

<!-- Generated from the config types by go generate ./config; do not edit. -->

` + "`tern up --config FILE`" + ` reads one YAML document over the embedded defaults: a key left out
keeps its default, an unknown key is an error, and a list replaces the default list whole (its
items get the per-item defaults). ` + "`tern config [--config FILE]`" + ` prints the effective
configuration. Durations are Go durations (` + "`500ms`, `6s`, `54m`" + `).

`)
	def := Default()
	v := reflect.ValueOf(def)
	typ := v.Type()
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		fmt.Fprintf(&b, "## %s\n\n", name)
		var rows []refRow
		if f.Type.Kind() == reflect.Struct {
			if doc := docs.get(t, typ, f.Name); doc != "" {
				b.WriteString(doc + "\n\n")
			}
			rows = walk(t, docs, v.Field(i), name+".")
		} else {
			rows = []refRow{{name, defaultOf(v.Field(i)), docs.get(t, typ, f.Name)}}
		}
		b.WriteString("| key | default | description |\n|---|---|---|\n")
		for _, r := range rows {
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", r.key, r.def, strings.ReplaceAll(r.doc, "|", `\|`))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// walk lists the keys of struct v under prefix; a list of structs shows its
// default length, then its items' keys under "name[].".
func walk(t *testing.T, docs fieldDocs, v reflect.Value, prefix string) []refRow {
	var rows []refRow
	typ := v.Type()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			rows = append(rows, walk(t, docs, v.Field(i), prefix)...)
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		key, doc, fv := prefix+name, docs.get(t, typ, f.Name), v.Field(i)
		ft := f.Type
		switch {
		case ft.Kind() == reflect.Struct && ft != durationType:
			rows = append(rows, walk(t, docs, fv, key+".")...)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			n := fmt.Sprintf("%d entries", fv.Len())
			if fv.Len() == 1 {
				n = "1 entry"
			}
			rows = append(rows, refRow{key, n, doc})
			// The items' defaults: the first default item, or zero.
			item := reflect.New(ft.Elem()).Elem()
			if fv.Len() > 0 {
				item = fv.Index(0)
			}
			for _, r := range walk(t, docs, item, key+"[].") {
				if fv.Len() > 0 && r.def != "—" {
					r.def = "e.g. " + r.def
				}
				rows = append(rows, r)
			}
		default:
			rows = append(rows, refRow{key, defaultOf(fv), doc})
		}
	}
	return rows
}

// defaultOf renders a default value for the table.
func defaultOf(v reflect.Value) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "—"
		}
		v = v.Elem()
	}
	if v.Type() == durationType {
		d := v.Interface().(time.Duration)
		if d == 0 {
			return "—"
		}
		return "`" + d.String() + "`"
	}
	switch v.Kind() {
	case reflect.String:
		if v.String() == "" {
			return "—"
		}
		if v.String() == DefaultStorePath() {
			// Per user: the table must not depend on who generates it.
			return "`$XDG_DATA_HOME/tern/subscribers.db` or `~/.local/share/tern/subscribers.db`"
		}
		return "`" + v.String() + "`"
	case reflect.Slice:
		if v.Len() == 0 {
			return "—"
		}
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = fmt.Sprint(v.Index(i).Interface())
		}
		return "`" + strings.Join(parts, ", ") + "`"
	case reflect.Map:
		if v.Len() == 0 {
			return "—"
		}
		keys := make([]string, 0, v.Len())
		for _, k := range v.MapKeys() {
			keys = append(keys, fmt.Sprintf("%v: %v", k.Interface(), v.MapIndex(k).Interface()))
		}
		sort.Strings(keys)
		return "`" + strings.Join(keys, ", ") + "`"
	case reflect.Bool:
		return fmt.Sprintf("`%v`", v.Bool())
	}
	if v.IsZero() {
		return "—"
	}
	return fmt.Sprintf("`%v`", v.Interface())
}
