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
// `tern bench classify --quick` was silent that long (issue 37).
type progress struct {
	w     io.Writer
	every time.Duration

	mu    sync.Mutex
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
		step, took := p.step, time.Since(p.since)
		p.mu.Unlock()
		if step != "" && took >= p.every {
			fmt.Fprintf(p.w, "  ... %s (%.0f s so far)\n", step, took.Seconds())
		}
	}
}
