// Package pcap writes UDP datagrams to a classic libpcap file so that tern's
// N2 (SCTP over UDP, RFC 6951), N4 (PFCP) and N3 (GTP-U) traffic can be
// inspected with tshark/Wireshark. Datagrams are written as raw IPv4/IPv6
// packets (LINKTYPE_RAW) with synthesized IP and UDP headers, because the
// userspace stacks see only UDP payloads.
package pcap

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/tern5g/tern/internal/ipv4pkt"
)

const (
	magic       = 0xa1b2c3d4 // microsecond timestamps
	linkTypeRaw = 101        // LINKTYPE_RAW: packet begins with an IPv4 or IPv6 header
	snapLen     = 65535
)

// Writer appends packets to a pcap stream. It is safe for concurrent use.
type Writer struct {
	mu  sync.Mutex
	w   *bufio.Writer
	c   io.Closer
	buf []byte
	err error
}

// NewWriter writes the pcap file header to w.
func NewWriter(w io.Writer) (*Writer, error) {
	pw := &Writer{w: bufio.NewWriter(w)}
	if c, ok := w.(io.Closer); ok {
		pw.c = c
	}
	var h [24]byte
	binary.LittleEndian.PutUint32(h[0:], magic)
	binary.LittleEndian.PutUint16(h[4:], 2)
	binary.LittleEndian.PutUint16(h[6:], 4)
	binary.LittleEndian.PutUint32(h[16:], snapLen)
	binary.LittleEndian.PutUint32(h[20:], linkTypeRaw)
	if _, err := pw.w.Write(h[:]); err != nil {
		return nil, fmt.Errorf("pcap: header: %w", err)
	}
	return pw, nil
}

// Create opens path for writing and writes the pcap header.
func Create(path string) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("pcap: %w", err)
	}
	w, err := NewWriter(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// Packet records one UDP datagram seen by a local socket: outbound ones go
// local->remote, inbound ones remote->local. It has the signature of
// sctp.PacketTap (and of the PFCP/GTP-U taps) so a Writer plugs in directly.
func (w *Writer) Packet(outbound bool, local, remote netip.AddrPort, payload []byte) {
	src, dst := remote, local
	if outbound {
		src, dst = local, remote
	}
	w.WriteUDP(time.Now(), src, dst, payload)
}

// WriteUDP records a datagram from src to dst. Errors are sticky and reported
// by Close; a capture must never disturb the traffic it watches.
func (w *Writer) WriteUDP(ts time.Time, src, dst netip.AddrPort, payload []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	pkt := w.buf[:0]
	v6 := src.Addr().Is6() && !src.Addr().Is4In6()
	udpLen := 8 + len(payload)
	if v6 {
		pkt = append(pkt, 0x60, 0, 0, 0)
		pkt = binary.BigEndian.AppendUint16(pkt, uint16(udpLen))
		pkt = append(pkt, 17, 64)
		s, d := src.Addr().As16(), dst.Addr().As16()
		pkt = append(pkt, s[:]...)
		pkt = append(pkt, d[:]...)
	} else {
		pkt = append(pkt, 0x45, 0)
		pkt = binary.BigEndian.AppendUint16(pkt, uint16(20+udpLen))
		pkt = append(pkt, 0, 0, 0x40, 0, 64, 17, 0, 0) // id, DF, ttl, proto, checksum
		s, d := src.Addr().Unmap().As4(), dst.Addr().Unmap().As4()
		pkt = append(pkt, s[:]...)
		pkt = append(pkt, d[:]...)
		binary.BigEndian.PutUint16(pkt[10:], ipv4pkt.Checksum(pkt[:20], 0))
	}
	pkt = binary.BigEndian.AppendUint16(pkt, src.Port())
	pkt = binary.BigEndian.AppendUint16(pkt, dst.Port())
	pkt = binary.BigEndian.AppendUint16(pkt, uint16(udpLen))
	pkt = append(pkt, 0, 0) // UDP checksum 0: "not computed" for IPv4; tshark accepts it
	pkt = append(pkt, payload...)
	w.buf = pkt

	var rh [16]byte
	binary.LittleEndian.PutUint32(rh[0:], uint32(ts.Unix()))
	binary.LittleEndian.PutUint32(rh[4:], uint32(ts.Nanosecond()/1000))
	n := min(len(pkt), snapLen)
	binary.LittleEndian.PutUint32(rh[8:], uint32(n))
	binary.LittleEndian.PutUint32(rh[12:], uint32(len(pkt)))
	if _, err := w.w.Write(rh[:]); err != nil {
		w.err = err
		return
	}
	if _, err := w.w.Write(pkt[:n]); err != nil {
		w.err = err
	}
}

// Flush writes buffered packets to the underlying writer.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return fmt.Errorf("pcap: %w", w.err)
	}
	return w.w.Flush()
}

// Close flushes and closes the underlying file, if any.
func (w *Writer) Close() error {
	err := w.Flush()
	if w.c != nil {
		if cerr := w.c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
