// Package nas builds and parses the 5GS mobility management (5GMM) messages
// tern uses (TS 24.501 §8.2) and the 5GS session management (5GSM) messages of
// a PDU session's life (TS 24.501 §8.3), and protects 5GMM messages with a NAS
// security context (TS 24.501 §4.4, TS 33.501 §6.4).
//
// Encode and Decode work on plain 5GMM and 5GSM messages (the EPD selects);
// DecodeSM accepts 5GSM only, as carried in the payload container of UL/DL
// NAS TRANSPORT. SecurityContext adds and removes the security header. No
// free5gc type appears in this package's API, so callers (AMF, SMF,
// simulator) never depend on the library.
//
// The 5GMM and 5GSM wire formats are coded here, not with free5gc/nas
// v1.3.0's IE codecs: those mis-encode TAI lists of more than one TAI (PLMN
// repeated inside a type-00 list) and profile-B SUCIs (four stray octets),
// accept non-digit PLMN nibbles, go through hex strings on every message,
// parse the "modify and delete packet filters" QoS rule as full filters and
// mis-size the maximum number of supported packet filters IE. The tests run our
// encodings through free5gc's parser and decode its output.
// free5gc/nas supplies 128-NEA1/NIA1 (SNOW 3G) and 128-NEA3/NIA3 (ZUC);
// 128-NEA2/NIA2 (AES) are done here with the standard library so that the AES
// key schedule is built once per context.
package nas
