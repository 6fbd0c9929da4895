package main

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/store"
)

// The file of `tern subscriber import --csv`: a header row naming the
// columns, then one subscriber per row. Each column is the flag of
// `tern subscriber add` of the same name and takes the same values;
// slices and dnns take several values separated by ';'.
//
//	imsi,k,opc,slices,dnns
//	208930000000101,8baf473f2f8fd09487cccbd7097c6862,8e27b6af0e692e750f32667a3b14605d,1-010203;2,internet;ims
//
// Lines starting with # are comments. Every row is checked before anything
// is written, and every bad row is reported with its line number.

// csvColumns are the columns a file may have, by canonical name, each with
// the flag of subscriber add it stands for; aliases map other spellings.
var (
	csvColumns = []string{"imsi", "k", "opc", "op", "amf", "sqn", "slices", "dnns", "ambr_ul", "ambr_dl"}
	csvAliases = map[string]string{
		"slice": "slices", "dnn": "dnns", "ambr-ul": "ambr_ul", "ambr-dl": "ambr_dl",
	}
	// csvFlag is the flag of subscriber add (what subscriberFromFlags
	// names) of the columns whose names differ.
	csvFlag = map[string]string{"slices": "slice", "dnns": "dnn", "ambr_ul": "ambr-ul", "ambr_dl": "ambr-dl"}
)

// csvRow is one subscriber read from the file, with the line it came from.
type csvRow struct {
	line int
	sub  store.Subscriber
}

// csvErrors are the problems of a file, one line each, all found before
// anything was written: the first maxListed, and how many more.
type csvErrors struct {
	file string
	bad  lineList // "line N: what"
	rows int      // rows read
}

func (e *csvErrors) Error() string {
	return fmt.Sprintf("%s: %d of %d rows are bad, nothing imported:%s", e.file, e.bad.n(), e.rows, e.bad)
}

// maxListed is how many lines an error lists: a file of 100,000 bad rows
// gets a readable error, not a 100,000-line one.
const maxListed = 20

// lineList keeps the first maxListed lines of a report and counts the
// others.
type lineList struct {
	lines []string
	more  int
}

func (l *lineList) add(format string, a ...any) {
	if len(l.lines) == maxListed {
		l.more++
		return
	}
	l.lines = append(l.lines, fmt.Sprintf(format, a...))
}

// n is how many lines were added.
func (l *lineList) n() int { return len(l.lines) + l.more }

// String is the lines, each on its own indented line, then "and N more".
func (l lineList) String() string {
	var b strings.Builder
	for _, s := range l.lines {
		b.WriteString("\n  " + s)
	}
	if l.more > 0 {
		fmt.Fprintf(&b, "\n  and %d more", l.more)
	}
	return b.String()
}

// readSubscriberCSV reads and checks every row of the file at path
// against cfg (the DNNs it serves), as `subscriber add` checks its flags.
// It returns the subscribers, or a *csvErrors listing every bad row.
func readSubscriberCSV(cfg config.Config, path string) ([]csvRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseSubscriberCSV(cfg, path, f)
}

func parseSubscriberCSV(cfg config.Config, name string, r io.Reader) ([]csvRow, error) {
	cr := csv.NewReader(bufio.NewReader(r))
	cr.Comment = '#'
	cr.FieldsPerRecord = -1 // counted here, so that one short row does not hide the rest
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: empty: want a header row naming the columns (%s)", name, strings.Join(csvColumns, ","))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	cols, err := csvHeader(header)
	if err != nil {
		line, _ := cr.FieldPos(0)
		return nil, fmt.Errorf("%s: line %d: %w", name, line, err)
	}
	// named is how a row's messages name a value: by the header's column.
	spelled := map[string]string{}
	for i, c := range cols {
		spelled[c] = strings.TrimSpace(header[i])
	}
	named := func(flag string) string {
		for col, f := range csvFlag {
			if f == flag {
				flag = col
			}
		}
		if s, ok := spelled[flag]; ok {
			return "column " + s
		}
		return "column " + flag
	}
	e := &csvErrors{file: name}
	var out []csvRow
	firstLine := map[string]int{} // SUPI -> line
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			e.rows++
			e.bad.add("line %d: %v", pe.StartLine, pe.Err)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		e.rows++
		line, _ := cr.FieldPos(0)
		if len(rec) != len(cols) {
			e.bad.add("line %d: %d fields, the header names %d", line, len(rec), len(cols))
			continue
		}
		sub, err := csvSubscriber(cfg, cols, rec, named)
		if err != nil {
			e.bad.add("line %d: %v", line, err)
			continue
		}
		if first, ok := firstLine[sub.SUPI]; ok {
			e.bad.add("line %d: %s is also on line %d", line, sub.SUPI, first)
			continue
		}
		firstLine[sub.SUPI] = line
		out = append(out, csvRow{line: line, sub: sub})
	}
	if e.bad.n() > 0 {
		return nil, e
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no subscribers after the header", name)
	}
	return out, nil
}

