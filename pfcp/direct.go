package pfcp

import (
	"context"
	"errors"
	"time"
)

// ErrNoControlPlane is returned by a ControlPlane whose peer has no CPHandler.
var ErrNoControlPlane = errors.New("pfcp: no control plane handler")

// Direct returns the in-process binding for a co-located SMF and UPF: each
// UserPlane call is a plain call into up, with no encoding. cp is handed to up
// at association setup as the ControlPlane to report to (nil: reports fail
// with ErrNoControlPlane).
func Direct(up UPHandler, cp CPHandler) UserPlane {
	return &direct{up: up, cp: directCP{cp}}
}

type direct struct {
	up UPHandler
	cp directCP
}

func (d *direct) SetupAssociation(ctx context.Context, req *AssociationSetupRequest) (*AssociationSetupResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nonNil(d.up.HandleAssociationSetup(ctx, d.cp, req), "association setup")
}

func (d *direct) EstablishSession(ctx context.Context, req *SessionEstablishmentRequest) (*SessionEstablishmentResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nonNil(d.up.HandleSessionEstablishment(ctx, req), "session establishment")
}

func (d *direct) ModifySession(ctx context.Context, upSEID uint64, req *SessionModificationRequest) (*SessionModificationResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nonNil(d.up.HandleSessionModification(ctx, upSEID, req), "session modification")
}

func (d *direct) DeleteSession(ctx context.Context, upSEID uint64) (*SessionDeletionResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nonNil(d.up.HandleSessionDeletion(ctx, upSEID), "session deletion")
}

// Heartbeat is trivially answered: a co-located UPF cannot be unreachable
// and restarts only with its SMF. The recovery time is the handler's when it
// has one (UPF-C does), zero otherwise.
func (d *direct) Heartbeat(ctx context.Context) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	if r, ok := d.up.(interface{ RecoveryTime() time.Time }); ok {
		return r.RecoveryTime(), nil
	}
	return time.Time{}, nil
}

type directCP struct{ h CPHandler }

func (c directCP) ReportSession(ctx context.Context, cpSEID uint64, req *SessionReportRequest) (*SessionReportResponse, error) {
	if c.h == nil {
		return nil, ErrNoControlPlane
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nonNil(c.h.HandleSessionReport(ctx, cpSEID, req), "session report")
}

func (c directCP) ReportNode(ctx context.Context, req *NodeReportRequest) (*NodeReportResponse, error) {
	if c.h == nil {
		return nil, ErrNoControlPlane
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nonNil(c.h.HandleNodeReport(ctx, req), "node report")
}

func nonNil[T any](resp *T, what string) (*T, error) {
	if resp == nil {
		return nil, errors.New("pfcp: handler returned no " + what + " response")
	}
	return resp, nil
}
