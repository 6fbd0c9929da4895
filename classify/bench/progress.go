package bench

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// DefaultProgressEvery is Config.ProgressEvery's default.
const DefaultProgressEvery = 5 * time.Second

// progress tells w what the run is doing: the current step, named when it
// starts, and every `every` while it lasts, a line saying it still runs
// and for how long. A step of the run can take tens of seconds (a
// 100,000-rule build of a slow classifier on a loaded machine), and
// `tern bench classify --quick` was silent that long (issue 37). Its
// reminders and the run's own lines (printf) are written under one lock,
// so w (Config.Log) gets one write at a time.
type progress struct {
	w     io.Writer
	every time.Duration

	mu    sync.Mutex // guards step, since and writes to w
	step  string
	since time.Time

	stop chan struct{}
	done chan struct{}
}

// startProgress starts the reminders on w (nil: none).
func startProgress(w io.Writer, every time.Duration) *progress {
	if every <= 0 {
		every = DefaultProgressEvery
	}
	p := &progress{w: w, every: every, stop: make(chan struct{}), done: make(chan struct{})}
	if w == nil {
		close(p.done)
		return p
	}
	go p.remind()
	return p
}

// begin names the step the run is now on (fmt.Sprintf's format).
func (p *progress) begin(format string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.step, p.since = fmt.Sprintf(format, a...), time.Now()
}

// printf writes a line of the run's own to w (nil: nowhere), never at
// the same time as a reminder.
func (p *progress) printf(format string, a ...any) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format, a...)
}

// end stops the reminders.
func (p *progress) end() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
}

func (p *progress) remind() {
	defer close(p.done)
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		p.mu.Lock()
		if took := time.Since(p.since); p.step != "" && took >= p.every {
			fmt.Fprintf(p.w, "  ... %s (%.0f s so far)\n", p.step, took.Seconds())
		}
		p.mu.Unlock()
	}
}
