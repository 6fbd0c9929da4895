// Package config is tern's configuration file: one YAML document with a
// section per NF, embedded defaults for everything, and validation whose
// messages name the offending field.
package config

//go:generate go test -run ^TestConfigReference$ -args -update

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/nf/amf"
	"github.com/tern5g/tern/nf/ausf"
	"github.com/tern5g/tern/nf/nrf"
	"github.com/tern5g/tern/nf/nssf"
	"github.com/tern5g/tern/nf/pcf"
	"github.com/tern5g/tern/nf/smf"
	"github.com/tern5g/tern/nf/udm"
	"github.com/tern5g/tern/nf/udr"
	"github.com/tern5g/tern/store"
	"github.com/tern5g/tern/upf"
)

// Config is the whole core unit's configuration.
type Config struct {
	Log   Log   `yaml:"log"`
	Store Store `yaml:"store"`
	// Capture, when set, is a pcap file that receives every N2 datagram
	// (SCTP over UDP), for tshark/Wireshark.
	Capture string `yaml:"capture,omitempty"`
	// Metrics is the operations HTTP server of tern up.
	Metrics Metrics `yaml:"metrics"`
	// Operator is the operator API that tern ue reads.
	Operator Operator `yaml:"operator"`
	// SBI is how the NFs reach each other.
	SBI SBI `yaml:"sbi"`

	AMF  amf.Config  `yaml:"amf"`
	AUSF ausf.Config `yaml:"ausf"`
	UDM  udm.Config  `yaml:"udm"`
	UDR  udr.Config  `yaml:"udr"`
	NSSF nssf.Config `yaml:"nssf"`
	NRF  nrf.Config  `yaml:"nrf"`
	SMF  smf.Config  `yaml:"smf"`
	PCF  pcf.Config  `yaml:"pcf"`
	UPF  UPF         `yaml:"upf"`

	// Resiliency is how tern up survives the death of its control plane
	// (docs/resiliency.md).
	Resiliency Resiliency `yaml:"resiliency"`
}

// Resiliency modes.
const (
	// ResiliencyOff: one process; its death costs every UE a new
	// registration.
	ResiliencyOff = "off"
	// ResiliencyLocal: the control plane runs as an active unit and a
	// standby unit on this host, behind an N2 front end that keeps the
	// gNBs' associations; the standby takes over within milliseconds of the
	// active one's death, with every UE's state (docs/resiliency.md).
	ResiliencyLocal = "local"
)

// Resiliency configures the replicated core of tern up.
type Resiliency struct {
	// Mode is off or local. (remote and both, a replica on another node
	// through the replication engine, are not built yet.)
	Mode string `yaml:"mode"`
	// Dir holds the units' record stores (in shared memory) and the
	// front end's socket; empty: /dev/shm/tern-<hash of the store>.
	Dir string `yaml:"dir,omitempty"`
	// RecordStoreMiB is the size of each unit's shared-memory record
	// store: about 2 KiB per registered UE with a session (default 64).
	RecordStoreMiB int `yaml:"recordStoreMiB,omitempty"`
	// ReplayLog is how many uplink N2 messages the front end keeps until
	// the unit acknowledges them (default 65536).
	ReplayLog int `yaml:"replayLog,omitempty"`
}

// UPF configures the UPF that runs inside the unit. With Embedded false the
// SMF's UPFs are all remote (smf.upfs[].n4 is a PFCP address).
type UPF struct {
	Embedded bool `yaml:"embedded"`
	// Name is the smf.upfs entry the embedded UPF serves (its N4 is
	// "direct", or this UPF's pfcpAddr).
	Name string `yaml:"name"`
	// MetricsAddress is the operations HTTP server (/metrics, /healthz,
	// /readyz) of tern nf upf, which reads this section; a UPF embedded in
	// the unit is covered by metrics.address. Empty: none.
	MetricsAddress string `yaml:"metricsAddress,omitempty"`
	upf.Config     `yaml:",inline"`
}

// Metrics configures the operations HTTP server: /metrics (Prometheus),
// /healthz and /readyz.
type Metrics struct {
	// Address is host:port to listen on, e.g. 127.0.0.1:9464. Empty (the
	// default): no server, so that tern processes sharing a host and a
	// configuration (tern up, tern nf upf, the benchmarks' children) do not
	// fight over a port nobody asked for.
	Address string `yaml:"address,omitempty"`
}

// Operator configures the operator API of tern ue list and show, which
// tern up and tern nf amf serve on a unix socket that only their user may
// use.
type Operator struct {
	// Socket is the socket's path. Empty (the default): derived from the
	// store, so that tern ue finds it from the same --config or --store:
	// store.path with ".sock" added (SQLite), or with driver postgres a
	// socket named after the database in store.path's directory. A core
	// that cannot create it runs without the operator API, and says so.
	Socket string `yaml:"socket,omitempty"`
}

