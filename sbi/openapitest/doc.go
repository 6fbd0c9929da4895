// Package openapitest checks tern's HTTP/2 SBI traffic against the 3GPP
// OpenAPI descriptions (Release 17) in ../shared/openapi beside the
// repository, for tests.
//
// tern's NFs exchange free5gc's Go models; the HTTP/2 binding turns them into
// requests and responses. Nothing in Go's type system says that the JSON it
// produces, the paths and query strings it builds, the status codes and
// content types it answers with, or the multipart bodies it assembles are
// what TS 29.5xx specify. This package says so, operation by operation, so a
// test that drives the binding fails where tern would not interoperate with
// another vendor's NF.
//
// # Use
//
//	v, err := openapitest.Load(openapitest.Dir(t)) // skips without the files
//	if err != nil {
//		t.Fatal(err)
//	}
//	rec := v.Transport(t, baseTransport)          // http.RoundTripper
//	client := &http.Client{Transport: rec}
//	... drive the NFs ...
//	t.Log(rec.Operations())                       // operationIds exercised
//
// Every exchange through rec is validated; each violation is reported with
// t.Errorf naming the method, path, operationId and what is wrong. Check does
// the same for one exchange whose bodies the caller has read already.
//
// # What is checked
//
// The operation is found from the first path segment (the service name:
// nnrf-nfm, nnrf-disc, oauth2, nausf-auth, nudm-ueau, nudm-sdm, nudm-uecm,
// nudr-dr, namf-comm, nsmf-pdusession, npcf-smpolicycontrol,
// nnssf-nsselection), then the path template and method. Then:
//   - request: path, query and header parameters (kin-openapi's
//     openapi3filter), query parameters the operation does not declare, the
//     body's presence, Content-Type and schema;
//   - response: the status code, the declared headers (Location on 201s,
//     Cache-Control on token responses), the body's presence, Content-Type
//     and schema;
//   - multipart/related (N1/N2 containers): the root part is JSON and matches
//     the jsonData schema; each binary part has a Content-ID the JSON refers
//     to (RefToBinaryData) and an allowed Content-Type; each contentId the
//     JSON names has its part;
//   - application/problem+json ProblemDetails for errors.
//
// Notifications to callback URIs are checked against the callbacks of the
// operation that announced the URI: the Validator learns the URI from the
// announcing request's body (smContextStatusUri, n1n2FailureTxfNotifURI,
// deregCallbackUri, callbackReference, nfStatusNotificationUri,
// notificationUri...) when that request passes through it. ExpectCallback
// names a callback explicitly where that cannot happen.
//
// # Stricter than OpenAPI, on purpose
//
// tern is both sender and receiver of everything these tests see, so the
// checks hold it to what it should send, not merely to what a lenient peer
// would accept:
//   - 3GPP's extensible enumerations (anyOf: [enum, string]) are closed to
//     their Release 17 values, so a misspelt or empty value fails;
//   - object members no schema defines fail (a misspelt name, or a field of a
//     later release);
//   - a 2xx or 3xx status that only the catch-all "default" response covers
//     fails (it is a wrong code, e.g. 200 for 201); an error status under
//     "default" with a body must carry application/problem+json
//     ProblemDetails (TS 29.500 §5.2.7);
//   - a response with a body where the spec defines none, or without one
//     where the spec defines one, fails;
//   - the formats uuid, ipv4 and ipv6 are checked too (kin-openapi by
//     default checks date, date-time, byte, int32 and int64).
//
// # 3GPP quirks and how they are handled
//
//   - Cross-file $refs: kin-openapi's loader fails on these files: a local
//     ref inside a schema reached from another file is resolved against the
//     wrong file (SorCmci while loading Namf_Communication, TsnPortNumber
//     while loading Npcf_SMPolicyControl), and it walks every ref of every
//     file it opens, reaching TS29555_N5g-ddnmf_Discovery.yaml, which is not
//     in the directory. So each API file is bundled first (bundle.go): only
//     the components it reaches are copied in, named "<file>.<name>", and a
//     missing target would become a permissive stub (none is reached).
//   - Path items by $ref: Nudr_DR's paths are refs into Subscription_Data,
//     Policy_Data and the other data files; they are inlined.
//   - servers "{apiRoot}/nausf-auth/v1": reduced to the path, so any host
//     matches; Nnrf_AccessToken has no servers (its path is /oauth2/token).
//   - type: array without items (Subscription_Data's
//     OperatorSpecificDataContainer): given items: {}.
//   - A path that breaks OpenAPI's rules (Nudr_DR, DELETE
//     /subscription-data/group-data/{ueGroupId}/ee-subscriptions/{subsId}/hss-subscriptions
//     names its path parameter externalGroupId) is noted, not fatal; a
//     violation on it says so.
//   - Callback keys: Nudm_UEAU, Nudm_SDM and Nudm_UECM write
//     '{request.body#/...}' without the "$", read as meant; Nudr_DR's
//     '{dataRestorationCallbackUri}' is no runtime expression and can only be
//     named with ExpectCallback. Some callback operations have an operationId
//     (N1N2TransferFailureNotification), most do not: those are named
//     "ParentOperationId/callbackName" (PostSmContexts/smContextStatusNotification).
//     Where several operations define a callback of one name (Nudm_UECM's
//     deregistrationNotification), ExpectCallback takes the first in path
//     order, or "OperationId/name".
//   - Some operations have no operationId (Nausf's POST
//     /ue-authentications): they are named "METHOD /service/version/path"
//     ("POST /nausf-auth/v1/ue-authentications").
//   - multipart/related is not among kin-openapi's body decoders, and the
//     token request's x-www-form-urlencoded body holds JSON objects and
//     arrays of them, which its form decoder rejects: bodies are decoded
//     here (body.go) and validated with kin-openapi's schema validator. A
//     form field that is an array of JSON values may come as one value per
//     item or as one JSON array; the spec does not say, both pass.
//   - Security: every operation allows oAuth2ClientCredentials or nothing;
//     tokens are not checked.
//
// # What the binding must do that the models do not make obvious
//
//   - The AUSF answers POST /ue-authentications (201) and POST
//     .../eap-session (200) with Content-Type application/3gppHal+json, not
//     application/json (the 5G AKA confirmation is application/json).
//   - 201 responses carry Location; the token response carries
//     Cache-Control: no-store and Pragma: no-cache (RFC 6749 §5.1).
//   - Callback URIs must be http(s) URIs: tern's NFs use URNs
//     ("urn:tern:amf:...:sm-context-status", ":dereg"), which pass the schema
//     (Uri is any string) but which no peer can send a request to.
//   - NF instance IDs are UUIDs (NfInstanceId: format uuid); core's profiles
//     use "tern-amf" and the like, which fail.
//
// # free5gc's models against the 3GPP schemas
//
// Found by marshalling free5gc/openapi v1.3.0 models with encoding/json
// (models_test.go pins each):
//   - Every field is tagged omitempty, so a required boolean that is false or
//     a required integer that is 0 is dropped and the message lacks a
//     required member: AuthEvent.success when authentication failed
//     (Nudm_UEAU ConfirmAuth), Snssai.sst for SST 0, SorInfo.ackInd when
//     false. A required enum left at its zero value ("") is dropped the
//     same way (no empty-string enum values are ever sent). The binding
//     must marshal these members itself where the value can be zero.
//   - The models follow a later release in places: fields Release 17 does
//     not define are emitted when set: TraceData.traceReportingConsumerUri,
//     UpuData.aol and .drei, GeographicArea's vConfidence,
//     EcsAddrConfigInfo.dnn and .snssai, DnnConfiguration.ethPduMacsWhiteList.
//   - No mismatch in names or types was found in the models tern uses
//     (those of the operations in models_test.go).
package openapitest
