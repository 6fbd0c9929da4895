package upf

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"

	"github.com/tern5g/tern/lab"
)

// The lab's names and addresses the benchmark uses: one DNN.
const (
	dnn     = "internet"
	poolStr = "10.60.0.0/14" // room for 262,141 sessions
	n6MTU   = 1400           // the N6 device's MTU: the largest inner packet
)

var dnServer = lab.DNServer

// port is one end of a veth: its namespace, name, index and MAC.
type port struct {
	ns, name string
	index    int
	mac      net.HardwareAddr
}

func (p port) String() string { return p.ns + "/" + p.name }

// topo is the lab (package lab: ran ── N3 ── core ── N6 ── dn) as the
// benchmark sees it: the four veth ends.
type topo struct {
	l                     *lab.Lab
	ranN3, coreN3         port
	coreN6, dnN6          port
	ranNS, coreNS, dnNS   string
	gnb, n3, n6Core, n6DN netip.Addr
}

// newTopo builds the lab under prefix and pins every neighbour entry, so
// that no run waits on ARP and no sink (which drops everything, ARP
// included) has to answer it.
func newTopo(ctx context.Context, prefix string) (*topo, error) {
	l, err := lab.New(lab.Config{Prefix: prefix, DNNs: []string{dnn}})
	if err != nil {
		return nil, err
	}
	if err := l.Up(ctx); err != nil {
		return nil, err
	}
	t := &topo{l: l, ranNS: l.RAN(), coreNS: l.Core(), dnNS: l.DN(dnn),
		gnb: lab.RANN3, n3: lab.CoreN3, n6Core: lab.CoreN6(0), n6DN: lab.DNN6(0)}
	ports := []*port{
		{ns: t.ranNS, name: lab.N3Link}, {ns: t.coreNS, name: lab.N3Link},
		{ns: t.coreNS, name: lab.N6Link(dnn)}, {ns: t.dnNS, name: "n6"},
	}
	for _, p := range ports {
		err := lab.Do(p.ns, func() error {
			ifi, err := net.InterfaceByName(p.name)
			if err != nil {
				return err
			}
			p.index, p.mac = ifi.Index, ifi.HardwareAddr
			return nil
		})
		if err != nil {
			t.close()
			return nil, fmt.Errorf("bench upf: %s: %w", p, err)
		}
	}
	t.ranN3, t.coreN3, t.coreN6, t.dnN6 = *ports[0], *ports[1], *ports[2], *ports[3]
	for _, n := range []struct {
		at   port
		addr netip.Addr
		mac  net.HardwareAddr
	}{
		{t.ranN3, t.n3, t.coreN3.mac},
		{t.coreN3, t.gnb, t.ranN3.mac},
		{t.coreN6, t.n6DN, t.dnN6.mac},
		{t.dnN6, t.n6Core, t.coreN6.mac},
	} {
		args := []string{"-n", n.at.ns, "neigh", "replace", n.addr.String(), "lladdr", n.mac.String(), "nud", "permanent", "dev", n.at.name}
		if out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput(); err != nil {
			t.close()
			return nil, fmt.Errorf("bench upf: ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return t, nil
}

func (t *topo) close() error { return t.l.Down() }
