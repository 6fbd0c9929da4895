// Package sockbuf sizes a UDP socket's receive buffer past the system's
// cap where the process may, so that a simulated gNB and the UPF it
// measures get the same room for bursts (the bench must not lose at one
// end what the other would have held).
package sockbuf
