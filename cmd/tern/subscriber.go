package main

import (
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/identity"
	"github.com/tern5g/tern/store"
)

// runSubscriber manages the subscriber store that the UDR serves.
func runSubscriber(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: tern subscriber add|list|delete [flags]")
	}
	switch args[0] {
	case "add":
		return subscriberAdd(args[1:])
	case "list":
		return subscriberList(args[1:])
	case "delete", "del", "rm":
		return subscriberDelete(args[1:])
	}
	return fmt.Errorf("unknown subscriber command %q (have: add, list, delete)", args[0])
}

func storeFlag(fs *flag.FlagSet) *string {
	return fs.String("store", config.DefaultStorePath(), "subscriber store file")
}

// stringList is a repeatable flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func subscriberAdd(args []string) error {
	fs := flag.NewFlagSet("subscriber add", flag.ContinueOnError)
	path := storeFlag(fs)
	imsi := fs.String("imsi", "", "IMSI digits (required), e.g. 208930000000101")
	k := fs.String("k", "", "permanent key K, 32 hex digits (required)")
	opc := fs.String("opc", "", "OPc, 32 hex digits (this or --op)")
	op := fs.String("op", "", "OP, 32 hex digits (this or --opc)")
	amfField := fs.String("amf", "8000", "authentication management field, 4 hex digits")
	sqn := fs.Uint64("sqn", 0, "initial SQN_HE")
	ambrUL := fs.String("ambr-ul", "1 Gbps", "UE-AMBR uplink")
	ambrDL := fs.String("ambr-dl", "2 Gbps", "UE-AMBR downlink")
	var slices, dnns stringList
	fs.Var(&slices, "slice", "subscribed S-NSSAI (repeatable), \"1\" or \"1-010203\"; the first is the default (default 1-010203)")
	fs.Var(&dnns, "dnn", "DNN subscribed on every slice (repeatable; default internet)")
	replace := fs.Bool("replace", false, "overwrite an existing subscriber")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *imsi == "" || *k == "" {
		return errors.New("--imsi and --k are required")
	}
	if (*opc == "") == (*op == "") {
		return errors.New("give exactly one of --opc and --op")
	}
	sub := store.Subscriber{SUPI: "imsi-" + *imsi, OPType: store.OPTypeOPc, SQN: *sqn,
		UEAMBR: store.AMBR{Uplink: *ambrUL, Downlink: *ambrDL}}
	var err error
	if sub.K, err = hexField("k", *k); err != nil {
		return err
	}
	opHex := *opc
	if *op != "" {
		opHex, sub.OPType = *op, store.OPTypeOP
	}
	if sub.OP, err = hexField("op", opHex); err != nil {
		return err
	}
	if sub.AMF, err = hexField("amf", *amfField); err != nil {
		return err
	}
	if len(slices) == 0 {
		slices = stringList{store.DemoSNSSAI}
	}
	if len(dnns) == 0 {
		dnns = stringList{store.DemoDNN}
	}
	for i, s := range slices {
		if _, err := identity.ParseSNSSAI(s); err != nil {
			return fmt.Errorf("--slice: %w", err)
		}
		sl := store.Slice{SNSSAI: s, Default: i == 0}
		for j, d := range dnns {
			sl.DNNs = append(sl.DNNs, store.DNN{Name: d, Default: j == 0, FiveQI: 9, ARPPriority: 8,
				SessionAMBR: store.AMBR{Uplink: "1 Gbps", Downlink: "1 Gbps"}})
		}
		sub.Slices = append(sub.Slices, sl)
	}
	if err := sub.Validate(); err != nil {
		return err
	}
	st, err := store.Open(*path)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Get(sub.SUPI); err == nil && !*replace {
		return fmt.Errorf("%s exists (use --replace to overwrite)", sub.SUPI)
	}
	if err := st.Put(sub); err != nil {
		return err
	}
	fmt.Printf("added %s to %s\n", sub.SUPI, *path)
	return nil
}

func hexField(name, s string) (store.HexBytes, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", name, err)
	}
	return b, nil
}

func subscriberList(args []string) error {
	fs := flag.NewFlagSet("subscriber list", flag.ContinueOnError)
	path := storeFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	st, err := store.Open(*path)
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

func subscriberDelete(args []string) error {
	fs := flag.NewFlagSet("subscriber delete", flag.ContinueOnError)
	path := storeFlag(fs)
	imsi := fs.String("imsi", "", "IMSI digits of the subscriber to delete (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *imsi == "" {
		return errors.New("--imsi is required")
	}
	st, err := store.Open(*path)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Delete("imsi-" + *imsi); err != nil {
		return err
	}
	fmt.Printf("deleted imsi-%s from %s\n", *imsi, *path)
	return nil
}
