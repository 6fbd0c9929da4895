package main

import (
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"gopkg.in/yaml.v3"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/store"
)

// runSubscriber manages the subscriber store that the UDR serves. The
// store's engine locks it, so these commands work while `tern up` runs on
// the same store.
func runSubscriber(args []string) error {
	const usage = "usage: tern subscriber add|list|show|delete|import [flags]"
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "add":
		return subscriberAdd(args[1:])
	case "list", "ls":
		return subscriberList(args[1:])
	case "show":
		return subscriberShow(args[1:])
	case "delete", "del", "rm":
		return subscriberDelete(args[1:])
	case "import":
		return subscriberImport(args[1:])
	}
	return fmt.Errorf("unknown subscriber command %q (%s)", args[0], usage)
}

// storeFlags pick the store: the configuration's store section, or a
// SQLite file given with --store.
type storeFlags struct {
	config, path *string
}

func addStoreFlags(fs *flag.FlagSet) storeFlags {
	return storeFlags{
		config: fs.String("config", "", "YAML configuration whose store section (and served DNNs) to use (default: embedded defaults)"),
		path:   fs.String("store", "", "SQLite store file, overriding the configuration's store (default "+config.DefaultStorePath()+")"),
	}
}

// load returns the configuration with --store applied.
func (f storeFlags) load() (config.Config, error) {
	cfg, err := loadConfig(*f.config)
	if err != nil {
		return cfg, err
	}
	if *f.path != "" {
		cfg.Store.Driver, cfg.Store.Path = store.DriverSQLite, *f.path
	}
	return cfg, nil
}

// open opens the configured store. With mustExist, a SQLite file that is
// not there is an error rather than a new, empty store.
func (f storeFlags) open(cfg config.Config, mustExist bool) (*store.Store, error) {
	if mustExist {
		if err := storeExists(cfg); err != nil {
			return nil, err
		}
	}
	return store.OpenDriver(cfg.Store.Driver, cfg.Store.Source())
}

// openReadOnly opens the configured store, which must exist, for reading
// only, so that list works on a store this user may not write.
func (f storeFlags) openReadOnly(cfg config.Config) (*store.Store, error) {
	if err := storeExists(cfg); err != nil {
		return nil, err
	}
	return store.OpenDriverReadOnly(cfg.Store.Driver, cfg.Store.Source())
}

// storeExists fails for a SQLite store whose file is not there.
func storeExists(cfg config.Config) error {
	if cfg.Store.Driver == store.DriverSQLite {
		if _, err := os.Stat(cfg.Store.Path); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("no subscriber store at %s: `tern up` or `tern subscriber add` creates it; choose another with --store or --config", cfg.Store.Path)
		}
	}
	return nil
}

// where names the store for messages, without a DSN's credentials.
func where(cfg config.Config) string {
	if cfg.Store.Driver == store.DriverPostgres {
		return "the PostgreSQL store"
	}
	return cfg.Store.Path
}

// stringList is a repeatable flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func noArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags start with --)", fs.Arg(0))
	}
	return nil
}

// supiFlag checks --imsi and returns the SUPI.
func supiFlag(imsi string) (string, error) { return supiValue("--imsi", imsi) }

// supiValue checks the IMSI named name and returns the SUPI.
func supiValue(name, imsi string) (string, error) {
	if imsi == "" {
		return "", fmt.Errorf("%s is required: the subscriber's IMSI, 6-15 digits", name)
	}
	supi := "imsi-" + imsi
	if _, err := identity.ParseSUPI(supi); err != nil {
		return "", fmt.Errorf("%s: %q is not 6-15 digits", name, imsi)
	}
	return supi, nil
}

func subscriberAdd(args []string) error {
	fs := flag.NewFlagSet("subscriber add", flag.ContinueOnError)
	sf := addStoreFlags(fs)
	imsi := fs.String("imsi", "", "IMSI digits (required), e.g. 208930000000101")
	k := fs.String("k", "", "permanent key K, 32 hex digits (required)")
	opc := fs.String("opc", "", "OPc, 32 hex digits (this or --op)")
	op := fs.String("op", "", "OP, 32 hex digits (this or --opc)")
	amfField := fs.String("amf", "8000", "authentication management field, 4 hex digits")
	sqn := fs.Uint64("sqn", 0, "initial SQN_HE, 0 to 2^48-1")
	ambrUL := fs.String("ambr-ul", "1 Gbps", "UE-AMBR uplink, \"<number> <bps|Kbps|Mbps|Gbps|Tbps>\"")
	ambrDL := fs.String("ambr-dl", "2 Gbps", "UE-AMBR downlink, \"<number> <bps|Kbps|Mbps|Gbps|Tbps>\"")
	var snssais, dnns stringList
	fs.Var(&snssais, "slice", "subscribed S-NSSAI (repeatable), \"1\" or \"1-010203\"; the first is the default (default 1-010203)")
	fs.Var(&dnns, "dnn", "DNN subscribed on every slice (repeatable; one the configuration's smf.dnns serves; default internet)")
	replace := fs.Bool("replace", false, "overwrite an existing subscriber")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	cfg, err := sf.load()
	if err != nil {
		return err
	}
	sub, err := subscriberFromFlags(cfg, addFlags{imsi: *imsi, k: *k, opc: *opc, op: *op, amf: *amfField, sqn: *sqn,
		ambrUL: *ambrUL, ambrDL: *ambrDL, snssais: snssais, dnns: dnns})
	if err != nil {
		return err
	}
	st, err := sf.open(cfg, false)
	if err != nil {
		return err
	}
	defer st.Close()
	if *replace {
		err = st.Put(sub)
	} else {
		var n int
		if n, err = st.PutAll([]store.Subscriber{sub}, false); err == nil && n == 0 {
			return fmt.Errorf("%s exists (use --replace to overwrite)", sub.SUPI)
		}
	}
	if err != nil {
		return err
	}
	fmt.Printf("added %s to %s\n", sub.SUPI, where(cfg))
	return nil
}

