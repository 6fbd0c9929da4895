package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/internal/freeport"
	"github.com/tern5g/tern/nf/nrfclient"
	"github.com/tern5g/tern/nf/smf"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/httpsbi"
	"github.com/tern5g/tern/sbi/ops"
	"github.com/tern5g/tern/sctp"
	"github.com/tern5g/tern/sim"
	"github.com/tern5g/tern/upf"
)

// nfProc is one `tern nf NAME` process.
type nfProc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	out  strings.Builder
}

// startNF starts `tern nf name --config cfgPath [args]` and waits for its
// ready line.
func startNF(t *testing.T, name, cfgPath string, args ...string) *nfProc {
	t.Helper()
	p := &nfProc{name: name, done: make(chan struct{})}
	p.cmd = exec.Command(ternBinary(t), append([]string{"nf", name, "--config", cfgPath}, args...)...)
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.Contains(sc.Text(), " ready: ") {
				select {
				case ready <- sc.Text():
				default:
				}
			}
		}
		p.cmd.Wait()
	}()
	t.Cleanup(func() { p.stop() })
	select {
	case line := <-ready:
		t.Logf("%s", line)
	case <-p.done:
		t.Fatalf("tern nf %s exited: %s", name, p.out.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("tern nf %s not ready: %s", name, p.out.String())
	}
	return p
}