// csvHeader maps the header's columns to their canonical names and checks
// that the required ones are there.
func csvHeader(header []string) ([]string, error) {
	cols := make([]string, len(header))
	for i, h := range header {
		c := strings.ToLower(strings.TrimSpace(h))
		if i == 0 {
			c = strings.TrimPrefix(c, "\ufeff") // a spreadsheet's byte order mark
		}
		if a, ok := csvAliases[c]; ok {
			c = a
		}
		if !slices.Contains(csvColumns, c) {
			return nil, fmt.Errorf("header: unknown column %q (the columns are %s)", h, strings.Join(csvColumns, ", "))
		}
		if slices.Contains(cols[:i], c) {
			return nil, fmt.Errorf("header: column %q given twice", h)
		}
		cols[i] = c
	}
	for _, need := range []string{"imsi", "k"} {
		if !slices.Contains(cols, need) {
			return nil, fmt.Errorf("header: no %s column (required: imsi, k, and opc or op)", need)
		}
	}
	if !slices.Contains(cols, "opc") && !slices.Contains(cols, "op") {
		return nil, errors.New("header: no opc or op column (required: imsi, k, and opc or op)")
	}
	return cols, nil
}

// csvSubscriber builds one row's subscriber with the checks and defaults
// of subscriber add (subscriberFromFlags).
func csvSubscriber(cfg config.Config, cols, rec []string, named func(string) string) (store.Subscriber, error) {
	f := addFlags{amf: "8000", ambrUL: "1 Gbps", ambrDL: "2 Gbps", name: named}
	for i, c := range cols {
		v := strings.TrimSpace(rec[i])
		if v == "" {
			continue // the default, or "missing" for the required ones
		}
		switch c {
		case "imsi":
			f.imsi = strings.TrimPrefix(v, "imsi-")
		case "k":
			f.k = v
		case "opc":
			f.opc = v
		case "op":
			f.op = v
		case "amf":
			f.amf = v
		case "sqn":
			sqn, err := parseSQN(v)
			if err != nil {
				return store.Subscriber{}, fmt.Errorf("%s: %q: want a decimal number, or hex with 0x", named("sqn"), v)
			}
			f.sqn = sqn
		case "slices":
			f.snssais = splitCell(v)
		case "dnns":
			f.dnns = splitCell(v)
		case "ambr_ul":
			f.ambrUL = v
		case "ambr_dl":
			f.ambrDL = v
		}
	}
	return subscriberFromFlags(cfg, f)
}

// parseSQN reads a decimal SQN, or a hex one with 0x (as some HSS exports
// write it).
func parseSQN(s string) (uint64, error) {
	if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		return strconv.ParseUint(h, 16, 64)
	}
	return strconv.ParseUint(s, 10, 64)
}

// splitCell splits a cell of several values ("1-010203;2").
func splitCell(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ";") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// importCSV imports the subscribers of the CSV file at path into the
// configured store, all or none.
func importCSV(sf storeFlags, cfg config.Config, path string, replace bool) error {
	rows, err := readSubscriberCSV(cfg, path)
	if err != nil {
		return err
	}
	subs := make([]store.Subscriber, len(rows))
	for i, r := range rows {
		subs[i] = r.sub
	}
	st, err := sf.open(cfg, false)
	if err != nil {
		return err
	}
	defer st.Close()
	n, err := st.ImportAll(subs, replace)
	var exist *store.ExistError
	if errors.As(err, &exist) {
		line := make(map[string]int, len(rows))
		for _, r := range rows {
			line[r.sub.SUPI] = r.line
		}
		var l lineList
		for _, s := range exist.SUPIs {
			l.add("line %d: %s", line[s], s)
		}
		return fmt.Errorf("%s: %d subscribers are already in %s, nothing imported (--replace overwrites them):%s", path, len(exist.SUPIs), where(cfg), l)
	}
	if err != nil {
		return err
	}
	fmt.Printf("imported %d subscribers from %s into %s", n, path, where(cfg))
	if replace {
		fmt.Print(" (those already there replaced)")
	}
	fmt.Println()
	return nil
}
