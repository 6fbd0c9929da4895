package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func drainUsage() string {
	return "usage: " + prog() + " drain [--config FILE | --store FILE | --socket PATH]\n\n" +
		"Drains the active unit of a core that runs with resiliency.mode local: the unit stops\n" +
		"taking messages, finishes what it started and leaves, and its standby takes over with\n" +
		"every UE (no UE is signalled; docs/resiliency.md). tern up starts a new standby, so a\n" +
		"drain is also how a unit is restarted, for instance after the binary was upgraded."
}

func runDrain(args []string) error { return drainCommand(args, os.Stdout) }

func drainCommand(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("drain", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), drainUsage()); fs.PrintDefaults() }
	f := addSocketFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := f.call("POST", "/unit/drain", nil); err != nil {
		return err
	}
	fmt.Fprintln(w, "draining: the standby unit takes over")
	return nil
}
