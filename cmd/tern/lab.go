package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os/signal"
	"strings"
	"syscall"

	"github.com/tern5g/tern/lab"
)

const labUsage = `usage: %s lab up|serve|down [--prefix tern] [--dnns internet,ims]

  up     build the namespaces <prefix>-ran, <prefix>-core and one per DNN, then return
         (--serve: also run the DN servers, as serve does)
  serve  run each DN's HTTP (:%d) and, if installed, iperf3 (:%d) servers until Ctrl-C; ping needs none
  down   remove the lab`

// runLab is "tern lab up|serve|down": the namespace test bed of the
// user-plane experiments (package lab). The namespaces outlive the command;
// the DN servers are goroutines and a child of this process, so only
// serve (or up --serve) holds the terminal.
func runLab(args []string) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Printf(labUsage+"\n", prog(), lab.HTTPPort, lab.IperfPort)
		return flag.ErrHelp
	}
	if len(args) == 0 || (args[0] != "up" && args[0] != "down" && args[0] != "serve") {
		return errors.New(fmt.Sprintf(labUsage, prog(), lab.HTTPPort, lab.IperfPort))
	}
	fs := flag.NewFlagSet("lab "+args[0], flag.ContinueOnError)
	prefix := fs.String("prefix", "tern", "namespace name prefix: <prefix>-ran, <prefix>-core, <prefix>-<dnn>")
	dnns := fs.String("dnns", "internet,ims", "data networks, one namespace each")
	serve := args[0] == "serve"
	if args[0] == "up" {
		fs.BoolVar(&serve, "serve", false, "after building the lab, run the DN servers until Ctrl-C (the lab stays; tern lab down removes it)")
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	l, err := lab.New(lab.Config{Prefix: *prefix, DNNs: strings.Split(*dnns, ",")})
	if err != nil {
		return err
	}
	switch args[0] {
	case "down":
		return l.Down()
	case "up":
		if err := l.Up(context.Background()); err != nil {
			return err
		}
		printLab(l, *prefix)
	}
	if !serve {
		fmt.Printf("The DN servers (%s) run with: %s lab serve --prefix %s (ping needs none).\n"+
			"Remove the lab with: %s lab down --prefix %s\n", dnServers(lab.IperfInstalled()), prog(), *prefix, prog(), *prefix)
		return nil
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	srv, err := l.StartServers(ctx)
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Printf("DN servers up on %s in each DN (%s); Ctrl-C stops them, the lab stays.\n", lab.DNServer, dnServers(srv.Iperf()))
	<-ctx.Done()
	return nil
}

// dnServers names the DN servers: HTTP always, iperf3 only where it runs
// (lab serve skips it when iperf3 is not installed, and said it ran).
func dnServers(iperf bool) string {
	if iperf {
		return fmt.Sprintf("HTTP :%d, iperf3 :%d", lab.HTTPPort, lab.IperfPort)
	}
	return fmt.Sprintf("HTTP :%d; no iperf3 server: iperf3 is not installed (make tools installs it)", lab.HTTPPort)
}

func printLab(l *lab.Lab, prefix string) {
	fmt.Printf("tern lab up: namespaces %s, %s", l.RAN(), l.Core())
	for _, d := range l.DNNs() {
		fmt.Printf(", %s", l.DN(d))
	}
	fmt.Printf("\n  N3  %s (%s) <-> %s (%s)\n", l.RAN(), lab.RANN3, l.Core(), lab.CoreN3)
	iperf := ""
	if lab.IperfInstalled() {
		iperf = fmt.Sprintf(", iperf3 :%d", lab.IperfPort)
	}
	for i, d := range l.DNNs() {
		fmt.Printf("  N6  %s %s (%s) <-> %s (%s); server %s: HTTP :%d (answers %q)%s\n",
			l.Core(), lab.N6Link(d), lab.CoreN6(i), l.DN(d), lab.DNN6(i), lab.DNServer, lab.HTTPPort, d, iperf)
	}
	fmt.Printf("Run the core with: ip netns exec %s %s up --lab --prefix %s\n", l.Core(), prog(), prefix)
	fmt.Printf("and the RAN with:  ip netns exec %s %s sim --lab --prefix %s --hold --tun --ues 2 --dnns %s\n", l.RAN(), prog(), prefix, strings.Join(l.DNNs(), ","))
}
