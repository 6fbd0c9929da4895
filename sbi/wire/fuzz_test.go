package wire_test

import (
	"errors"
	"testing"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/wire"
	"github.com/tern5g/tern/sbi/wire/wiretest"
)

// fuzzTargets are the types FuzzDecode decodes into; the first input byte
// picks one. They cover every kind: maps of structs, times, interfaces
// holding registered and JSON-like values, byte slices.
func fuzzTargets() []func() any {
	return []func() any{
		func() any { return new(models.Smf_PDUSess_SmContextCreateData) },
		func() any { return new(models.Ausf_UEAU_UEAuthenticationCtx) },
		func() any { return new(sbi.SMContextUpdate) },
		func() any { return new([]models.Udm_SDM_SessionManagementSubscriptionData) },
		func() any { return new(models.Pcf_SMPolCtrl_SmPolicyDecision) },
		func() any { return new(models.Nrf_NFDisc_SearchResult) },
		func() any { return new(holder) },
		func() any { return new(kinds) },
	}
}

// FuzzDecode: no input makes Decode panic or return an error of another
// kind, and what it accepts encodes and decodes again. The seeds are real
// encodings of every target (go test runs them; go test -fuzz explores).
func FuzzDecode(f *testing.F) {
	c := newCodec(f, wire.SBITypes()...)
	targets := fuzzTargets()
	for i, newT := range targets {
		for _, fill := range []func(any){func(any) {}, fillSBI} {
			v := newT()
			fill(v)
			if h, ok := v.(*holder); ok {
				h.V = []any{map[string]any{"a": 1.5, "b": nil}, "s", true}
			}
			msg, err := c.Append(nil, v)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(byte(i), msg)
		}
	}
	for _, s := range wiretest.Samples() {
		msg, err := c.Append(nil, s.Value)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(byte(0), msg) // the wrong target for most: a layout mismatch
	}
	f.Fuzz(func(t *testing.T, pick byte, msg []byte) {
		newT := targets[int(pick)%len(targets)]
		v := newT()
		err := c.Decode(msg, v)
		if err != nil {
			if !errors.Is(err, wire.ErrMalformed) && !errors.Is(err, wire.ErrLayoutMismatch) {
				t.Fatalf("error of no kind: %v", err)
			}
			return
		}
		again, err := c.Append(nil, v)
		if err != nil {
			t.Fatalf("decoded value does not encode: %v", err)
		}
		if err := c.Decode(again, newT()); err != nil {
			t.Fatalf("re-encoding does not decode: %v", err)
		}
	})
}
