package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/tern5g/tern/core"
)

// ueUsage is `tern ue -h`.
func ueUsage() string {
	return "usage: " + prog() + " ue list|show [flags]\n\n" +
		"An operator's read-only view of the UEs a running core serves, from the AMF's state machine\n" +
		"(and the SMF's sessions): RM/CM state, serving gNB and NGAP IDs, PDU sessions and UE IPs.\n" +
		"It asks the core's operator API on a unix socket (`tern up` and `tern nf amf` serve it),\n" +
		"found from the same --config or --store: operator.socket, or the store file with .sock added.\n\n" +
		"  " + prog() + " ue list [--json]\n" +
		"  " + prog() + " ue show SUPI|IMSI [--json]\n\n" +
		"Run '" + prog() + " ue COMMAND -h' for its flags."
}

// runUE is `tern ue`.
func runUE(args []string) error { return ueCommand(args, os.Stdout) }

func ueCommand(args []string, w io.Writer) error {
	if len(args) == 0 {
		return errors.New(ueUsage())
	}
	switch args[0] {
	case "list", "ls":
		return ueList(args[1:], w)
	case "show":
		return ueShow(args[1:], w)
	}
	return fmt.Errorf("unknown ue command %q (list, show)", args[0])
}

// ueFlags pick the core to ask.
type ueFlags struct {
	config, store, socket *string
	json                  *bool
	timeout               *time.Duration
}

func addUEFlags(fs *flag.FlagSet) ueFlags {
	f := addSocketFlags(fs)
	f.json = fs.Bool("json", false, "print the operator API's JSON")
	return f
}

// addSocketFlags adds the flags that find a running core's operator
// socket (tern ue, tern drain).
func addSocketFlags(fs *flag.FlagSet) ueFlags {
	return ueFlags{
		config:  fs.String("config", "", "the YAML configuration the core runs with: its operator.socket, or its store, says where the socket is (default: embedded defaults)"),
		store:   fs.String("store", "", "the store file the core runs with (its --store): the socket is that file with .sock added"),
		socket:  fs.String("socket", "", "the operator socket itself, overriding --config and --store"),
		timeout: fs.Duration("timeout", 10*time.Second, "how long to wait for the core's answer"),
	}
}

// socketPath is where the core of the flags serves the operator API.
func (f ueFlags) socketPath() (string, error) {
	if *f.socket != "" {
		return *f.socket, nil
	}
	cfg, err := loadConfig(*f.config)
	if err != nil {
		return "", err
	}
	if *f.store != "" {
		cfg.Store.Path = *f.store
	}
	return core.OperatorSocket(cfg), nil
}

// get asks the operator API for path and decodes its JSON answer into v.
// A 404 is errNoUE (the core said it); other failures say what to do.
func (f ueFlags) get(path string, v any) error { return f.call("GET", path, v) }

// call sends method path to the operator API and, with v not nil,
// decodes its JSON answer into v.
func (f ueFlags) call(method, path string, v any) error {
	sock, err := f.socketPath()
	if err != nil {
		return err
	}
	client := &http.Client{
		Timeout: *f.timeout,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}},
	}
	defer client.CloseIdleConnections()
	// The host is a placeholder: the transport dials the socket.
	req, err := http.NewRequest(method, "http://tern"+path, nil)
	if err != nil {
		return err
	}
	rsp, err := client.Do(req)
	if err != nil {
		return unreachable(sock, err)
	}
	defer rsp.Body.Close()
	if rsp.StatusCode/100 != 2 {
		var p core.Problem
		if err := json.NewDecoder(rsp.Body).Decode(&p); err != nil || p.Detail == "" {
			p.Detail = rsp.Status
		}
		if rsp.StatusCode == http.StatusNotFound && method == "GET" {
			return &noUEError{p.Detail}
		}
		if rsp.StatusCode == http.StatusNotFound || rsp.StatusCode == http.StatusMethodNotAllowed {
			return fmt.Errorf("the core at %s does not serve %s %s (%s): is it a unit of tern up with resiliency.mode local?", sock, method, path, rsp.Status)
		}
		return fmt.Errorf("the core at %s answers %s: %s", sock, rsp.Status, p.Detail)
	}
	if v == nil {
		return nil
	}
	if err := json.NewDecoder(rsp.Body).Decode(v); err != nil {
		return fmt.Errorf("the core at %s: reading its answer: %w", sock, err)
	}
	return nil
}

// noUEError is a 404 of the operator API: the core has no such UE.
type noUEError struct{ detail string }

func (e *noUEError) Error() string { return e.detail }

// unreachable says why no core answered on sock, and what to do.
func unreachable(sock string, err error) error {
	hint := "start the core (" + prog() + " up, or " + prog() + " nf amf) with the same --config or --store, or name its socket with --socket"
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("no core serves UEs here: %s does not exist; %s", sock, hint)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("no core listens on %s (one that stopped without removing it?); %s", sock, hint)
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("%s: permission denied: the socket is its core's user's only; run as that user (e.g. with sudo)", sock)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("the core at %s: %w", sock, err)
}

