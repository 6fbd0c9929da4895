package amf

import (
	"fmt"

	"github.com/tern5g/tern/ngap"
	"github.com/tern5g/tern/sbi"
)

// maxNGAPBitRate is the root range of the NGAP Bit Rate (TS 38.413
// §9.3.1.4: 0..4,000,000,000,000 bit/s).
const maxNGAPBitRate = 4_000_000_000_000

// ambrFromModel converts a TS 29.571 Ambr/AmbrRm pair to the NGAP
// UE-AMBR (TS 38.413 §9.3.1.58, bit/s).
func ambrFromModel(uplink, downlink string) (ngap.AMBR, error) {
	ul, err := sbi.ParseBitRate(uplink)
	if err != nil {
		return ngap.AMBR{}, fmt.Errorf("uplink: %w", err)
	}
	dl, err := sbi.ParseBitRate(downlink)
	if err != nil {
		return ngap.AMBR{}, fmt.Errorf("downlink: %w", err)
	}
	if ul > maxNGAPBitRate || dl > maxNGAPBitRate {
		return ngap.AMBR{}, fmt.Errorf("UE-AMBR %s/%s above the NGAP range", uplink, downlink)
	}
	return ngap.AMBR{UL: ul, DL: dl}, nil
}
