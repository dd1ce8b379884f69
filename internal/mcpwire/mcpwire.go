// Package mcpwire holds what gemkit knows of MCP's wire, named once: the
// protocol revisions it speaks and how one is chosen, the bounds on a
// message's size, the rule for when a path may answer or forward a
// message without go-sdk, and the one fast reader of the few members
// such a path looks at (read.go), with its one-pass scan of the plain
// shape (scan.go).
//
// It stands below every package that speaks MCP (the companion, `gemkit
// mcp` in internal/mcpserver, the client of the extensions' servers in
// internal/mcpclient and internal/extmcp, the conformance checker), and
// imports nothing of the module but internal/jsontext (a leaf: the
// checker of JSON text), so that each of them can take its facts from
// here without taking the others.
package mcpwire

import "slices"

// The revisions of MCP, as each names itself in protocolVersion and in
// the Mcp-Protocol-Version header. They are dates, so that comparing two
// as strings compares them in time, as go-sdk and the TypeScript SDK do.
const (
	Revision20241105 = "2024-11-05"
	Revision20250326 = "2025-03-26"
	Revision20250618 = "2025-06-18"
	Revision20251125 = "2025-11-25"
	Revision20260728 = "2026-07-28"
)

// Latest is the newest revision with sessions and initialize, the last
// one a path may skip go-sdk for (MaySkipSDK).
const Latest = Revision20251125

// Stateless is the first revision without sessions: from it on a request
// stands alone, carrying its revision, its client and the client's
// capabilities in its own _meta, and a client meets a server with
// server/discover rather than initialize. go-sdk v1.8.0 speaks it; the
// companion does not (the real IDE clients speak 2025-06-18).
const Stateless = Revision20260728

// revisions are the session-era revisions gemkit speaks, newest first.
var revisions = [...]string{Revision20251125, Revision20250618, Revision20250326, Revision20241105}

// Revisions are the revisions with sessions gemkit speaks, newest first:
// all of them that go-sdk v1.8.0 and the TypeScript SDK 1.23 share.
func Revisions() []string { return slices.Clone(revisions[:]) }

// Supported reports whether gemkit speaks revision v (one of Revisions).
func Supported(v string) bool { return slices.Contains(revisions[:], v) }

// Negotiate is the revision a server answers an initialize asking for
// asked with: asked itself when gemkit speaks it, else fallback. MCP lets
// a server answer with any revision it speaks; the companion answers
// with the one the real IDE clients speak rather than the newest, since
// the TypeScript SDK 1.23 refuses 2025-11-25 as an answer.
func Negotiate(asked, fallback string) string {
	if Supported(asked) {
		return asked
	}
	return fallback
}

// IsStateless reports whether revision v is Stateless or later.
func IsStateless(v string) bool { return v >= Stateless }

// The bounds on one message. Each is go-sdk v1.8.0's own default for the
// same thing, so that a message gemkit reads past the SDK's reader, or
// forwards, is one the SDK would have taken too, and each is far more
// than any tool result a model can take.
const (
	// MaxMessage bounds one message of the stdio transport (a line), in
	// both directions: what gemkit mcp reads from its client and what
	// gemkit reads from an extension's server. go-sdk:
	// mcp.DefaultMaxLineLength.
	MaxMessage = 16 << 20
	// MaxRequestBody bounds the body of one HTTP request to gemkit mcp's
	// Streamable HTTP endpoint. go-sdk: mcp.DefaultMaxRequestBodyBytes.
	MaxRequestBody = 4 << 20
	// MaxEvent bounds one server-sent event a client reads from an event
	// stream. go-sdk: mcp.DefaultMaxEventSize.
	MaxEvent = 16 << 20
)

// When a path may skip go-sdk.
//
// gemkit speaks MCP through go-sdk, except on three paths where the
// SDK's handling of a message cost more than the work itself: `gemkit
// mcp` answers a tools/list on stdio from its cached bytes
// (mcpserver/fastlist.go) and forwards a tools/call of an extension's
// server's tool straight to it, passing the server's result back as the
// server wrote it (mcpserver/fastcall.go), and the client of an
// extension's server sends a tools/call and takes its answer without the
// SDK's request machinery (mcpclient/stdioconn.go, forward.go). The
// companion speaks its small MCP with no SDK at all (an SDK could not
// send its notifications: go-sdk#745).
//
// A path may skip the SDK only for a message it understands whole, and
// must leave every other one to the SDK, which then decides, in its
// words:
//   - the revision is one with sessions, Latest or older (MaySkipSDK):
//     from Stateless on a request carries its revision and client in its
//     _meta, which the SDK checks, and a result may ask for more rounds
//     (inputResponses, requestState), which the SDK runs;
//   - the message is read as the SDK reads it (Read: members by their
//     exact names; Scan, in one pass, where it has the plain shape, and
//     Read where not), is JSON-RPC 2.0, and its id is one the SDK takes
//     (Message.WireID);
//   - its params carry nothing of the newer revisions (Params.Plain);
//   - what the path writes is what the SDK would write: byte for byte
//     where gemkit makes the answer (a tools/list), the same JSON value
//     where it passes a server's result on (a forwarded tools/call, the
//     server's own bytes under the client's id; the SDK's decoding and
//     encoding again changed only how the value was written, and left
//     out members its types do not name); each path has a test
//     comparing the two.

// MaySkipSDK reports whether a session of revision v (as negotiated; ""
// when none was) may have its messages handled without go-sdk.
func MaySkipSDK(v string) bool { return v != "" && v <= Latest }
