// Package sbi defines tern's service-based interface: the 3GPP service
// operations of the subscriber and control-plane NFs as Go interfaces whose
// arguments and results are the 3GPP data models of
// github.com/free5gc/openapi/models (TS 29.5xx OpenAPI, Rel-17).
//
// The interfaces are transport-neutral: NFs never know which binding
// carries a call. Three bindings exist, all driven by the one table of
// operations in package sbi/ops:
//
//   - in-process (tern up, the default): a consumer holds the producer and
//     the call is a Go call;
//   - HTTP/2 (package sbi/httpsbi): TS 29.500/29.501, cleartext (h2c) or
//     TLS, JSON bodies, multipart/related N1/N2 parts, problem+json errors;
//     every NF runs as its own process (tern nf NAME) and finds its peers
//     through the NRF (nf/nrfclient);
//   - shared memory (package sbi/shmsbi): NFs on one node exchange the same
//     values through the rings of sbi/shm in the binary layout of sbi/wire.
//
// Every argument and result is plain data (no callbacks, channels or
// interfaces with behaviour), and every callback is addressed by a URI or
// an ID that serializes, so that any binding can carry it.
//
// Errors returned by an operation that the peer would report as an HTTP
// problem (TS 29.500 §5.2.7.2) are *ProblemDetails; inspect them with
// errors.As or CauseOf. SM context errors with binary parts are
// *SMContextError, token endpoint errors *OAuth2Error.
package sbi