// addFlags are the values of `subscriber add`, or of one row of the file
// `subscriber import --csv` reads.
type addFlags struct {
	imsi, k, opc, op, amf, ambrUL, ambrDL string
	sqn                                   uint64
	snssais, dnns                         []string
	// name is how messages name a value given by flag name ("k", "slice"):
	// nil for the flags, "--k"; a CSV row names its columns.
	name func(flag string) string
}

func (f addFlags) named(flag string) string {
	if f.name != nil {
		return f.name(flag)
	}
	return "--" + flag
}

// subscriberFromFlags checks every flag, naming it and what it accepts,
// and builds the subscriber.
func subscriberFromFlags(cfg config.Config, f addFlags) (store.Subscriber, error) {
	var sub store.Subscriber
	var err error
	n := f.named
	if sub.SUPI, err = supiValue(n("imsi"), f.imsi); err != nil {
		return sub, err
	}
	if sub.K, err = hexValue(n("k"), f.k, 16); err != nil {
		return sub, err
	}
	switch {
	case f.opc != "" && f.op != "":
		return sub, fmt.Errorf("%s and %s: give one, not both", n("opc"), n("op"))
	case f.opc != "":
		sub.OPType = store.OPTypeOPc
		sub.OP, err = hexValue(n("opc"), f.opc, 16)
	case f.op != "":
		sub.OPType = store.OPTypeOP
		sub.OP, err = hexValue(n("op"), f.op, 16)
	default:
		return sub, fmt.Errorf("%s or %s is required: the operator key, 32 hex digits", n("opc"), n("op"))
	}
	if err != nil {
		return sub, err
	}
	if sub.AMF, err = hexValue(n("amf"), f.amf, 2); err != nil {
		return sub, err
	}
	if f.sqn > store.MaxSQN {
		return sub, fmt.Errorf("%s: %d is above the largest 48-bit SQN, %d", n("sqn"), f.sqn, uint64(store.MaxSQN))
	}
	sub.SQN = f.sqn
	for _, r := range []struct{ flag, v string }{{"ambr-ul", f.ambrUL}, {"ambr-dl", f.ambrDL}} {
		if _, err := sbi.ParseBitRate(r.v); err != nil {
			return sub, fmt.Errorf("%s: %q is not a bit rate: want \"<number> <unit>\", unit bps, Kbps, Mbps, Gbps or Tbps, e.g. \"1 Gbps\"", n(r.flag), r.v)
		}
	}
	sub.UEAMBR = store.AMBR{Uplink: f.ambrUL, Downlink: f.ambrDL}
	snssais, dnns := f.snssais, f.dnns
	if len(snssais) == 0 {
		snssais = []string{store.DemoSNSSAI}
	}
	if len(dnns) == 0 {
		dnns = []string{store.DemoDNN}
	}
	served := servedDNNs(cfg)
	for _, d := range dnns {
		if !slices.Contains(served, d) {
			return sub, fmt.Errorf("%s: %q is not served by the configuration (smf.dnns: %s)", n("dnn"), d, strings.Join(served, ", "))
		}
	}
	for i, s := range snssais {
		if _, err := identity.ParseSNSSAI(s); err != nil {
			return sub, fmt.Errorf("%s: %q: want SST or SST-SD, e.g. 1 or 1-010203 (%v)", n("slice"), s, err)
		}
		sl := store.Slice{SNSSAI: s, Default: i == 0}
		for j, d := range dnns {
			sl.DNNs = append(sl.DNNs, store.DNN{Name: d, Default: j == 0, FiveQI: 9, ARPPriority: 8,
				SessionAMBR: store.AMBR{Uplink: "1 Gbps", Downlink: "1 Gbps"}})
		}
		sub.Slices = append(sub.Slices, sl)
	}
	// What the flags cannot get wrong on their own (a slice or DNN given
	// twice) the record's own validation names.
	if err := sub.Validate(); err != nil {
		return sub, err
	}
	return sub, nil
}

