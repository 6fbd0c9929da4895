// Command tern is the tern 5G core: one binary for the core itself, the
// UE/gNB simulator, the demo, the benchmarks and subscriber management.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/tern5g/tern/bench/sbi"
	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/sbi/shm"
)

// command is one subcommand; run parses its own flags. help, for a
// command made of subcommands, is what `tern COMMAND -h` prints.
type command struct {
	summary string
	run     func(args []string) error
	help    string
}

func commands() map[string]command {
	return map[string]command{
		"up":    {summary: "start the core (all NFs in one process) with embedded defaults or --config", run: runUp},
		"nf":    {summary: "run one NF as its own process: " + strings.Join(config.NFNames, ", ") + " or upf", run: runNF},
		"demo":  {summary: "start the core and a simulated RAN, run real procedures, print a report", run: runDemo},
		"sim":   {summary: "run simulated gNBs and UEs against an AMF", run: runSim},
		"bench": {summary: "run a benchmark: " + strings.Join(benchNames(), ", "), run: runBench, help: benchUsage()},
		"lab":   {summary: "build (up), serve or remove (down) the network-namespace test bed: ran | core | one DN per DNN", run: runLab},
		"subscriber": {summary: "manage the subscriber store: add, list, show, delete, import", run: runSubscriber,
			help: "usage: " + prog() + " subscriber add|list|show|delete|import [flags]\n\nRun '" + prog() + " subscriber COMMAND -h' for its flags."},
		"drain":   {summary: "drain the active unit of a replicated core: its standby takes over with every UE", run: runDrain, help: drainUsage()},
		"unit":    {summary: "run one unit of a replicated core (tern up starts them with resiliency.mode local)", run: runUnit},
		"ue":      {summary: "show the UEs a running core serves: list, show SUPI (state, RAN leg, PDU sessions, UE IPs)", run: runUE, help: ueUsage()},
		"config":  {summary: "print the effective configuration (defaults, or --config merged over them)", run: runConfig},
		"version": {summary: "print the version and the commit it was built from (also --version)", run: func([]string) error { fmt.Println(version()); return nil }},
	}
}

func main() {
	// tern bench sbi runs its shared-memory peers as this executable
	// started again; these return at once in any other process.
	shm.MaybeRunChild()
	sbi.MaybeRunProducer()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is tern with its arguments; it returns the exit status: 0, 1 when
// the command failed, 2 for a command line that names no command.
func run(args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 {
		usage(stderr, cmds)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout, cmds)
		return 0
	case "-version", "--version":
		fmt.Fprintln(stdout, version())
		return 0
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "%s: unknown command %q\n\n", prog(), args[0])
		usage(stderr, cmds)
		return 2
	}
	if c.help != "" && len(args) > 1 && isHelp(args[1]) {
		fmt.Fprintln(stdout, c.help)
		return 0
	}
	if err := c.run(args[1:]); err != nil {
		// A flag set's -h has printed the command's usage already.
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "%s %s: %v\n", prog(), args[0], err)
		return 1
	}
	return 0
}

func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

// prog is the name tern was invoked by ("bin/tern", "./tern", "tern"), so
// that the commands printed as hints can be pasted back as they are.
func prog() string {
	if len(os.Args) > 0 && os.Args[0] != "" && !strings.HasSuffix(os.Args[0], ".test") {
		return os.Args[0]
	}
	return "tern"
}

func usage(w io.Writer, cmds map[string]command) {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "tern: a low-latency 5G core\n\nusage: %s COMMAND [flags]\n\ncommands:\n", prog())
	for _, n := range names {
		fmt.Fprintf(&b, "  %-11s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintf(&b, "\nRun '%s COMMAND -h' for a command's flags, '%s --version' for the version.\n", prog(), prog())
	fmt.Fprint(w, b.String())
}

// benches are the benchmarks of `tern bench`, in the order the help lists
// them.
var benches = []struct {
	name string
	run  func([]string) error
}{
	{"register", benchRegister},
	{"session", benchSession},
	{"pfcp", benchPFCP},
	{"sbi", benchSBI},
	{"upf", benchUPF},
	{"classify", benchClassify},
	{"paging", benchPaging},
	{"handover", benchHandover},
	{"restore", benchRestore},
	{"failover", benchFailover},
}

func benchNames() []string {
	names := make([]string, len(benches))
	for i, b := range benches {
		names[i] = b.name
	}
	return names
}

func benchUsage() string {
	return fmt.Sprintf("usage: %s bench %s [flags]\n\nRun '%s bench NAME -h' for a benchmark's flags.",
		prog(), strings.Join(benchNames(), "|"), prog())
}

func runBench(args []string) error {
	if len(args) == 0 {
		return errors.New(benchUsage())
	}
	for _, b := range benches {
		if b.name == args[0] {
			return b.run(args[1:])
		}
	}
	return fmt.Errorf("unknown benchmark %q (have: %s)", args[0], strings.Join(benchNames(), ", "))
}
