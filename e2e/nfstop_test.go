package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/internal/poll"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/httpsbi"
	"github.com/tern5g/tern/sbi/ops"
)

// TestNFStartAndStopBesideTheNRF: NFs started together with their NRF, as
// the README's script starts them, print no registration failure; and an
// NF whose NRF has gone stops on SIGTERM with exit status 0, saying at
// Warn, with the whole error, that it could not deregister.
func TestNFStartAndStopBesideTheNRF(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	d := &deployment{t: t, given: map[string]bool{}}
	cfg := config.Default()
	cfg.Log.Level = "info"
	for _, name := range config.NFNames {
		cfg.SBI.Listen[name] = d.freeTCP()
	}
	path := d.write(cfg)

	// The NFs ask before the NRF listens.
	nssf := startNF(t, "nssf", path)
	pcf := startNF(t, "pcf", path)
	nrf := startNF(t, "nrf", path)
	ctx := context.Background()
	nrfc := ops.NewClient(httpsbi.NewCaller(httpsbi.NewClient(nil), cfg.SBI.NRFRoot()), "")
	for _, tp := range []sbi.NFType{sbi.NFTypeNSSF, sbi.NFTypePCF} {
		if err := poll.Until(ctx, 10*time.Second, 20*time.Millisecond, func() bool {
			r, err := nrfc.Discover(ctx, tp, sbi.DiscoveryQuery{RequesterNFType: sbi.NFTypeAMF})
			return err == nil && len(r.NfInstances) == 1
		}); err != nil {
			dump(t, map[string]*nfProc{"nssf": nssf, "pcf": pcf, "nrf": nrf})
			t.Fatalf("%s not registered", tp)
		}
	}
	for _, p := range []*nfProc{nssf, pcf} {
		if out := p.out.String(); strings.Contains(out, "level=WARN") || strings.Contains(out, "fail") {
			t.Errorf("tern nf %s logged a failure on a normal start:\n%s", p.name, out)
		}
	}

	nrf.kill()
	nssf.stop()
	if code := nssf.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("tern nf nssf stopped by SIGTERM without its NRF: exit status %d, want 0:\n%s", code, nssf.out.String())
	}
	out := nssf.out.String()
	// The error is the NRF's absence, as the NSSF's client meets it: a
	// new connection refused, or the pooled one found closed by the
	// NRF's death (EOF, reset), whichever the race gives.
	absent := strings.Contains(out, "connection refused") || strings.Contains(out, "EOF") ||
		strings.Contains(out, "connection reset")
	if !strings.Contains(out, `level=WARN msg="NRF deregistration failed; the NRF drops this instance when its heartbeats stop"`) || !absent {
		t.Errorf("tern nf nssf does not say at Warn, with the error, that it could not deregister:\n%s", out)
	}
}
