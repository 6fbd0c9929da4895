package config

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tern5g/tern/sbi/shm"
)

// SBI configures how the NFs reach each other over the service-based
// interface (see docs/sbi.md).
type SBI struct {
	// Binding is how `tern up` connects its NFs: inproc (Go calls, the
	// default and the fastest), http (HTTP/2 over loopback, the standard
	// binding) or shm (shared memory). NFs run by `tern nf` always use
	// HTTP/2 between processes.
	Binding string `yaml:"binding"`
	// Scheme is http (HTTP/2 cleartext, h2c: the default) or https
	// (HTTP/2 over TLS with tls.cert and tls.key).
	Scheme string `yaml:"scheme"`
	// TLS holds the certificate of every NF's server (PEM files) and the
	// CA that signed its peers' (empty: the system roots).
	TLS SBITLS `yaml:"tls,omitempty"`
	// Listen is the SBI address, host:port, of each NF (nrf, amf, smf,
	// ausf, udm, udr, pcf, nssf) run by `tern nf NAME`. tern up --sbi
	// http|shm gives every NF a free loopback port instead.
	Listen map[string]string `yaml:"listen"`
	// NRF is the apiRoot of the NRF that NFs run by `tern nf` register
	// with and find their peers through. Empty: scheme://listen.nrf.
	NRF string `yaml:"nrf,omitempty"`
	// ShmDir is the directory of the shared-memory pool (binding shm); it
	// is created with mode 0700. Empty: a directory under $XDG_RUNTIME_DIR
	// or /dev/shm named after the process.
	ShmDir string `yaml:"shmDir,omitempty"`
	// ShmBusyPoll is how long each end of a shared-memory ring polls for
	// the next message before it sleeps on its futex (default 20µs). While
	// calls follow each other, neither end sleeps, so a call costs no
	// wake-up: ≈5 µs instead of ≈12 µs (docs/benchmarks.md). The price is
	// up to this much CPU after each message; 0 sleeps at once.
	ShmBusyPoll time.Duration `yaml:"shmBusyPoll,omitempty"`
	// ShmRingSlots is how many messages a shared-memory ring holds (a
	// power of two); ShmSlotBytes the size of one, which bounds the
	// largest message. 0: 64 slots of 16 KiB.
	ShmRingSlots int `yaml:"shmRingSlots,omitempty"`
	ShmSlotBytes int `yaml:"shmSlotBytes,omitempty"`
}

// SBITLS names PEM files.
type SBITLS struct {
	Cert string `yaml:"cert,omitempty"`
	Key  string `yaml:"key,omitempty"`
	CA   string `yaml:"ca,omitempty"`
}

// SBI bindings.
const (
	BindingInproc = "inproc"
	BindingHTTP   = "http"
	BindingShm    = "shm"
)

// DefaultShmBusyPoll is sbi.shmBusyPoll's default.
const DefaultShmBusyPoll = 20 * time.Microsecond

// NFNames are the control-plane NFs, in the order `tern nf` documents them.
var NFNames = []string{"nrf", "udr", "udm", "ausf", "nssf", "pcf", "smf", "amf"}

// DefaultSBI listens on the port of each NF's TS 29.5xx number, on loopback.
func DefaultSBI() SBI {
	return SBI{Binding: BindingInproc, Scheme: "http", ShmBusyPoll: DefaultShmBusyPoll, Listen: map[string]string{
		"nrf": "127.0.0.1:29510", "udr": "127.0.0.1:29504", "udm": "127.0.0.1:29503", "ausf": "127.0.0.1:29509",
		"nssf": "127.0.0.1:29531", "pcf": "127.0.0.1:29512", "smf": "127.0.0.1:29502", "amf": "127.0.0.1:29518",
	}}
}

// NRFRoot is the NRF's apiRoot.
func (s SBI) NRFRoot() string {
	if s.NRF != "" {
		return strings.TrimRight(s.NRF, "/")
	}
	return s.Scheme + "://" + s.Listen["nrf"]
}

// Validate checks the section and names the bad field.
func (s SBI) Validate() error {
	switch s.Binding {
	case BindingInproc, BindingHTTP, BindingShm:
	default:
		return fmt.Errorf("config: sbi.binding: %q is not inproc, http or shm", s.Binding)
	}
	switch s.Scheme {
	case "http":
	case "https":
		if s.TLS.Cert == "" || s.TLS.Key == "" {
			return fmt.Errorf("config: sbi.scheme https needs sbi.tls.cert and sbi.tls.key")
		}
	default:
		return fmt.Errorf("config: sbi.scheme: %q is not http or https", s.Scheme)
	}
	if n := s.ShmRingSlots; n < 0 || n > 1<<16 || n&(n-1) != 0 {
		return fmt.Errorf("config: sbi.shmRingSlots: %d is not a power of two up to 65536", n)
	}
	if n := s.ShmSlotBytes; n != 0 && (n < 1024 || n > 16<<20 || n%64 != 0) {
		return fmt.Errorf("config: sbi.shmSlotBytes: %d is not a multiple of 64 from 1 KiB to 16 MiB", n)
	}
	if s.ShmBusyPoll < 0 || s.ShmBusyPoll > time.Second {
		return fmt.Errorf("config: sbi.shmBusyPoll: %v is not within 0..1s", s.ShmBusyPoll)
	}
	for name, addr := range s.Listen {
		if !slices.Contains(NFNames, name) {
			return fmt.Errorf("config: sbi.listen.%s: no such NF (want one of %v)", name, NFNames)
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil || host == "" {
			return fmt.Errorf("config: sbi.listen.%s: %q is not host:port", name, addr)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
			return fmt.Errorf("config: sbi.listen.%s: bad port in %q", name, addr)
		}
	}
	return nil
}

// ShmConfig is the shared-memory transport's configuration this section
// describes; Dir is empty when sbi.shmDir is (the transport's default).
func (s SBI) ShmConfig() shm.Config {
	return shm.Config{Dir: s.ShmDir, BusyPoll: s.ShmBusyPoll, RingSlots: s.ShmRingSlots, SlotBytes: s.ShmSlotBytes}
}
