// Package n2front is the N2 front end of tern's resiliency (issue 36 §3,
// docs/resiliency.md): it keeps the gNBs' SCTP associations in one
// process (the supervisor) while the unit that serves them (the AMF and
// the NFs behind it) runs in another, so that a unit can die and a standby
// can take over without a gNB noticing: the gNB keeps its association and
// its UE NGAP IDs, and sees no NG Setup and no NG Reset.
//
// # The message path
//
//	gNB ══SCTP══ Front ══unit link (Unix SOCK_SEQPACKET)══ Link ── Conn ── AMF
//	             │ stamp, replay log
//
// A Front (in the supervisor) accepts gNB associations from an
// sctp.Listener and units on a Unix socket. A unit dials it (Dial) with
// its epoch and gets, through Link.Accept, one Conn per gNB association:
// an sctp.Conn whose Recv yields the gNB's messages with Message.Stamp
// set, whose Send goes to the gNB, and which is an sctp.Acker.
//
//   - Uplink: the front gives every message of a gNB a stamp (increasing,
//     front-wide), appends it to the replay log and queues it to the
//     active unit, in stamp order. It stays in the log until the unit
//     acknowledges its stamp (Conn.Ack), which the unit does once the
//     state the message changed is committed. Delivery is at least once:
//     after a failover a unit may see a message whose step its
//     predecessor committed but whose acknowledgement did not reach the
//     front, and must apply a stamp once.
//   - Downlink: a unit's message goes to the association it names, sent
//     on the link's reader goroutine (a gNB association's Send does not
//     wait for the gNB). A message for an association that has ended is
//     dropped and counted.
//   - The end of a gNB association is reported to the unit (Recv returns
//     io.EOF after the messages before it); its logged messages are
//     dropped: the UE connections on it are gone anyway (TS 23.502
//     §4.2.6). Conn.Close asks the front to shut the association down.
//
// # Fencing and failover
//
// A unit says its epoch in its hello. The front serves only the highest
// epoch it has seen: a unit whose epoch is not above it is refused
// (ErrFenced), so a primary that comes back after its replica took over
// can never send to a gNB again; a unit with a higher epoch replaces the
// active one at once (the old link is closed, and no message the old unit
// sends after that reaches a gNB, nor do its acknowledgements count).
//
// When the active unit's link ends (the process died: EOF or reset on the
// socket, or it stopped reading for Config.WriteTimeout), the front keeps
// the associations, keeps stamping and logging their messages and waits
// for a unit with a higher epoch. To that unit it sends, in this order: an
// open per live association, then a marker (Link.Opened: the unit now
// knows which associations it resumes; restored UE connections on any
// other gNB are lost), then every message of the log in stamp order, then
// live traffic. An association that finished NG Setup with an
// earlier unit is opened with Resume.Resumed set and the NG Setup Request
// that the last successful NG Setup Response answered, with the RAN
// Configuration Updates acknowledged since (the front watches these
// procedures pass with ngap.Header; once answered, a request leaves the
// log, since the open carries it). The unit rebuilds the gNB's context
// from them without answering; an NG Setup or RAN Configuration Update
// answer that no request of the gNB waits for is dropped by the front
// (counted), so a unit may as well run its usual handler.
//
// # Bounds
//
// The replay log is bounded (Config.MaxLogMessages, MaxLogBytes). When it
// is full, a new uplink message is refused: not logged, not forwarded,
// counted (Stats.LogFull). It is lost as a packet on the radio would be:
// the UE's NAS timers or the gNB's procedure timers send it again. The
// front does not drop logged messages to make room: a unit that took a
// step would then have a replica that cannot. The log fills only when
// units do not acknowledge: while no unit is active, or when the active
// one falls behind. Associations that come while no unit is active wait,
// their messages logged, within the same bounds; Config.MaxAssociations
// bounds the associations (one more is shut down at once). An association
// keeps at most its last 16 RAN Configuration Updates for a resume
// (Stats.ConfigUpdatesDropped counts the ones forgotten).
//
// # The unit link
//
// One frame per SOCK_SEQPACKET record, compact binary, versioned (the
// layout is in frame.go). A malformed frame from either side is counted
// and ends that link; a front never panics on what a unit sends, nor a
// unit on what a front sends. The socket is its owner's only (mode 0600,
// and the front refuses a unit of another user, SO_PEERCRED). The unit
// writes its acknowledgements from one goroutine, batched, so Ack never
// waits; a Send waits for the link at most a second.
package n2front
