package wire_test

import (
	"errors"
	"math"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tern5g/tern/sbi/wire"
	"github.com/tern5g/tern/sbi/wire/wiretest"
)

type myByte uint8

type kinds struct {
	Bool    bool
	I8      int8
	I16     int16
	I32     int32
	I64     int64
	I       int
	U8      uint8
	U16     uint16
	U32     uint32
	U64     uint64
	U       uint
	Uptr    uintptr
	F32     float32
	F64     float64
	S       string
	B       []byte
	MyBytes []myByte
	BA      [3]byte
	A       [2]string
	P       *int32
	PP      **string
	Sl      []int16
	M       map[int32]string
	MS      map[string][]string
	MK      map[[2]int8]bool
	T       time.Time
	PT      *time.Time
	MT      map[string]time.Time
	Addr    netip.Addr
	AP      netip.AddrPort
	Pfx     netip.Prefix
	PAddr   *netip.Addr
	MAddr   map[netip.Addr]netip.Prefix
	Emb
	Empty struct{}
	Zero  [0]int
	Es    []struct{} // elements of no bytes
	Hid   []hidden   // elements of no exported field
	any   int        // unexported, skipped
}

type Emb struct{ E string }

type hidden struct{ x int }

func TestRoundTripKinds(t *testing.T) {
	c := newCodec(t)
	var v kinds
	wiretest.Fill(&v)
	v.I64, v.U64, v.F64, v.F32 = math.MinInt64, math.MaxUint64, math.Inf(-1), float32(math.NaN())
	got, _ := roundTrip(t, c, &v)
	g := got.(*kinds)
	if !math.IsNaN(float64(g.F32)) {
		t.Fatalf("NaN became %v", g.F32)
	}
	g.F32, v.F32 = 0, 0 // NaN != NaN for DeepEqual
	if !reflect.DeepEqual(g, &v) {
		t.Fatalf("differs at %s", diff(reflect.ValueOf(g), reflect.ValueOf(&v), "kinds"))
	}
	// The zero value, and nil against empty.
	for _, v := range []*kinds{
		{},
		{B: []byte{}, MyBytes: []myByte{}, Sl: []int16{}, M: map[int32]string{}, MS: map[string][]string{"": {}}},
		{F64: math.Copysign(0, -1)}, // -0 is not all zero bits: kept
	} {
		got, _ := roundTrip(t, c, v)
		if !reflect.DeepEqual(got, v) || math.Signbit(got.(*kinds).F64) != math.Signbit(v.F64) {
			t.Errorf("differs at %s", diff(reflect.ValueOf(got), reflect.ValueOf(v), "kinds"))
		}
	}
}

// TestTimes: the instant and offset survive, the zone name and the
// monotonic reading do not (see "Normalisation").
func TestTimes(t *testing.T) {
	c := newCodec(t)
	paris := time.FixedZone("CET", 3600)
	india := time.FixedZone("IST", 5*3600+1800)
	for _, tm := range []time.Time{
		{},
		time.Unix(0, 0).UTC(),
		time.Unix(1_700_000_000, 123456789).UTC(),
		time.Unix(1_700_000_000, 1).In(paris),
		time.Unix(-5_000_000_000, 999_999_999).In(india),
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Now(), // monotonic reading and the Local zone
	} {
		in := struct{ T time.Time }{tm}
		got, _ := roundTrip(t, c, &in)
		out := got.(*struct{ T time.Time }).T
		_, inOff := tm.Zone()
		_, outOff := out.Zone()
		if !out.Equal(tm) || inOff != outOff || out.IsZero() != tm.IsZero() {
			t.Errorf("%v became %v", tm, out)
		}
		if inOff == 0 && out.Location() != time.UTC {
			t.Errorf("%v: offset 0 decoded in %v, want UTC", tm, out.Location())
		}
	}
}

// TestNetip: netip values (whose fields are unexported, so the struct walk
// would see nothing) survive as netip's binary form, zones included, and
// the decoder refuses what netip refuses.
func TestNetip(t *testing.T) {
	c := newCodec(t)
	a4, a6 := netip.MustParseAddr("10.60.0.7"), netip.MustParseAddr("2001:db8::1")
	zoned := netip.MustParseAddr("fe80::1%eth0")
	for _, v := range []*kinds{
		{Addr: a4, AP: netip.AddrPortFrom(a6, 2152), Pfx: netip.MustParsePrefix("10.60.0.0/16")},
		{Addr: zoned, AP: netip.AddrPortFrom(zoned, 8805), Pfx: netip.MustParsePrefix("2001:db8::/32"), PAddr: &a6},
		{Addr: netip.IPv4Unspecified(), MAddr: map[netip.Addr]netip.Prefix{a4: netip.PrefixFrom(a4, 32), a6: {}}},
		{PAddr: new(netip.Addr)}, // a pointer to the zero Addr
	} {
		got, _ := roundTrip(t, c, v)
		if !reflect.DeepEqual(got, v) {
			t.Errorf("differs at %s", diff(reflect.ValueOf(got), reflect.ValueOf(v), "kinds"))
		}
	}
	// An IPv6 zone longer than the layout's bound is refused when
	// encoding, not written for the decoder to refuse.
	long := netip.MustParseAddr("fe80::1%" + strings.Repeat("z", 100))
	if _, err := c.Append(nil, &kinds{Addr: long}); !errors.Is(err, wire.ErrUnsupported) {
		t.Errorf("a 100-byte zone: %v, want ErrUnsupported", err)
	}
	// What netip refuses: 5 address bytes, a prefix longer than 32 bits.
	type one struct{ A netip.Addr }
	type onePfx struct{ P netip.Prefix }
	good, err := c.Append(nil, &one{A: a4})
	if err != nil {
		t.Fatal(err)
	}
	bad := append(append([]byte(nil), good[:len(good)-5]...), 5, 10, 60, 0, 7, 9)
	if err := c.Decode(bad, new(one)); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("5 address bytes: %v, want ErrMalformed", err)
	}
	good, err = c.Append(nil, &onePfx{P: netip.MustParsePrefix("10.0.0.0/8")})
	if err != nil {
		t.Fatal(err)
	}
	bad = append([]byte(nil), good...)
	bad[len(bad)-1] = 33
	if err := c.Decode(bad, new(onePfx)); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("a /33 IPv4 prefix: %v, want ErrMalformed", err)
	}
}
