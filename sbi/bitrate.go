package sbi

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseBitRate reads a TS 29.571 §5.5.2 BitRate string
// ("^\d+(\.\d+)? (bps|Kbps|Mbps|Gbps|Tbps)$") as bit/s.
func ParseBitRate(s string) (uint64, error) {
	num, unit, ok := strings.Cut(s, " ")
	if !ok {
		return 0, fmt.Errorf("bit rate %q: want \"<number> <unit>\"", s)
	}
	var mult uint64
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
	ip, fp, hasFrac := strings.Cut(num, ".")
	if !allDigits(ip) || (hasFrac && !allDigits(fp)) {
		return 0, fmt.Errorf("bit rate %q: bad number", s)
	}
	whole, err := strconv.ParseUint(ip, 10, 64)
	if err != nil || whole > math.MaxUint64/mult {
		return 0, fmt.Errorf("bit rate %q: out of range", s)
	}
	v := whole * mult
	// Fraction digits beyond the unit's resolution are dropped (sub-bit/s).
	scale := mult
	for i := 0; i < len(fp) && scale > 1; i++ {
		scale /= 10
		v += uint64(fp[i]-'0') * scale
	}
	return v, nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
