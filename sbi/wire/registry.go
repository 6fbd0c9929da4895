package wire

import (
	"fmt"
	"reflect"

	"github.com/free5gc/openapi/models"
)

// SBITypes lists the concrete types tern puts in interface fields of the
// sbi models: the 5G-AKA vector in Ausf_UEAU_UEAuthenticationCtx.
// Var5gAuthData (see sbi.Av5gAkaOf). The other interface fields of the
// models tern uses hold JSON-like values or nothing.
func SBITypes() []any {
	return []any{models.Ausf_UEAU_Av5gAka{}}
}

// registered is a concrete type that may travel in an interface field.
type registered struct {
	name string // typeName, which its ID is the hash of
	id   uint64
	plan *plan // with its own layout hash, which the tag carries
}

// registry is filled by New and read-only afterwards, so lookups need no
// lock.
type registry struct {
	byID   map[uint64]*registered
	byType map[reflect.Type]*registered
}

func (r *registry) add(values []any) error {
	r.byID = make(map[uint64]*registered)
	r.byType = make(map[reflect.Type]*registered)
	for _, v := range values {
		if v == nil {
			return fmt.Errorf("wire: New: a nil value names no type: %w", ErrUnsupported)
		}
		t := reflect.TypeOf(v)
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		// Both T and *T: sbi.Av5gAkaOf accepts either in Var5gAuthData.
		for _, t := range []reflect.Type{t, reflect.PointerTo(t)} {
			if err := r.addType(t); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *registry) addType(t reflect.Type) error {
	if _, ok := r.byType[t]; ok {
		return nil
	}
	p, err := compile(t)
	if err != nil {
		return err // names the type and the field without a layout
	}
	name := typeName(t)
	e := &registered{name: name, id: fnv64a([]byte(name)), plan: p}
	if o, ok := r.byID[e.id]; ok {
		return fmt.Errorf("wire: New: %s and %s have the same ID %016x: %w", o.name, name, e.id, ErrUnsupported)
	}
	r.byID[e.id] = e
	r.byType[t] = e
	return nil
}

// typeName is the stable name a registered type's ID is the hash of: the
// import path and name ("github.com/free5gc/openapi/models.Snssai"), "*"
// before a pointer's, or the literal of an unnamed type.
func typeName(t reflect.Type) string {
	switch {
	case t.Name() != "" && t.PkgPath() != "":
		return t.PkgPath() + "." + t.Name()
	case t.Name() != "":
		return t.Name()
	case t.Kind() == reflect.Pointer:
		return "*" + typeName(t.Elem())
	default:
		return t.String()
	}
}
