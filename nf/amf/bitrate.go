package amf

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/tern5g/tern/ngap"
)

// parseBitRate reads a TS 29.571 §5.5.2 BitRate string ("1 Gbps",
// "100.5 Kbps": a number, one space, bps/Kbps/Mbps/Gbps/Tbps) into bit/s.
func parseBitRate(s string) (uint64, error) {
	num, unit, ok := strings.Cut(s, " ")
	if !ok {
		return 0, fmt.Errorf("bit rate %q: want \"<number> <unit>\"", s)
	}
	var mult float64
	switch unit {
	case "bps":
		mult = 1
	case "Kbps":
		mult = 1e3
	case "Mbps":
		mult = 1e6
	case "Gbps":
		mult = 1e9
	case "Tbps":
		mult = 1e12
	default:
		return 0, fmt.Errorf("bit rate %q: unknown unit %q", s, unit)
	}
	if num == "" || strings.IndexFunc(num, func(r rune) bool { return (r < '0' || r > '9') && r != '.' }) >= 0 {
		return 0, fmt.Errorf("bit rate %q: bad number", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("bit rate %q: %w", s, err)
	}
	bps := math.Round(v * mult)
	if bps >= 1<<63 {
		return 0, fmt.Errorf("bit rate %q: too large", s)
	}
	return uint64(bps), nil
}

// maxNGAPBitRate is the root range of the NGAP Bit Rate (TS 38.413
// §9.3.1.4: 0..4,000,000,000,000 bit/s).
const maxNGAPBitRate = 4_000_000_000_000

// ambrFromModel converts a TS 29.571 Ambr/AmbrRm pair to the NGAP
// UE-AMBR (TS 38.413 §9.3.1.58, bit/s).
func ambrFromModel(uplink, downlink string) (ngap.AMBR, error) {
	ul, err := parseBitRate(uplink)
	if err != nil {
		return ngap.AMBR{}, fmt.Errorf("uplink: %w", err)
	}
	dl, err := parseBitRate(downlink)
	if err != nil {
		return ngap.AMBR{}, fmt.Errorf("downlink: %w", err)
	}
	if ul > maxNGAPBitRate || dl > maxNGAPBitRate {
		return ngap.AMBR{}, fmt.Errorf("UE-AMBR %s/%s above the NGAP range", uplink, downlink)
	}
	return ngap.AMBR{UL: ul, DL: dl}, nil
}
