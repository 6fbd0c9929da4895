package identity

import (
	"crypto/rand"
	"fmt"
)

// NewNFInstanceID returns a random UUID (RFC 9562 version 4), the form of
// an NF instance ID (TS 29.571 NfInstanceId). A restarted NF that does not
// configure one is a new instance.
func NewNFInstanceID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