// stop ends the process with SIGTERM (deregistering from the NRF).
func (p *nfProc) stop() {
	if p.cmd.ProcessState != nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// kill ends it with SIGKILL: no goodbye to anyone.
func (p *nfProc) kill() {
	p.cmd.Process.Kill()
	<-p.done
}

// deployment is the configuration of NFs run as processes by a test, with
// the UPF in the test's own process (as in TestUPFRestartUnderCore).
type deployment struct {
	t       *testing.T
	cfg     config.Config
	upf     upf.Config
	upfAddr netip.Addr
	ues     int
	given   map[string]bool // SBI addresses given out (freeTCP)
}

func newDeployment(t *testing.T, subscribers, ues int, mutate func(*config.Config)) *deployment {
	d := &deployment{t: t, ues: ues, given: map[string]bool{}}
	cfg := config.Default()
	cfg.Log.Level = "warn"
	cfg.Store.Path = filepath.Join(t.TempDir(), "subscribers.db")
	cfg.Store.DemoSubscribers = subscribers
	cfg.AMF.SCTP.Transport = sctp.TransportUDP
	cfg.AMF.SCTP.UDPPort = freeUDPPort(t)
	cfg.NRF.HeartBeatTimer = time.Second
	for _, name := range config.NFNames {
		cfg.SBI.Listen[name] = d.freeTCP()
	}
	d.upf = upf.DefaultConfig()
	d.upfAddr = freeport.Loopback()
	d.upf.PFCPAddr = netip.AddrPortFrom(d.upfAddr, 8805).String()
	d.upf.N3Addr = netip.AddrPortFrom(d.upfAddr, 2152).String()
	d.upf.NoN6 = true
	startRemoteUPF(t, d.upf)
	cfg.UPF.Embedded = false
	cfg.SMF.NodeID = freeport.Loopback().String()
	cfg.SMF.N4Address = cfg.SMF.NodeID
	cfg.SMF.UPFs = []smf.UPFConfig{{Name: "upf", N4: d.upf.PFCPAddr, N3: d.upfAddr.String(), DNNs: []string{"internet", "ims"}}}
	if mutate != nil {
		mutate(&cfg)
	}
	d.cfg = cfg
	return d
}

// freeTCP is a loopback TCP address free a moment ago and not given to
// another NF of the deployment: the kernel hands a port it just freed out
// again, so two NFs drawn one after the other could get the same one.
func (d *deployment) freeTCP() string {
	for {
		port, err := freeport.TCP()
		if err != nil {
			d.t.Fatal(err)
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		if !d.given[addr] {
			d.given[addr] = true
			return addr
		}
	}
}

// write stores c as a configuration file and returns its path.
func (d *deployment) write(c config.Config) string {
	b, err := yaml.Marshal(c)
	if err != nil {
		d.t.Fatal(err)
	}
	path := filepath.Join(d.t.TempDir(), "tern.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		d.t.Fatal(err)
	}
	return path
}

// sim is a simulator run of the deployment's UEs from the first'th
// subscriber: register, session, release, session.
func (d *deployment) sim(first, concurrency int, dnns ...string) sim.Config {
	sc := sim.DefaultConfig()
	sc.AMFAddr = d.cfg.AMF.N2Address
	sc.Transport = sctp.Config{Transport: sctp.TransportUDP, UDPPort: d.cfg.AMF.SCTP.UDPPort}
	sc.GNBs, sc.UEs, sc.Concurrency = 1, d.ues, concurrency
	sc.FirstIMSI = fmt.Sprintf("20893%010d", first)
	if len(dnns) > 0 {
		sc.DNNs = dnns
	}
	sc.Timeout = 15 * time.Second
	sc.Scenario = sim.Scenario{sim.StepRegister, sim.StepSession, sim.StepRelease, sim.StepSession}
	return sc
}

// dump logs every process's output.
func dump(t *testing.T, procs map[string]*nfProc) {
	for _, p := range procs {
		t.Logf("tern nf %s:\n%s", p.name, p.out.String())
	}
}

// TestNFsAsSeparateProcesses is issue 24's deployment check: every
// control-plane NF runs as its own process (tern nf NAME) over HTTP/2,
// registered with the NRF and found through discovery, with two SMFs: one
// serves the DNN internet, the other ims. UEs register and open a session
// on each DNN, which the AMF can only do by choosing the SMF per DNN. The
// internet SMF is then killed (SIGKILL) and started again on another
// address: new sessions succeed without restarting anything else. Last,
// the NRF is killed: the NFs go on with the profiles they discovered.
func TestNFsAsSeparateProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ten processes")
	}
	const ues = 8
	d := newDeployment(t, 3*ues, ues, nil)
	cfg := d.cfg
	freeTCP := d.freeTCP
	all := cfg.SMF.DNNs
	smfFor := func(dnn string) string {
		c := cfg
		c.SMF.NodeID = freeport.Loopback().String()
		c.SMF.N4Address = c.SMF.NodeID
		c.SMF.DNNs = nil
		for _, dc := range all {
			if dc.Name == dnn {
				c.SMF.DNNs = append(c.SMF.DNNs, dc)
			}
		}
		c.SMF.UPFs = []smf.UPFConfig{{Name: "upf", N4: d.upf.PFCPAddr, N3: d.upfAddr.String(), DNNs: []string{dnn}}}
		return d.write(c)
	}
	cfgPath := d.write(cfg)
	internetCfg, imsCfg := smfFor("internet"), smfFor("ims")

	procs := map[string]*nfProc{}
	for _, name := range config.NFNames { // nrf first
		switch name {
		case "smf":
			procs["smf-internet"] = startNF(t, "smf", internetCfg)
			procs["smf-ims"] = startNF(t, "smf", imsCfg, "--listen", freeTCP())
		default:
			procs[name] = startNF(t, name, cfgPath)
		}
	}
	nrf := ops.NewClient(httpsbi.NewCaller(httpsbi.NewClient(nil), cfg.SBI.NRFRoot()), "")
	smfs := func(dnn string) int {
		res, err := nrf.Discover(context.Background(), sbi.NFTypeSMF, sbi.DiscoveryQuery{RequesterNFType: sbi.NFTypeAMF, DNN: dnn})
		if err != nil {
			return -1
		}
		return len(res.NfInstances)
	}
	waitRegistered := func(types ...sbi.NFType) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for _, nt := range types {
			for {
				res, err := nrf.Discover(context.Background(), nt, sbi.DiscoveryQuery{RequesterNFType: sbi.NFTypeAMF})
				if err == nil && len(res.NfInstances) > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no %s registered with the NRF: %v", nt, err)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	waitRegistered(sbi.NFTypeUDR, sbi.NFTypeUDM, sbi.NFTypeAUSF, sbi.NFTypeNSSF, sbi.NFTypePCF, sbi.NFTypeSMF, sbi.NFTypeAMF)
	for smfs("internet") != 1 || smfs("ims") != 1 {
		time.Sleep(20 * time.Millisecond)
	}

	simCfg := func(first int) sim.Config { return d.sim(first, 4, "internet", "ims") }
	runSim(t, simCfg(1), ues)
	if t.Failed() {
		dump(t, procs)
		return
	}

	// The internet SMF dies without a word and comes back elsewhere: the
	// NRF drops the silent instance (missed heartbeats) and tells the AMF.
	procs["smf-internet"].kill()
	moved := freeTCP()
	procs["smf-internet"] = startNF(t, "smf", internetCfg, "--listen", moved)
	start := time.Now()
	for {
		res, err := nrf.Discover(context.Background(), sbi.NFTypeSMF, sbi.DiscoveryQuery{RequesterNFType: sbi.NFTypeAMF, DNN: "internet"})
		if err == nil && len(res.NfInstances) == 1 {
			if root, _ := nrfclient.APIRoot(&res.NfInstances[0], "nsmf-pdusession"); root == "http://"+moved {
				break
			}
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("the NRF still lists the old internet SMF 10 s after the restart: %+v, %v", res, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the NRF lists only the new internet SMF %v after its start", time.Since(start).Round(time.Millisecond))
	runSim(t, simCfg(1+ues), ues)
	if t.Failed() {
		dump(t, procs)
		return
	}

	// The NRF goes away: the NFs keep working from the profiles they
	// discovered (nrfclient.Discoverer answers from its cache while the
	// NRF is unreachable).
	procs["nrf"].kill()
	runSim(t, simCfg(1+2*ues), ues)
	if t.Failed() {
		dump(t, procs)
	}
}

// TestNFsAsProcessesOverShm runs the NFs as separate processes on one node
// with the shared-memory binding between them (L25GC's arrangement; they
// still register with the NRF over HTTP/2). The SMF is killed and started
// again: the AMF's calls to it fail at once while it is gone, and the
// same shared-memory clients reach the new SMF without restarting
// anything else.
func TestNFsAsProcessesOverShm(t *testing.T) {
	if testing.Short() {
		t.Skip("starts eight processes")
	}
	const ues = 4
	d := newDeployment(t, 2*ues+1, ues, func(c *config.Config) {
		c.SBI.Binding = config.BindingShm
		c.SBI.ShmDir = filepath.Join(t.TempDir(), "shm")
	})
	cfgPath := d.write(d.cfg)
	procs := map[string]*nfProc{}
	for _, name := range config.NFNames {
		procs[name] = startNF(t, name, cfgPath)
	}
	simCfg := func(first int) sim.Config { return d.sim(first, 2) }
	runSim(t, simCfg(1), ues)
	if t.Failed() {
		dump(t, procs)
		return
	}
	// The AMF's process serves tern ue (core/operator.go), found from the
	// same configuration: the UEs stay registered, with their sessions as
	// the AMF knows them (their addresses are the SMF's, in its process).
	out, err := exec.Command(ternBinary(t), "ue", "list", "--config", cfgPath).CombinedOutput()
	if err != nil || strings.Count(string(out), " REGISTERED ") != ues || !strings.Contains(string(out), "1:internet") ||
		!strings.Contains(string(out), "this AMF does not know them") {
		t.Errorf("tern ue list against tern nf amf: %v\n%s", err, out)
	}
	procs["smf"].kill()
	// While the SMF is gone, a session request is refused at once, not at
	// the end of a deadline.
	gone := simCfg(1 + 2*ues)
	gone.UEs, gone.Scenario = 1, sim.Scenario{sim.StepRegister, sim.StepSession}
	res, err := sim.Run(context.Background(), gone)
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Steps[1]; s.Failed != 1 || s.Wall > 2*time.Second {
		t.Errorf("session with the SMF gone: %d failed in %v, want a failure within 2 s", s.Failed, s.Wall)
	} else {
		t.Logf("session with the SMF gone: refused in %v", s.Wall.Round(time.Millisecond))
	}
	procs["smf"] = startNF(t, "smf", cfgPath)
	runSim(t, simCfg(1+ues), ues)
	if t.Failed() {
		dump(t, procs)
	}
}
