// Package lab builds the network-namespace test bed of tern's user-plane
// experiments (DESIGN.md §4, notes/benchmarks.md "User plane"):
//
//	ran ── N3 ── core ── N6 ── dn per DNN ("internet", "ims", ...)
//
// ran holds the simulated gNB and UEs, core the 5G core and the UPF, and each
// DNN gets its own data-network namespace with a server on 192.0.2.1 (the
// same address in every DN: overlapping address spaces show that a UE's
// traffic lands in the DN of its PDU session and nowhere else). Namespaces
// are named <prefix>-ran, <prefix>-core and <prefix>-<dnn>; every link and
// route is made with iproute2 so an operator can read and redo each step.
package lab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// Addresses of the lab (IPv4).
var (
	RANN3    = netip.MustParseAddr("10.100.3.1") // gNB side of N3
	CoreN3   = netip.MustParseAddr("10.100.3.2") // UPF side of N3 (and N2, N4 inside core)
	DNServer = netip.MustParseAddr("192.0.2.1")  // the server in every DN
)

// Link and table numbering.
const (
	n3Prefix   = "10.100.3."
	n6Base     = 6   // DN i uses 10.100.(6+i).0/24: core .1, DN .2
	tableBase  = 100 // DN i's policy routing table in core
	HTTPPort   = 8080
	IperfPort  = 5201
	maxDNs     = 10
	coreN6Link = "n6-"
)

// Config names the lab.
type Config struct {
	// Prefix of the namespace names (default "tern").
	Prefix string
	// DNNs get one data-network namespace each (default internet, ims).
	DNNs []string
}

// Lab is one test bed. Its methods run iproute2 commands.
type Lab struct {
	cfg Config
}

// New returns the lab of cfg; nothing is created until Up.
func New(cfg Config) (*Lab, error) {
	if cfg.Prefix == "" {
		cfg.Prefix = "tern"
	}
	if len(cfg.DNNs) == 0 {
		cfg.DNNs = []string{"internet", "ims"}
	}
	if len(cfg.DNNs) > maxDNs {
		return nil, fmt.Errorf("lab: %d DNNs, at most %d", len(cfg.DNNs), maxDNs)
	}
	for _, d := range cfg.DNNs {
		// The UPF's N6 TUN is named tern-<dnn>: 15 bytes at most.
		if d == "" || len(TUN(d)) > 15 || strings.ContainsAny(d, " /\t") {
			return nil, fmt.Errorf("lab: DNN %q cannot name a link (at most %d plain characters)", d, 15-len(TUN("")))
		}
	}
	return &Lab{cfg: cfg}, nil
}

// RAN, Core and DN are the namespace names.
func (l *Lab) RAN() string          { return l.cfg.Prefix + "-ran" }
func (l *Lab) Core() string         { return l.cfg.Prefix + "-core" }
func (l *Lab) DN(dnn string) string { return l.cfg.Prefix + "-" + dnn }
func (l *Lab) DNNs() []string       { return append([]string(nil), l.cfg.DNNs...) }
func (l *Lab) namespaces() []string {
	ns := []string{l.RAN(), l.Core()}
	for _, d := range l.cfg.DNNs {
		ns = append(ns, l.DN(d))
	}
	return ns
}

// CoreN6 is the core's address on the link to DN i (the DN's default
// gateway), and DNN6 the DN's.
func CoreN6(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 100, byte(n6Base + i), 1}) }
func DNN6(i int) netip.Addr   { return netip.AddrFrom4([4]byte{10, 100, byte(n6Base + i), 2}) }

// N6Link is the name of the core's link toward dnn's data network, and
// Table its policy-routing table: the UPF's N6 device for dnn (a TUN) is
// routed into it with "ip rule iif <tun> lookup <table>".
func N6Link(dnn string) string { return coreN6Link + dnn }

// TUN is the name the UPF gives its N6 device for dnn by default
// (upf.TUNName; lab_test.go keeps the two in step).
func TUN(dnn string) string { return "tern-" + dnn }

// Table returns the core's routing table for DNN i.
func Table(i int) int { return tableBase + i }

