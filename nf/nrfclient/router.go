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
		root, id, err := Pick(ctx, r.disc, r.target, r.service, r.query)
		if err != nil {
			if last != nil {
				return last
			}
			return err
		}
		err = r.caller(root).Call(ctx, op, req, resp)
		if err == nil || Answered(err) || ctx.Err() != nil {
			return err
		}
		// Not reachable: forget the instance, ask again.
		r.disc.Invalidate(id)
		last = fmt.Errorf("%s at %s: %w", r.target, root, err)
	}
	return last
}

// Pick finds, through d, the first registered instance of target that
// offers service and matches q, and returns its apiRoot and instance ID.
// The calls go to the apiRoot followed by the API's path at the version
// tern speaks (ops.ServiceVersion): an instance whose profile lists that
// apiVersionInUri (or lists none) is preferred. One that lists only
// others is still taken when no instance lists it, because deployed NFs
// advertise their product's version for every service (free5GC's UDM
// says v1 for the nudm-sdm it serves at /nudm-sdm/v2).
// Errors are 504 TARGET_NF_NOT_REACHABLE problems.
func Pick(ctx context.Context, d *Discoverer, target sbi.NFType, service models.Nrf_NFMgmt_ServiceName, q sbi.DiscoveryQuery) (root, instanceID string, err error) {
	if len(q.ServiceNames) == 0 {
		q.ServiceNames = []models.Nrf_NFMgmt_ServiceName{service}
	}
	res, err := d.Discover(ctx, target, q)
	if err != nil {
		return "", "", sbi.NewProblem(http.StatusGatewayTimeout, sbi.CauseTargetNFNotReachable, "discovering a %s: %v", target, err)
	}
	version, _, _ := ops.ServiceVersion(string(service))
	var otherRoot, otherID string // the first instance that lists other versions only
	for i := range res.NfInstances {
		p := &res.NfInstances[i]
		if s := p.NfStatus; s != "" && s != models.Nrf_NFMgmt_NFStatus_REGISTERED {
			continue
		}
		root, err := APIRoot(p, service)
		if err != nil {
			d.Invalidate(p.NfInstanceId)
			continue
		}
		if version == "" || offersVersion(p, service, version) {
			return root, p.NfInstanceId, nil
		}
		if otherRoot == "" {
			otherRoot, otherID = root, p.NfInstanceId
		}
	}
	if otherRoot != "" {
		return otherRoot, otherID, nil
	}
	return "", "", sbi.NewProblem(http.StatusGatewayTimeout, sbi.CauseTargetNFNotReachable, "no %s offers %s", target, service)
}

// Pin is an ops.Caller to one instance (a producer holding state for the
// consumer, such as an SMF its SM contexts): a call that cannot reach it
// drops the instance from d's cache, so that the next selection finds
// another, but the call is not sent elsewhere.
func Pin(d *Discoverer, instanceID string, c ops.Caller) ops.Caller {
	return pinned{c: c, d: d, id: instanceID}
}

type pinned struct {
	c  ops.Caller
	d  *Discoverer
	id string
}

func (p pinned) Call(ctx context.Context, op *ops.Op, req, resp any) error {
	err := p.c.Call(ctx, op, req, resp)
	if err != nil && !Answered(err) && ctx.Err() == nil {
		p.d.Invalidate(p.id)
	}
	return err
}

// Answered reports whether err is the producer's answer (as opposed to a
// failure to reach it).
func Answered(err error) bool {
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