func ueList(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("ue list", flag.ContinueOnError)
	uf := addUEFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	var list core.UEList
	if err := uf.get("/ues", &list); err != nil {
		return err
	}
	if *uf.json {
		return printJSON(w, list)
	}
	if len(list.UEs) == 0 && list.Busy == 0 {
		fmt.Fprintln(w, "no UEs: none registered or registering")
		return nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SUPI\tRM\tCM\tPROCEDURE\tGNB\tRAN UE ID\tTAI\tSESSIONS\tLAST ACTIVITY")
	for _, u := range list.UEs {
		id := u.SUPI
		if id == "" {
			id = u.SUCI + " (not identified yet)"
		}
		gnb, ranID, tai := "-", "-", "-"
		if r := u.RAN; r != nil {
			gnb, ranID, tai = r.GNB, fmt.Sprint(r.RANUENGAPID), r.TAI
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", id, strings.TrimPrefix(u.RMState, "RM-"),
			strings.TrimPrefix(u.CMState, "CM-"), u.Procedure, gnb, ranID, tai, sessionsCell(u.Sessions), ago(u.LastActivity, now))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d UEs\n", len(list.UEs))
	if list.Busy > 0 {
		fmt.Fprintf(w, "%d more UE contexts were busy for the whole snapshot deadline (an SBI call waiting for its own) and are not listed\n", list.Busy)
	}
	if list.SessionsBusy > 0 {
		fmt.Fprintf(w, "the SMF did not answer in time for %d UEs: their sessions show what the AMF knows\n", list.SessionsBusy)
	}
	if !list.SMF {
		fmt.Fprintln(w, "UE IPs and UPFs are the SMF's, which runs in another process: this AMF does not know them")
	}
	return nil
}

// sessionsCell is a UE's sessions in one cell: "1:internet 10.60.0.2".
func sessionsCell(ss []core.SessionView) string {
	if len(ss) == 0 {
		return "-"
	}
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = fmt.Sprintf("%d:%s", s.ID, s.DNN)
		if s.UEIP != "" {
			parts[i] += " " + s.UEIP
		}
	}
	return strings.Join(parts, ", ")
}

// ago is how long before now t was, "-" for none.
func ago(t *time.Time, now time.Time) string {
	if t == nil {
		return "-"
	}
	return now.Sub(*t).Round(time.Second).String() + " ago"
}

func ueShow(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("ue show", flag.ContinueOnError)
	uf := addUEFlags(fs)
	// The SUPI may come before the flags or after them.
	var id string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		id, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if id == "" && fs.NArg() > 0 {
		id = fs.Arg(0)
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return err
		}
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if id == "" {
		return errors.New("which UE? usage: " + prog() + " ue show SUPI (imsi-208930000000001, or the IMSI's digits)")
	}
	supi := id
	if !strings.HasPrefix(supi, "imsi-") {
		supi = "imsi-" + supi
	}
	var u core.UEView
	if err := uf.get("/ues/"+url.PathEscape(supi), &u); err != nil {
		return err
	}
	if *uf.json {
		return printJSON(w, u)
	}
	writeUE(w, u, time.Now())
	return nil
}

// writeUE prints one UE for a person.
func writeUE(w io.Writer, u core.UEView, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) {
		if v == "" {
			v = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\n", k, v)
	}
	row("SUPI", u.SUPI)
	if u.SUCI != "" {
		row("SUCI", u.SUCI)
	}
	row("5G-GUTI", u.GUTI)
	row("PEI", u.PEI)
	row("state", fmt.Sprintf("%s, %s, procedure %s", u.RMState, u.CMState, u.Procedure))
	if u.CMState == "CM-IDLE" && !u.Reachable {
		row("reachable", "no: the mobile reachable timer expired, the UE is not paged")
	}
	act := "-"
	if u.LastActivity != nil {
		act = u.LastActivity.Local().Format(time.RFC3339) + " (" + ago(u.LastActivity, now) + ")"
	}
	row("last activity", act)
	row("RAN", legLine(u.RAN))
	if u.HandoverTarget != nil {
		row("handover target", legLine(u.HandoverTarget))
	}
	row("registration area", strings.Join(u.RegistrationArea, ", "))
	row("allowed NSSAI", strings.Join(u.AllowedNSSAI, ", "))
	tw.Flush()
	fmt.Fprintf(w, "PDU sessions: %d\n", len(u.Sessions))
	if len(u.Sessions) > 0 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		// USER PLANE is the AMF's view of the N2 resources, UP CNX the
		// SMF's of the user-plane connection.
		fmt.Fprintln(tw, "  ID\tDNN\tS-NSSAI\tUE IP\tSTATE\tUSER PLANE\tUP CNX (SMF)\tUPF")
		for _, s := range u.Sessions {
			upf := s.UPF
			if s.UPFN3 != "" {
				upf += " (N3 " + s.UPFN3 + ")"
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.DNN, s.SNSSAI, dash(s.UEIP), dash(s.State), dash(s.UserPlane), dash(s.UpCnxState), dash(upf))
		}
		tw.Flush()
	}
	if u.SessionsBusy {
		fmt.Fprintln(w, "the SMF did not answer in time: the sessions show what the AMF knows")
	}
	if !u.SMF {
		fmt.Fprintln(w, "UE IPs and UPFs are the SMF's, which runs in another process: this AMF does not know them")
	}
}

// legLine describes a RAN leg on one line.
func legLine(l *core.RANLegView) string {
	if l == nil {
		return "none (CM-IDLE)"
	}
	return fmt.Sprintf("gNB %s at %s, RAN UE NGAP ID %d, AMF UE NGAP ID %d, TAI %s, cell %s, connection %s",
		dash(l.GNB), l.GNBAddress, l.RANUENGAPID, l.AMFUENGAPID, l.TAI, l.Cell, l.State)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
