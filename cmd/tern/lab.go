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

// runLab is "tern lab up|down": the namespace test bed of the user-plane
// experiments (package lab).
func runLab(args []string) error {
	if len(args) == 0 || (args[0] != "up" && args[0] != "down") {
		return errors.New("usage: tern lab up|down [--prefix tern] [--dnns internet,ims]")
	}
	fs := flag.NewFlagSet("lab "+args[0], flag.ContinueOnError)
	prefix := fs.String("prefix", "tern", "namespace name prefix: <prefix>-ran, <prefix>-core, <prefix>-<dnn>")
	dnns := fs.String("dnns", "internet,ims", "data networks, one namespace each")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	l, err := lab.New(lab.Config{Prefix: *prefix, DNNs: strings.Split(*dnns, ",")})
	if err != nil {
		return err
	}
	if args[0] == "down" {
		return l.Down()
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := l.Up(ctx); err != nil {
		return err
	}
	defer l.Down()
	srv, err := l.StartServers(ctx)
	if err != nil {
		return err
	}
	defer srv.Close()

	fmt.Printf("tern lab up: namespaces %s, %s", l.RAN(), l.Core())
	for _, d := range l.DNNs() {
		fmt.Printf(", %s", l.DN(d))
	}
	fmt.Printf("\n  N3  %s (%s) <-> %s (%s)\n", l.RAN(), lab.RANN3, l.Core(), lab.CoreN3)
	for i, d := range l.DNNs() {
		fmt.Printf("  N6  %s %s (%s) <-> %s (%s); server %s: HTTP :%d (answers %q), iperf3 :%d\n",
			l.Core(), lab.N6Link(d), lab.CoreN6(i), l.DN(d), lab.DNN6(i), lab.DNServer, lab.HTTPPort, d, lab.IperfPort)
	}
	fmt.Printf("Run the core with: ip netns exec %s tern up --lab --prefix %s\n", l.Core(), *prefix)
	fmt.Printf("and the RAN with:  ip netns exec %s tern sim --lab --prefix %s --hold --tun --ues 2 --dnns %s\n", l.RAN(), *prefix, strings.Join(l.DNNs(), ","))
	fmt.Println("Ctrl-C tears the lab down.")
	<-ctx.Done()
	return nil
}
