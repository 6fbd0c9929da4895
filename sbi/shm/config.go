package shm

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// Config sizes a pool and tunes both ends. The server's values are the ones
// that count for the geometry (RingSlots, SlotBytes, MaxClients): it writes
// them into the pool header and every client reads them from there, so a
// client's own geometry fields are ignored. Zero fields take the defaults
// below.
type Config struct {
	// Dir is the deployment's directory, its security domain: created with
	// mode 0700 (and refused when it exists and another user could enter
	// it); pool and lock files are created inside it with mode 0600. Put it
	// on tmpfs (/dev/shm) so that the pool is plain memory. Default:
	// /dev/shm/tern-<euid>.
	Dir string
	// RingSlots is the number of records a ring holds, a power of two.
	// Default 64.
	RingSlots int
	// SlotBytes is the size of one slot, record header included; the largest
	// message is SlotBytes-RecordHeaderBytes. A multiple of 64. Default
	// 16384 (16352-byte messages).
	SlotBytes int
	// MaxClients is the number of channels (client connections) a pool
	// holds. Default 16.
	MaxClients int
	// BusyPoll is how long a consumer polls its ring before it sleeps on the
	// futex. Zero sleeps at once: no CPU burnt while idle, one futex wake
	// per message. A few tens of microseconds save the wake-up on a busy
	// exchange when both ends have a core to themselves.
	BusyPoll time.Duration
	// CheckInterval is how often each end checks that its peer still holds
	// its lock, which bounds how long a call waits on a dead server and how
	// long a dead client's rings stay allocated. Default 50ms.
	CheckInterval time.Duration
	// ConnectTimeout bounds how long a client waits for the server to accept
	// its channel. Default 1s.
	ConnectTimeout time.Duration
	// MaxInFlight is how many calls one client may have outstanding; further
	// calls wait (for a free entry or their context). Default 256.
	MaxInFlight int
	// MaxWorkers caps the server's handler goroutines (all channels
	// together); past it, requests wait for a running handler to return.
	// Default 256.
	MaxWorkers int
}

// Defaults and limits. The limits keep a corrupt or hostile pool header from
// asking for absurd mappings.
const (
	DefaultRingSlots      = 64
	DefaultSlotBytes      = 16 << 10
	DefaultMaxClients     = 16
	DefaultCheckInterval  = 50 * time.Millisecond
	DefaultConnectTimeout = time.Second
	DefaultMaxInFlight    = 256
	DefaultMaxWorkers     = 256

	maxRingSlots   = 1 << 16
	minSlotBytes   = 128
	maxSlotBytes   = 16 << 20
	maxMaxClients  = 1024
	maxMaxInFlight = 1 << 16 // request IDs keep the waiter index in 16 bits
	maxPoolBytes   = 1 << 36
)

// withDefaults fills zero fields and validates the rest.
func (c Config) withDefaults() (Config, error) {
	if c.Dir == "" {
		c.Dir = filepath.Join("/dev/shm", "tern-"+strconv.Itoa(os.Geteuid()))
	}
	if c.RingSlots == 0 {
		c.RingSlots = DefaultRingSlots
	}
	if c.SlotBytes == 0 {
		c.SlotBytes = DefaultSlotBytes
	}
	if c.MaxClients == 0 {
		c.MaxClients = DefaultMaxClients
	}
	if c.CheckInterval <= 0 {
		c.CheckInterval = DefaultCheckInterval
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.MaxWorkers == 0 {
		c.MaxWorkers = DefaultMaxWorkers
	}
	if c.BusyPoll < 0 {
		return c, fmt.Errorf("shm: BusyPoll %v is negative", c.BusyPoll)
	}
	if c.MaxInFlight < 1 || c.MaxInFlight > maxMaxInFlight {
		return c, fmt.Errorf("shm: MaxInFlight %d outside 1..%d", c.MaxInFlight, maxMaxInFlight)
	}
	if c.MaxWorkers < 1 {
		return c, fmt.Errorf("shm: MaxWorkers %d is below 1", c.MaxWorkers)
	}
	g := geometry{maxClients: c.MaxClients, slots: c.RingSlots, slotBytes: c.SlotBytes}
	if err := g.validate(); err != nil {
		return c, err
	}
	return c, nil
}

func (c Config) geometry() geometry {
	return geometry{maxClients: c.MaxClients, slots: c.RingSlots, slotBytes: c.SlotBytes}
}

// A service name becomes part of file names, so it may not carry a path.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

func checkName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("shm: service name %q: want 1-64 letters, digits, '-' or '_'", name)
	}
	return nil
}
