package failover

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/tern5g/tern/config"
)

// The command line of a unit process is a contract between the supervisor
// (unitArgs) and the unit (ParseUnitArgs), both here: tern unit only
// hands it over.

// unitArgs is the command line (after "tern unit") that runs u.
func unitArgs(cfgPath string, u UnitConfig) []string {
	args := []string{"--config", cfgPath, "--role", string(u.Role), "--epoch", strconv.FormatUint(u.Epoch, 10),
		"--records", u.Records, "--record-store-mib", strconv.Itoa(u.RecordStoreSize >> 20), "--front", u.Front}
	if u.TakeoverFrom != "" {
		args = append(args, "--takeover-from", u.TakeoverFrom)
	}
	if u.Watch > 0 {
		args = append(args, "--watch", strconv.Itoa(u.Watch))
	}
	if u.Recording != "" {
		args = append(args, "--recording", string(u.Recording))
	}
	return args
}

// ParseUnitArgs reads a unit's command line and loads its configuration.
// Its usage goes to out on -h (flag.ErrHelp).
func ParseUnitArgs(args []string, out io.Writer) (UnitConfig, error) {
	fs := flag.NewFlagSet("unit", flag.ContinueOnError)
	fs.SetOutput(out)
	cfgPath := fs.String("config", "", "the units' configuration, as tern up wrote it")
	role := fs.String("role", "", "active or standby")
	epoch := fs.Uint64("epoch", 0, "this unit's epoch, above every earlier unit's")
	records := fs.String("records", "", "this unit's record store (created)")
	storeMiB := fs.Int("record-store-mib", DefaultRecordStoreMiB, "its size in MiB")
	front := fs.String("front", "", "the N2 front end's unit socket")
	from := fs.String("takeover-from", "", "standby: the record store of the unit it replaces")
	watch := fs.Int("watch", 0, "standby: the PID of the unit it replaces (0: take over at once)")
	recording := fs.String("recording", "", "what the unit does with its records: "+string(RecordShm)+" (the default), or, to measure replication's price, "+
		string(RecordDiscard)+" (encoded, then dropped) or "+string(RecordNone)+" (none: resiliency off behind the front end)")
	if err := fs.Parse(args); err != nil {
		return UnitConfig{}, err
	}
	u := UnitConfig{Role: Role(*role), Epoch: *epoch, Records: *records, RecordStoreSize: *storeMiB << 20,
		Front: *front, TakeoverFrom: *from, Watch: *watch, Recording: Recording(*recording)}
	switch {
	case fs.NArg() > 0:
		return UnitConfig{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	case u.Role != Active && u.Role != Standby:
		return UnitConfig{}, fmt.Errorf("--role %q: want active or standby", *role)
	case *cfgPath == "" || u.Epoch == 0 || u.Records == "" || u.Front == "":
		return UnitConfig{}, errors.New("--config, --epoch, --records and --front are required (tern up starts units)")
	case *storeMiB < 1 || *storeMiB > 1<<16:
		return UnitConfig{}, fmt.Errorf("--record-store-mib %d: want 1..65536", *storeMiB)
	case *watch < 0:
		return UnitConfig{}, fmt.Errorf("--watch %d: want a PID or 0", *watch)
	case u.Recording != "" && u.Recording != RecordShm && u.Recording != RecordDiscard && u.Recording != RecordNone:
		return UnitConfig{}, fmt.Errorf("--recording %q: want %s, %s or %s", *recording, RecordShm, RecordDiscard, RecordNone)
	case u.Role == Standby && u.TakeoverFrom == "":
		return UnitConfig{}, errors.New("a standby needs --takeover-from")
	}
	cfg, err := config.Load(*cfgPath)
	if err != nil {
		return UnitConfig{}, err
	}
	u.Config = cfg
	return u, nil
}