// maxSocketPath is the longest path a unix socket may have on Linux
// (sun_path is 108 bytes with its terminating NUL).
const maxSocketPath = 107

// Log configures structured logging.
type Log struct {
	Level  string `yaml:"level"`  // debug, info, warn, error
	Format string `yaml:"format"` // text or json
}

// Store configures the subscriber store (see package store).
type Store struct {
	// Driver is the database engine: sqlite (embedded, the default: Path
	// is its file) or postgres (DSN names the database).
	Driver string `yaml:"driver"`
	// Path of the SQLite database file; created on first start. A legacy
	// subscriber log found there is converted in place.
	Path string `yaml:"path"`
	// DSN is the PostgreSQL connection string (driver postgres), a URL
	// ("postgres://tern@db.example:5432/tern") or key=value pairs.
	DSN string `yaml:"dsn,omitempty"`
	// DemoSubscribers is how many demo subscribers (IMSI 208930000000001 on,
	// see store.DefaultSubscribers) are provisioned when missing; 0 = none.
	DemoSubscribers int `yaml:"demoSubscribers"`
	// FollowInterval is how often the running core reads the store's
	// change feed, to act on subscribers another process (tern subscriber,
	// another core) changed: a deleted subscriber's UE is deregistered, a
	// changed one's subscription data read again. New subscribers need no
	// notice (default 1s).
	FollowInterval time.Duration `yaml:"followInterval"`
}

// Source is what store.OpenDriver opens for Driver: Path or DSN.
func (s Store) Source() string {
	if s.Driver == store.DriverPostgres {
		return s.DSN
	}
	return s.Path
}

// DefaultStorePath is where `tern up` keeps subscribers unless told otherwise:
// $XDG_DATA_HOME/tern/subscribers.db, or ~/.local/share/tern/subscribers.db.
func DefaultStorePath() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "tern", "subscribers.db")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "tern", "subscribers.db")
	}
	return filepath.Join(".tern", "subscribers.db")
}

// Default returns the embedded defaults: PLMN 208/93, TAC 1, slice 1-010203,
// N2 on 127.0.0.1:38412 (SCTP over UDP 9899 where the kernel has no SCTP),
// NIA2/NEA2 preferred, 1,000 demo subscribers.
func Default() Config {
	return Config{
		Log:        Log{Level: "info", Format: "text"},
		Store:      Store{Driver: store.DriverSQLite, Path: DefaultStorePath(), DemoSubscribers: 1000, FollowInterval: time.Second},
		SBI:        DefaultSBI(),
		AMF:        amf.DefaultConfig(),
		AUSF:       ausf.Config{ServingPLMNs: []string{"20893"}},
		UDM:        udm.DefaultConfig(),
		NSSF:       nssf.DefaultConfig(),
		SMF:        smf.DefaultConfig(),
		PCF:        pcf.DefaultConfig(),
		UPF:        UPF{Embedded: true, Name: "upf", Config: upf.DefaultConfig()},
		Resiliency: Resiliency{Mode: ResiliencyOff},
	}
}

