package pfcp

import (
	"context"
	"net/netip"
	"time"
)

// UserPlane is what an SMF calls on a UPF. Both Direct and Endpoint.UserPlane
// implement it. Errors mean no response was obtained (timeout, closed, encode
// failure); a rejection arrives as a response with a non-accepted Cause.
type UserPlane interface {
	SetupAssociation(ctx context.Context, req *AssociationSetupRequest) (*AssociationSetupResponse, error)
	EstablishSession(ctx context.Context, req *SessionEstablishmentRequest) (*SessionEstablishmentResponse, error)
	ModifySession(ctx context.Context, upSEID uint64, req *SessionModificationRequest) (*SessionModificationResponse, error)
	DeleteSession(ctx context.Context, upSEID uint64) (*SessionDeletionResponse, error)
	// Heartbeat returns the peer's Recovery Time Stamp (TS 29.244 §6.2.2):
	// a value other than the one the peer advertised before means it
	// restarted and lost its sessions.
	Heartbeat(ctx context.Context) (recovery time.Time, err error)
}

// ControlPlane is what a UPF calls on its SMF.
type ControlPlane interface {
	ReportSession(ctx context.Context, cpSEID uint64, req *SessionReportRequest) (*SessionReportResponse, error)
	// ReportNode sends a PFCP Node Report Request (§6.2.9, §7.4.5), e.g. a
	// User Plane Path Failure Report.
	ReportNode(ctx context.Context, req *NodeReportRequest) (*NodeReportResponse, error)
}

// UPHandler serves PFCP requests at a UPF (implemented by UPF-C). Handlers
// must return a non-nil response.
type UPHandler interface {
	// HandleAssociationSetup gets, in from, a client back to the requesting
	// CP function so that the UPF can send Session Report Requests.
	HandleAssociationSetup(ctx context.Context, from ControlPlane, req *AssociationSetupRequest) *AssociationSetupResponse
	HandleAssociationRelease(ctx context.Context, req *AssociationReleaseRequest) *AssociationReleaseResponse
	HandleSessionEstablishment(ctx context.Context, req *SessionEstablishmentRequest) *SessionEstablishmentResponse
	HandleSessionModification(ctx context.Context, seid uint64, req *SessionModificationRequest) *SessionModificationResponse
	HandleSessionDeletion(ctx context.Context, seid uint64) *SessionDeletionResponse
}

// CPHandler serves PFCP requests at an SMF (implemented by the SMF).
type CPHandler interface {
	HandleSessionReport(ctx context.Context, seid uint64, req *SessionReportRequest) *SessionReportResponse
	// HandleNodeReport serves a Node Report Request (§6.2.9.2); the
	// reporting UP function is the request's Node ID.
	HandleNodeReport(ctx context.Context, req *NodeReportRequest) *NodeReportResponse
}

// PacketTap observes every PFCP datagram the Endpoint sends or receives (same
// shape as sctp.PacketTap; pcap.Writer implements it). It is called
// synchronously: keep it fast and do not retain udpPayload.
type PacketTap interface {
	Packet(outbound bool, local, remote netip.AddrPort, udpPayload []byte)
}
