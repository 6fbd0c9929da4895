package procedures

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

type recorder struct{ got []string }

func (r *recorder) Procedure(name, outcome string, d time.Duration) {
	r.got = append(r.got, name+"/"+outcome)
}

func TestReporterLogsAndObserves(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var r Reporter
	r.Ended(log, "registration", Success, time.Now(), "suci", "suci-0-208-93") // no Observer yet
	rec := &recorder{}
	r.SetObserver(rec)
	r.Ended(log, "paging", Failure, time.Now())
	r.SetObserver(nil)
	r.Ended(log, "paging", Aborted, time.Now())
	if len(rec.got) != 1 || rec.got[0] != "paging/failure" {
		t.Errorf("observed %v", rec.got)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "procedure=registration outcome=success") || !strings.Contains(lines[0], "suci=suci-0-208-93") {
		t.Errorf("log %q", buf.String())
	}
}
