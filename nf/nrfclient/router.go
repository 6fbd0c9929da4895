package nrfclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/ops"
)

// Router is an ops.Caller that sends each operation to an instance of a
// producer found through discovery (TS 23.501 §6.3.1: NF discovery and
// selection through the NRF): the consumer names the NF type and the
// service, never an address. A call that cannot reach the chosen instance
// (a transport error, not an answer) drops it from the discovery cache and
// goes to the next one, so a producer that moved or restarted elsewhere is
// found again without restarting the consumer.
type Router struct {
	disc    *Discoverer
	target  sbi.NFType
	service models.Nrf_NFMgmt_ServiceName
	query   sbi.DiscoveryQuery
	dial    func(apiRoot string) ops.Caller

	mu      sync.Mutex
	callers map[string]ops.Caller // by apiRoot
}

// NewRouter routes to instances of target offering service, found by disc
// with query q (q.RequesterNFType names the consumer); dial makes the
// binding's caller of an apiRoot (httpsbi.NewCaller).
func NewRouter(disc *Discoverer, target sbi.NFType, service models.Nrf_NFMgmt_ServiceName, q sbi.DiscoveryQuery, dial func(apiRoot string) ops.Caller) *Router {
	if len(q.ServiceNames) == 0 {
		q.ServiceNames = []models.Nrf_NFMgmt_ServiceName{service}
	}
	return &Router{disc: disc, target: target, service: service, query: q, dial: dial, callers: map[string]ops.Caller{}}
}

// maxTries bounds how many instances one call tries.
const maxTries = 3

// Call implements ops.Caller.
func (r *Router) Call(ctx context.Context, op *ops.Op, req, resp any) error {
	if op.Path == "" {
		// A callback carries its absolute URI: no discovery.
		return r.caller("").Call(ctx, op, req, resp)
	}
	var last error
	for try := 0; try < maxTries; try++ {
		res, err := r.disc.Discover(ctx, r.target, r.query)
		if err != nil {
			return sbi.NewProblem(http.StatusGatewayTimeout, sbi.CauseTargetNFNotReachable, "%s: discovering a %s: %v", op, r.target, err)
		}
		var p *models.Nrf_NFDisc_NFProfile
		for i := range res.NfInstances {
			if s := res.NfInstances[i].NfStatus; s == "" || s == models.Nrf_NFMgmt_NFStatus_REGISTERED {
				p = &res.NfInstances[i]
				break
			}
		}
		if p == nil {
			if last != nil {
				return last
			}
			return sbi.NewProblem(http.StatusGatewayTimeout, sbi.CauseTargetNFNotReachable, "%s: no %s offers %s", op, r.target, r.service)
		}
		root, err := APIRoot(p, r.service)
		if err != nil {
			r.disc.Invalidate(p.NfInstanceId)
			last = err
			continue
		}
		err = r.caller(root).Call(ctx, op, req, resp)
		if err == nil || answered(err) || ctx.Err() != nil {
			return err
		}
		// Not reachable: forget the instance, ask again.
		r.disc.Invalidate(p.NfInstanceId)
		last = fmt.Errorf("%s at %s: %w", r.target, root, err)
	}
	return last
}

// answered reports whether err is the producer's answer (as opposed to a
// failure to reach it).
func answered(err error) bool {
	var pd *sbi.ProblemDetails
	var oe *sbi.OAuth2Error
	return errors.As(err, &pd) || errors.As(err, &oe)
}

func (r *Router) caller(root string) ops.Caller {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.callers[root]
	if !ok {
		c = r.dial(root)
		r.callers[root] = c
	}
	return c
}