// Check says why the lab cannot be built here, or nil.
func Check() error {
	if os.Geteuid() != 0 {
		return errors.New("lab: needs root (network namespaces, veth, TUN)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("lab: needs iproute2's ip command (make tools installs it)")
	}
	if _, err := os.Stat("/proc/self/ns/net"); err != nil {
		return fmt.Errorf("lab: no network namespaces: %w", err)
	}
	return nil
}

// Up builds the namespaces, links, addresses and routes. It fails if a
// namespace of the lab already exists (run Down first); on failure it
// removes what it made.
func (l *Lab) Up(ctx context.Context) (err error) {
	if err := Check(); err != nil {
		return err
	}
	existing, err := l.existing()
	if err != nil {
		return err
	}
	if len(existing) > 0 {
		return fmt.Errorf("lab: namespaces %s exist already (tern lab down --prefix %s)", strings.Join(existing, ", "), l.cfg.Prefix)
	}
	defer func() {
		if err != nil {
			l.Down()
		}
	}()
	run := func(args ...string) error { return l.ip(ctx, "", args...) }
	in := func(ns string, args ...string) error { return l.ip(ctx, ns, args...) }
	sysctl := func(ns, key, val string) error {
		return l.run(ctx, ns, "sysctl", "-q", "-w", key+"="+val)
	}

	for _, ns := range l.namespaces() {
		if err := run("netns", "add", ns); err != nil {
			return err
		}
		if err := in(ns, "link", "set", "lo", "up"); err != nil {
			return err
		}
		// Asymmetric paths (UE pools behind a TUN) must not be filtered.
		for _, k := range []string{"net.ipv4.conf.all.rp_filter", "net.ipv4.conf.default.rp_filter"} {
			if err := sysctl(ns, k, "0"); err != nil {
				return err
			}
		}
	}
	if err := sysctl(l.Core(), "net.ipv4.ip_forward", "1"); err != nil {
		return err
	}

	// N3: ran <-> core.
	if err := run("link", "add", "n3", "netns", l.RAN(), "type", "veth", "peer", "name", "n3", "netns", l.Core()); err != nil {
		return err
	}
	for ns, addr := range map[string]netip.Addr{l.RAN(): RANN3, l.Core(): CoreN3} {
		if err := in(ns, "addr", "add", addr.String()+"/24", "dev", "n3"); err != nil {
			return err
		}
		if err := in(ns, "link", "set", "n3", "up"); err != nil {
			return err
		}
	}
	// The plain-forwarding reference path of the benchmarks: ran reaches the
	// DN servers through the core's kernel routing, no GTP.
	if err := in(l.RAN(), "route", "add", "192.0.2.0/24", "via", CoreN3.String()); err != nil {
		return err
	}

	// N6: core <-> each DN.
	for i, dnn := range l.cfg.DNNs {
		dn := l.DN(dnn)
		if err := run("link", "add", N6Link(dnn), "netns", l.Core(), "type", "veth", "peer", "name", "n6", "netns", dn); err != nil {
			return err
		}
		steps := [][]string{
			{l.Core(), "addr", "add", CoreN6(i).String() + "/24", "dev", N6Link(dnn)},
			{l.Core(), "link", "set", N6Link(dnn), "up"},
			{dn, "addr", "add", DNN6(i).String() + "/24", "dev", "n6"},
			{dn, "link", "set", "n6", "up"},
			{dn, "addr", "add", DNServer.String() + "/32", "dev", "lo"},
			{dn, "route", "add", "default", "via", CoreN6(i).String()},
			// Packets that leave the UPF's N6 device for dnn go to dnn's DN.
			{l.Core(), "route", "add", "default", "via", DNN6(i).String(), "table", strconv.Itoa(Table(i))},
			// iif rules match by name, so they may precede the UPF's TUN.
			{l.Core(), "rule", "add", "iif", TUN(dnn), "lookup", strconv.Itoa(Table(i)), "priority", strconv.Itoa(Table(i))},
		}
		for _, s := range steps {
			if err := in(s[0], s[1:]...); err != nil {
				return err
			}
		}
		if i == 0 {
			// The reference path's DN is the first one.
			if err := in(l.Core(), "route", "add", DNServer.String()+"/32", "via", DNN6(i).String()); err != nil {
				return err
			}
		}
	}
	return nil
}

// Down kills every process left in the lab's namespaces and deletes them
// (their links go with them). Missing namespaces are not an error.
func (l *Lab) Down() error {
	existing, err := l.existing()
	if err != nil {
		return err
	}
	var errs []error
	for _, ns := range existing {
		out, _ := exec.Command("ip", "netns", "pids", ns).Output()
		for _, f := range strings.Fields(string(out)) {
			if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
				if p, err := os.FindProcess(pid); err == nil {
					p.Kill()
				}
			}
		}
		if err := l.ip(context.Background(), "", "netns", "del", ns); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// existing lists the lab's namespaces that exist now.
func (l *Lab) existing() ([]string, error) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return nil, fmt.Errorf("lab: ip netns list: %w", err)
	}
	have := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			have[f[0]] = true
		}
	}
	var ns []string
	for _, n := range l.namespaces() {
		if have[n] {
			ns = append(ns, n)
		}
	}
	return ns, nil
}

// Command returns cmd to run inside namespace ns ("" = the caller's).
func (l *Lab) Command(ctx context.Context, ns, name string, args ...string) *exec.Cmd {
	if ns == "" {
		return exec.CommandContext(ctx, name, args...)
	}
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, name}, args...)...)
}

func (l *Lab) ip(ctx context.Context, ns string, args ...string) error {
	return l.run(ctx, ns, "ip", args...)
}

func (l *Lab) run(ctx context.Context, ns, name string, args ...string) error {
	cmd := l.Command(ctx, ns, name, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("lab: %s: %v: %s", strings.Join(cmd.Args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// GNBN3 is the N3 address of simulated gNB i in the ran namespace: gNB 0
// has RANN3 (made by Up), gNB i > 0 has 10.100.3.(10+i), which the simulator
// adds to ran's n3 link itself (a UPF sends downlink to port 2152 of the
// address in the DL tunnel, so gNBs cannot share one address). ok is false
// past the /24.
func GNBN3(i int) (addr netip.Addr, ok bool) {
	if i == 0 {
		return RANN3, true
	}
	if i < 0 || 10+i > 254 {
		return netip.Addr{}, false
	}
	return netip.AddrFrom4([4]byte{10, 100, 3, byte(10 + i)}), true
}

// N3Link is the name of the N3 veth in the ran and core namespaces.
const N3Link = "n3"
