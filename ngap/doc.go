// Package ngap builds and parses the NGAP messages tern uses (TS 38.413).
//
// The ASN.1 APER work is done by free5gc/ngap v1.2.0; no free5gc type appears
// in this package's API, so NFs and the simulator never depend on the library.
// Decode never panics: garbled input gives a *DecodeError that carries what an
// Error Indication needs (TS 38.413 §10).
package ngap
