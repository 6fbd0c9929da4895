package store

import (
	"fmt"

	"github.com/tern5g/tern/identity"
)

// Demo subscriber values, the same as free5GC's and UERANSIM's defaults so
// that their UE configurations work unchanged against tern.
var (
	demoPLMN = identity.PLMN{MCC: "208", MNC: "93"}
	demoK    = [16]byte{0x8b, 0xaf, 0x47, 0x3f, 0x2f, 0x8f, 0xd0, 0x94, 0x87, 0xcc, 0xcb, 0xd7, 0x09, 0x7c, 0x68, 0x62}
	demoOPc  = [16]byte{0x8e, 0x27, 0xb6, 0xaf, 0x0e, 0x69, 0x2e, 0x75, 0x0f, 0x32, 0x66, 0x7a, 0x3b, 0x14, 0x60, 0x5d}
)

// Demo subscription constants, exported for simulators and tests.
const (
	DemoSNSSAI = "1-010203"
	DemoDNN    = "internet"
	DemoIMSDNN = "ims"
)

// DemoSUPI returns the SUPI of demo subscriber i (1-based):
// imsi-208930000000001, imsi-208930000000002, ...
func DemoSUPI(i int) string { return identity.IMSI(demoPLMN, fmt.Sprintf("%010d", i)) }

// DefaultSubscribers returns n demo subscribers (IMSI 208930000000001 on),
// all with free5GC's demo K and OPc, AMF 8000, slice SST 1 SD 010203 (default)
// with DNNs "internet" (default; 5QI 9, ARP 8, 1 Gbps session AMBR) and
// "ims" (5QI 5, ARP 1, 10 Mbps session AMBR: IMS signalling, TS 23.501
// Table 5.7.4-1).
func DefaultSubscribers(n int) []Subscriber {
	out := make([]Subscriber, n)
	for i := range out {
		out[i] = Subscriber{
			SUPI:   DemoSUPI(i + 1),
			K:      HexBytes(demoK[:]),
			OP:     HexBytes(demoOPc[:]),
			OPType: OPTypeOPc,
			AMF:    HexBytes{0x80, 0x00},
			UEAMBR: AMBR{Uplink: "1 Gbps", Downlink: "2 Gbps"},
			Slices: []Slice{{
				SNSSAI:  DemoSNSSAI,
				Default: true,
				DNNs: []DNN{{
					Name:        DemoDNN,
					Default:     true,
					SessionAMBR: AMBR{Uplink: "1 Gbps", Downlink: "1 Gbps"},
					FiveQI:      9,
					ARPPriority: 8,
				}, {
					Name:        DemoIMSDNN,
					SessionAMBR: AMBR{Uplink: "10 Mbps", Downlink: "10 Mbps"},
					FiveQI:      5,
					ARPPriority: 1,
				}},
			}},
		}
		out[i] = out[i].Clone() // no shared backing arrays between records
	}
	return out
}
