// Command tern is the tern 5G core: one binary for the core itself, the
// UE/gNB simulator, the demo, the benchmarks and subscriber management.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
)

// command is one subcommand; run parses its own flags.
type command struct {
	summary string
	run     func(args []string) error
}

func commands() map[string]command {
	return map[string]command{
		"up":         {"start the core (all NFs in one process) with embedded defaults or --config", runUp},
		"nf":         {"run one NF as its own process (upf)", runNF},
		"demo":       {"start the core and a simulated RAN, run real procedures, print a report", runDemo},
		"sim":        {"run simulated gNBs and UEs against an AMF", runSim},
		"bench":      {"run a benchmark: register, session, pfcp, upf, classify, paging, handover, restore", runBench},
		"lab":        {"build (up) or remove (down) the network-namespace test bed: ran | core | one DN per DNN", runLab},
		"subscriber": {"manage the subscriber store: add, list, show, delete, import", runSubscriber},
		"config":     {"print the effective configuration (defaults, or --config merged over them)", runConfig},
		"version":    {"print the version", func([]string) error { fmt.Println(version()); return nil }},
	}
}

func main() {
	cmds := commands()
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage(cmds)
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	c, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "tern: unknown command %q\n\n", os.Args[1])
		usage(cmds)
		os.Exit(2)
	}
	if err := c.run(os.Args[2:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintf(os.Stderr, "tern %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage(cmds map[string]command) {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("tern: a low-latency 5G core\n\nusage: tern COMMAND [flags]\n\ncommands:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  %-11s %s\n", n, cmds[n].summary)
	}
	b.WriteString("\nRun 'tern COMMAND -h' for a command's flags.\n")
	fmt.Fprint(os.Stderr, b.String())
}

func runBench(args []string) error {
	benches := map[string]func([]string) error{
		"register": benchRegister,
		"classify": benchClassify,
		"pfcp":     benchPFCP,
		"session":  benchSession,
		"upf":      benchUPF,
		"paging":   benchPaging,
		"handover": benchHandover,
		"restore":  benchRestore,
	}
	names := make([]string, 0, len(benches))
	for n := range benches {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(args) == 0 {
		return fmt.Errorf("usage: tern bench %s [flags]", strings.Join(names, "|"))
	}
	b, ok := benches[args[0]]
	if !ok {
		return fmt.Errorf("unknown benchmark %q (have: %s)", args[0], strings.Join(names, ", "))
	}
	return b(args[1:])
}
