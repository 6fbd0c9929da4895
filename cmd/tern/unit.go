package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tern5g/tern/failover"
)

// runUnit runs one unit of a replicated core: tern up starts them with
// resiliency.mode local (failover.Supervise), not an operator.
func runUnit(args []string) error {
	uc, err := failover.ParseUnitArgs(args, os.Stderr)
	if err != nil {
		return err
	}
	log := newLogger(uc.Config.Log).With("unit", uc.Epoch)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return failover.RunUnit(ctx, uc, log, func(state string, t *failover.Takeover) {
		fmt.Println(failover.UnitLine(state, t))
	})
}
