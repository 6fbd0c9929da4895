// Package sbi defines tern's service-based interface: the 3GPP service
// operations of the subscriber and control-plane NFs as Go interfaces whose
// arguments and results are the 3GPP data models of
// github.com/free5gc/openapi/models (TS 29.5xx OpenAPI, Rel-17).
//
// The interfaces are transport-neutral. In the default "unit" deployment an NF
// calls another NF's implementation directly (the in-process binding is just a
// Go call); the HTTP/2 and shared-memory bindings marshal exactly the values
// seen here. Therefore every argument and result is plain data: no callbacks,
// channels or interfaces with behaviour.
//
// Errors returned by an operation that the peer would report as an HTTP
// problem (TS 29.500 §5.2.7.2) are *ProblemDetails; inspect them with
// errors.As or CauseOf.
package sbi