// servedDNNs are the DNNs the configured SMF serves.
func servedDNNs(cfg config.Config) []string {
	var out []string
	for _, d := range cfg.SMF.DNNs {
		if !slices.Contains(out, d.Name) {
			out = append(out, d.Name)
		}
	}
	return out
}

// hexValue decodes the value named name, which must be n bytes in hex. A
// bad value is described, never repeated: it may be a key (K, OP, OPc)
// one digit short, and errors end up in terminals, logs and tickets.
func hexValue(name, s string, n int) (store.HexBytes, error) {
	b, err := hex.DecodeString(s)
	switch {
	case len(s) != 2*n:
		return nil, fmt.Errorf("%s: want %d hex digits, have %d characters", name, 2*n, len(s))
	case err != nil:
		return nil, fmt.Errorf("%s: want %d hex digits, have %d characters that are not all hex digits", name, 2*n, len(s))
	}
	return b, nil
}

func subscriberList(args []string) error {
	fs := flag.NewFlagSet("subscriber list", flag.ContinueOnError)
	sf := addStoreFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	cfg, err := sf.load()
	if err != nil {
		return err
	}
	st, err := sf.openReadOnly(cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	subs, err := st.List()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SUPI\tOP type\tAMF\tSQN\tslices")
	for _, s := range subs {
		var sl []string
		for _, x := range s.Slices {
			sl = append(sl, x.SNSSAI)
		}
		fmt.Fprintf(tw, "%s\t%s\t%x\t%d\t%s\n", s.SUPI, s.OPType, []byte(s.AMF), s.SQN, strings.Join(sl, ","))
	}
	return tw.Flush()
}

// oneSubscriber parses the flags of a command about one existing
// subscriber (show, delete) and opens the store, which must exist.
func oneSubscriber(name, verb string, args []string) (supi string, st *store.Store, cfg config.Config, err error) {
	fs := flag.NewFlagSet("subscriber "+name, flag.ContinueOnError)
	sf := addStoreFlags(fs)
	imsi := fs.String("imsi", "", "IMSI digits of the subscriber to "+verb+" (required)")
	if err = fs.Parse(args); err != nil {
		return
	}
	if err = noArgs(fs); err != nil {
		return
	}
	if supi, err = supiFlag(*imsi); err != nil {
		return
	}
	if cfg, err = sf.load(); err != nil {
		return
	}
	st, err = sf.open(cfg, true)
	return
}

func subscriberShow(args []string) error {
	supi, st, _, err := oneSubscriber("show", "show", args)
	if err != nil {
		return err
	}
	defer st.Close()
	sub, err := st.Get(supi)
	if err != nil {
		return err
	}
	out, err := yaml.Marshal(&sub)
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(out)
	return err
}

func subscriberDelete(args []string) error {
	supi, st, cfg, err := oneSubscriber("delete", "delete", args)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Delete(supi); err != nil {
		return err
	}
	fmt.Printf("deleted %s from %s\n", supi, where(cfg))
	return nil
}

func subscriberImport(args []string) error {
	fs := flag.NewFlagSet("subscriber import", flag.ContinueOnError)
	sf := addStoreFlags(fs)
	csvPath := fs.String("csv", "", "CSV file to import: a header row naming the columns imsi, k, opc or op, and optionally amf, sqn, slices, dnns, ambr_ul, ambr_dl "+
		"(values as subscriber add takes them; several slices or DNNs separated by ';'); every row is checked first, then all are imported in one transaction or none. "+
		"An IMSI already in the store fails the import unless --replace")
	from := fs.String("from", "", "legacy subscriber log (the store file of tern before SQLite) to import; subscribers already in the store are kept unless --replace")
	replace := fs.Bool("replace", false, "overwrite subscribers the store already has")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	switch {
	case *csvPath != "" && *from != "":
		return errors.New("--csv and --from: give one, not both")
	case *csvPath != "":
		cfg, err := sf.load()
		if err != nil {
			return err
		}
		return importCSV(sf, cfg, *csvPath, *replace)
	case *from == "":
		return errors.New("--csv or --from is required: the CSV file, or the legacy subscriber log, to import")
	}
	subs, err := store.ReadLegacyFile(*from)
	if err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	cfg, err := sf.load()
	if err != nil {
		return err
	}
	st, err := sf.open(cfg, false)
	if err != nil {
		return err
	}
	defer st.Close()
	n, err := st.PutAll(subs, *replace)
	if err != nil {
		return err
	}
	fmt.Printf("imported %d of %d subscribers from %s into %s", n, len(subs), *from, where(cfg))
	if kept := len(subs) - n; kept > 0 {
		fmt.Printf(" (%d already there, kept; --replace overwrites them)", kept)
	}
	fmt.Println()
	return nil
}
