package ops

import (
	"reflect"
	"regexp"
	"slices"
	"testing"
)

// The table is consistent: IDs are positions, names unique, every path
// parameter has a field and every path field a parameter, and operations
// without a path carry a uri field.
func TestTable(t *testing.T) {
	names := map[string]bool{}
	param := regexp.MustCompile(`\{([^}]+)\}`)
	for i, op := range All {
		if int(op.ID) != i+1 || ByID(op.ID) != op {
			t.Errorf("%s: ID %d at position %d", op, op.ID, i)
		}
		if names[string(op.Name)] {
			t.Errorf("%s: name used twice", op)
		}
		names[string(op.Name)] = true
		for _, typ := range []reflect.Type{op.RequestType(), op.ResponseType()} {
			if _, err := Fields(typ); err != nil {
				t.Error(err)
			}
		}
		fields, _ := Fields(op.RequestType())
		var inPath, tagged []string
		hasURI := false
		for _, m := range param.FindAllStringSubmatch(op.Path, -1) {
			inPath = append(inPath, m[1])
		}
		for _, f := range fields {
			switch f.Kind {
			case "path":
				tagged = append(tagged, f.Name)
			case "uri":
				hasURI = true
			}
		}
		slices.Sort(inPath)
		slices.Sort(tagged)
		if !slices.Equal(inPath, tagged) {
			t.Errorf("%s: path parameters %v, fields %v", op, inPath, tagged)
		}
		if (op.Path == "") != hasURI || (op.Path == "") != (op.Callback != "") {
			t.Errorf("%s: path %q but uri field %v", op, op.Path, hasURI)
		}
	}
	if ByID(0) != nil || ByID(uint16(len(All)+1)) != nil {
		t.Error("ByID out of range answers")
	}
}