// Parse reads a YAML document over the defaults: fields it leaves out keep
// their default values; unknown fields are errors. A list in the document
// replaces the default list whole, and its items get their defaults field
// by field (an smf.dnns entry without mtu gets the default MTU).
func Parse(b []byte) (Config, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err == nil {
		if err := checkDocument(&doc); err != nil {
			return Config{}, err
		}
	} // a document that does not parse is reported by Decode below
	c := Default()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	// An empty document (io.EOF) means "all defaults".
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	c.AMF = c.AMF.WithDefaults()
	c.SMF = c.SMF.WithDefaults()
	c.PCF = c.PCF.WithDefaults()
	c.trimAPIRoots()
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// renamedKeys are keys of earlier releases and what they are now: keys are
// lowerCamel with "Id" as in 3GPP's OpenAPI (nfInstanceId), everywhere. A
// document that uses the old key is told the new one (checkDocument).
var renamedKeys = map[string]string{
	"amf.instanceID": "amf.instanceId",
	"upf.nodeID":     "upf.nodeId",
}

// Load reads and validates the file at path.
func Load(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(b)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Marshal renders c as YAML (what `tern config` prints).
func Marshal(c Config) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return buf.Bytes(), nil
}

// Validate checks every section and the ways they must agree. Messages name
// the field as a path from the document root, e.g. "amf.tais[0].tac".
func (c *Config) Validate() error {
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("config: log.level: %q is not debug, info, warn or error", c.Log.Level)
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		return fmt.Errorf("config: log.format: %q is not text or json", c.Log.Format)
	}
	if err := c.SBI.Validate(); err != nil {
		return err
	}
	switch c.Store.Driver {
	case store.DriverSQLite:
		if c.Store.Path == "" {
			return errors.New("config: store.path: empty (driver sqlite needs a database file)")
		}
	case store.DriverPostgres:
		if c.Store.DSN == "" {
			return errors.New("config: store.dsn: empty (driver postgres needs a connection string)")
		}
	default:
		return fmt.Errorf("config: store.driver: %q is not %s or %s", c.Store.Driver, store.DriverSQLite, store.DriverPostgres)
	}
	if c.Store.DemoSubscribers < 0 || c.Store.DemoSubscribers > 1_000_000 {
		return fmt.Errorf("config: store.demoSubscribers: %d not in 0..1000000", c.Store.DemoSubscribers)
	}
	if c.Store.FollowInterval < 0 {
		return fmt.Errorf("config: store.followInterval: %v is negative", c.Store.FollowInterval)
	}
	if err := checkListenAddr(c.Metrics.Address); err != nil {
		return fmt.Errorf("config: metrics.address: %w", err)
	}
	if n := len(c.Operator.Socket); n > maxSocketPath {
		return fmt.Errorf("config: operator.socket: %d bytes, longer than a unix socket's %d", n, maxSocketPath)
	}
	if err := checkListenAddr(c.UPF.MetricsAddress); err != nil {
		return fmt.Errorf("config: upf.metricsAddress: %w", err)
	}
	if err := c.Resiliency.validate(); err != nil {
		return err
	}
	// NF instance IDs are UUIDs (TS 29.571 §5.3.2 NfInstanceId, format
	// uuid): NFs send them in profiles and UECM registrations, where a
	// peer checks the format. Empty: a random one.
	for _, id := range []struct{ key, v string }{
		{"amf.instanceId", c.AMF.InstanceID}, {"ausf.instanceId", c.AUSF.InstanceID},
		{"udm.instanceId", c.UDM.InstanceID}, {"nrf.instanceId", c.NRF.InstanceID},
	} {
		if id.v != "" && !isUUID(id.v) {
			return fmt.Errorf("config: %s: %q is not a UUID (like 6f0c1f0e-0000-4000-8000-000000000001)", id.key, id.v)
		}
	}
	for _, r := range []struct{ key, v string }{
		{"sbi.nrf", c.SBI.NRF}, {"amf.apiRoot", c.AMF.APIRoot}, {"smf.apiRoot", c.SMF.APIRoot}, {"nrf.apiRoot", c.NRF.APIRoot},
	} {
		if err := checkAPIRoot(r.v); err != nil {
			return fmt.Errorf("config: %s: %w", r.key, err)
		}
	}
	if err := c.UPF.Config.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	// Each NF names the bad key by its path from the document's root
	// (amf.tais[0].tac, ausf.servingPlmns[0]), so its error is wrapped as
	// it is.
	for _, check := range []func() error{
		c.AMF.Validate, c.AUSF.Validate, c.UDM.Validate, c.UDR.Validate,
		c.NSSF.Validate, c.NRF.Validate, c.SMF.Validate, c.PCF.Validate,
	} {
		if err := check(); err != nil {
			return fmt.Errorf("config: %w", err)
		}
	}
	return c.crossCheck()
}

