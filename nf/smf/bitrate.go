package smf

// kbps converts bit/s to the kbit/s of PFCP's MBR IE (§8.2.8), rounding up
// so that a small non-zero rate never becomes "no traffic".
func kbps(bps uint64) uint64 {
	k := bps / 1000
	if bps%1000 != 0 {
		k++
	}
	return k
}