// crossCheck verifies that the sections describe one network: the AMF's
// PLMNs are served by the AUSF, and the NSSF knows the AMF's PLMN.
func (c *Config) crossCheck() error {
	amfCfg := c.AMF.WithDefaults()
	served := make([]string, len(c.AUSF.ServingPLMNs))
	for i, p := range c.AUSF.ServingPLMNs {
		served[i] = normPLMN(p)
	}
	for i, g := range amfCfg.GUAMIs {
		if !slices.Contains(served, normPLMN(g.PLMN)) {
			return fmt.Errorf("config: amf.guamis[%d].plmn: %s is not in ausf.servingPlmns %v", i, g.PLMN, c.AUSF.ServingPLMNs)
		}
	}
	if len(amfCfg.GUAMIs) > 0 && normPLMN(c.NSSF.PLMN) != normPLMN(amfCfg.GUAMIs[0].PLMN) {
		return fmt.Errorf("config: nssf.plmn: %s differs from amf.guamis[0].plmn %s", c.NSSF.PLMN, amfCfg.GUAMIs[0].PLMN)
	}
	for i, u := range c.SMF.UPFs {
		// How the deployment reaches each UPF (core.wireN4): the embedded
		// one directly, the others over PFCP (TS 29.244) at an address.
		if u.N4 == "direct" {
			if !c.UPF.Embedded || u.Name != c.UPF.Name {
				return fmt.Errorf("config: smf.upfs[%d].n4: direct is the embedded UPF's binding, and %q is not it (upf.embedded %v, upf.name %q)", i, u.Name, c.UPF.Embedded, c.UPF.Name)
			}
		} else if _, err := netip.ParseAddrPort(u.N4); err != nil {
			return fmt.Errorf("config: smf.upfs[%d].n4: %q: want direct or the UPF's PFCP address, IP:port (like 10.100.4.2:8805)", i, u.N4)
		}
	}
	if c.UPF.Embedded {
		i := slices.IndexFunc(c.SMF.UPFs, func(u smf.UPFConfig) bool { return u.Name == c.UPF.Name })
		if i < 0 {
			return fmt.Errorf("config: upf.name: %q is not one of smf.upfs", c.UPF.Name)
		}
		// Every DNN the SMF sends to the embedded UPF needs an N6 device,
		// which routes the DNN's UE pool: the SMF hands out addresses of
		// smf.dnns[].pool, so a device routing another pool would send the
		// downlink nowhere. A pool is read at start only; both keys change
		// together, on restart.
		for _, d := range c.SMF.UPFs[i].DNNs {
			j := slices.IndexFunc(c.UPF.N6, func(n upf.N6Config) bool { return n.DNN == d })
			if j < 0 {
				return fmt.Errorf("config: upf.n6: no device for DNN %q that smf.upfs[%d] serves", d, i)
			}
			k := slices.IndexFunc(c.SMF.DNNs, func(dn smf.DNNConfig) bool { return dn.Name == d })
			if k >= 0 && c.UPF.N6[j].Pool != "" && !samePrefix(c.UPF.N6[j].Pool, c.SMF.DNNs[k].Pool) {
				return fmt.Errorf("config: upf.n6[%d].pool: %s differs from smf.dnns[%d].pool %s for DNN %q: the UPF routes the pool the SMF allocates from; change both (they apply on restart)",
					j, c.UPF.N6[j].Pool, k, c.SMF.DNNs[k].Pool, d)
			}
		}
	}
	return nil
}

// samePrefix compares two prefixes as networks ("10.60.0.1/16" is
// 10.60.0.0/16); unparsable ones compare as text (their own checks name
// them).
func samePrefix(a, b string) bool {
	pa, errA := netip.ParsePrefix(a)
	pb, errB := netip.ParsePrefix(b)
	if errA != nil || errB != nil {
		return a == b
	}
	return pa.Masked() == pb.Masked()
}

// checkListenAddr accepts "" (off) and host:port with a numeric port.
func checkListenAddr(s string) error {
	if s == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return err
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("%q: port %q is not a number in 0..65535", s, port)
	}
	return nil
}

// trimAPIRoots drops the trailing '/' of every apiRoot in the document: a
// URI is the apiRoot followed by "/nxxx-yyy/v1/..." (TS 29.501 §4.4.1), and
// "http://10.0.0.1:8000/" has always worked as sbi.nrf, amf.apiRoot or
// smf.apiRoot (their users trim it), so it is normalised, not refused.
func (c *Config) trimAPIRoots() {
	for _, r := range []*string{&c.SBI.NRF, &c.AMF.APIRoot, &c.SMF.APIRoot, &c.NRF.APIRoot} {
		if *r != "" {
			*r = strings.TrimRight(*r, "/")
		}
	}
}

// checkAPIRoot accepts "" and an apiRoot (TS 29.501 §4.4.1): http or https,
// an authority, optionally a path prefix, with no query or fragment. A
// trailing '/' is accepted: Parse trims it, and the SBI clients trim what
// a flag sets after Parse.
func checkAPIRoot(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q is not an apiRoot: want http:// or https://, a host and an optional port, like http://10.0.0.1:8000", s)
	}
	return nil
}

// isUUID reports whether s is a UUID in its text form (RFC 9562 §4):
// 8-4-4-4-12 hexadecimal digits.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, r := range s {
		switch i {
		case 8, 13, 18, 23:
			if r != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
				return false
			}
		}
	}
	return true
}

func normPLMN(s string) string {
	p, err := identity.ParsePLMN(s)
	if err != nil {
		return s
	}
	return p.String()
}

func (r Resiliency) validate() error {
	switch r.Mode {
	case "", ResiliencyOff, ResiliencyLocal:
	default:
		return fmt.Errorf("config: resiliency.mode: %q is not %s or %s", r.Mode, ResiliencyOff, ResiliencyLocal)
	}
	if r.RecordStoreMiB < 0 || r.RecordStoreMiB > 1<<16 {
		return fmt.Errorf("config: resiliency.recordStoreMiB: %d not in 0..65536", r.RecordStoreMiB)
	}
	if r.ReplayLog < 0 {
		return fmt.Errorf("config: resiliency.replayLog: %d is negative", r.ReplayLog)
	}
	return nil
}
