package mcpwire

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/segmentio/encoding/json"
)

// The reader of the fast paths reads a message the way go-sdk v1.8.0
// reads it, with the same library and the same setting: the SDK decodes
// every message with github.com/segmentio/encoding and
// DontMatchCaseInsensitiveStructFields (its internal/json, since
// go-sdk#805), so that a member is taken only by its exact name, and the
// last of two with that name wins. encoding/json would also take "ID" or
// "Name" for a struct's field: a path reading with it could then answer
// another id, or call another tool, than the SDK would. Reading with the
// SDK's own decoder makes the two agree by construction rather than by a
// scanner of our own kept in step with it (five of them were, in three
// packages), and it is the fastest of the decoders measured here
// (BenchmarkRead): one pass, no map, the members it does not name skipped.

// flags are go-sdk's decoding flags.
const flags = json.DontMatchCaseInsensitiveStructFields

// Message is what a path that skips go-sdk reads of a JSON-RPC message:
// its members, each by its exact name, the values it carries kept as
// their JSON text.
type Message struct {
	JSONRPC string             `json:"jsonrpc"`
	ID      stdjson.RawMessage `json:"id"`
	// Method is the method of a request or notification; HasMethod says
	// whether the message had one (a member "method" that is not null),
	// which a response has not.
	Method    string             `json:"-"`
	HasMethod bool               `json:"-"`
	RawMethod stdjson.RawMessage `json:"method"`
	Params    stdjson.RawMessage `json:"params"`
	Result    stdjson.RawMessage `json:"result"`
	Error     stdjson.RawMessage `json:"error"`
}

// Read reads data, one JSON value with nothing but white space around
// it, as a JSON-RPC message. It fails on text that is not JSON, on a
// message that is not an object, and on a member of the wrong type
// (jsonrpc or method not a string); it checks nothing JSON-RPC asks
// beyond that (the version, an id's type), which its callers decide.
// Its members do not share data's memory (a caller may reuse data).
func Read(data []byte) (Message, error) {
	// The plain shape in one pass, over a copy of its own (the members
	// are slices of it); anything else through the decoder.
	if m, ok := Scan(bytes.Clone(data)); ok {
		return m, nil
	}
	return readDecoded(data)
}

// readDecoded is Read through go-sdk's decoder, for any text.
func readDecoded(data []byte) (Message, error) {
	var m Message
	if err := parse(data, &m); err != nil {
		return m, err
	}
	if len(m.RawMethod) > 0 && string(m.RawMethod) != "null" {
		s, err := str(m.RawMethod)
		if err != nil {
			return m, fmt.Errorf("method: %w", err)
		}
		m.Method, m.HasMethod = s, true
	}
	return m, nil
}

// Is reports whether m is a request or notification of method.
func (m *Message) Is(method string) bool { return m.HasMethod && m.Method == method }

// HasID reports whether m carries an id (a request or a response; a
// notification has none).
func (m *Message) HasID() bool { return len(m.ID) > 0 && string(m.ID) != "null" }

// WireID is m's id as go-sdk writes it back in its answer (its
// jsonrpc.MakeID, then its encoding): a number as an integer, a string
// as a JSON string, escaped as encoding/json escapes it without its
// HTML escapes. ok is false for
// an id the SDK refuses (an object, an array, a boolean) and for none.
func (m *Message) WireID() (id []byte, ok bool) { return WireID(m.ID) }

// WireID is raw, a request's id, as go-sdk writes it back (Message.WireID).
func WireID(raw []byte) ([]byte, bool) {
	if plainID(raw) {
		return raw, true
	}
	var v any
	if len(raw) == 0 || parse(raw, &v) != nil {
		return nil, false
	}
	switch v := v.(type) {
	case float64:
		return strconv.AppendInt(nil, int64(v), 10), true
	case string:
		var b bytes.Buffer
		enc := stdjson.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if enc.Encode(v) != nil {
			return nil, false
		}
		return bytes.TrimSuffix(b.Bytes(), []byte("\n")), true
	}
	return nil, false
}

// plainID reports whether raw is an id the SDK writes back as it came: a
// positive integer of at most 15 digits (a float64 holds it exactly), or
// a string of printable ASCII without escapes, written as it is.
func plainID(raw []byte) bool {
	if len(raw) < 2 {
		return len(raw) == 1 && raw[0] >= '0' && raw[0] <= '9'
	}
	switch raw[0] {
	case '"':
		if raw[len(raw)-1] != '"' {
			return false
		}
		for _, c := range raw[1 : len(raw)-1] {
			if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
				return false
			}
		}
		return true
	case '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if len(raw) > 15 {
			return false
		}
		for _, c := range raw[1:] {
			if c < '0' || c > '9' {
				return false
			}
		}
		return true
	}
	return false
}

// Params are the members of a request's params the fast paths read, by
// their exact names.
type Params struct {
	// Name is the tool of a tools/call.
	Name string `json:"name"`
	// Arguments are a tools/call's arguments, as they came.
	Arguments stdjson.RawMessage `json:"arguments"`
	// Meta is the request's _meta, as it came.
	Meta stdjson.RawMessage `json:"_meta"`
	// Cursor is a list request's cursor; nil when none came.
	Cursor *string `json:"cursor"`
	// InputResponses and RequestState continue a multi-round-trip
	// request (from Stateless on).
	InputResponses stdjson.RawMessage `json:"inputResponses"`
	RequestState   stdjson.RawMessage `json:"requestState"`
	// RequestID is the id of the request a notifications/cancelled ends.
	RequestID stdjson.RawMessage `json:"requestId"`
	// ProtocolVersion is the revision an initialize asks for.
	ProtocolVersion string `json:"protocolVersion"`
}

// ReadParams reads raw, a message's params, which must be a JSON object;
// none (raw empty) reads as no members.
func ReadParams(raw []byte) (Params, error) {
	var p Params
	if len(raw) == 0 {
		return p, nil
	}
	if p, ok := ScanParams(bytes.Clone(raw)); ok {
		return p, nil
	}
	return readParamsDecoded(raw)
}

// readParamsDecoded is ReadParams through go-sdk's decoder, for any
// text.
func readParamsDecoded(raw []byte) (Params, error) {
	var p Params
	if len(raw) == 0 {
		return p, nil
	}
	if b := bytes.TrimLeft(raw, " \t\r\n"); len(b) == 0 || b[0] != '{' {
		return p, errors.New("params: not a JSON object")
	}
	err := parse(raw, &p)
	return p, err
}

// Plain reports whether p carries nothing of the revisions from
// Stateless on: no member of MCP's own in its _meta (where such a
// request names its revision and client), and no round of a
// multi-round-trip request. Only a plain request may skip go-sdk.
func (p *Params) Plain() bool {
	return len(p.InputResponses) == 0 && len(p.RequestState) == 0 &&
		!bytes.Contains(p.Meta, []byte(`"io.modelcontextprotocol/`))
}

// ProgressToken is the progressToken of p's _meta: nil when there is
// none; an error when the _meta is not an object.
func (p *Params) ProgressToken() (any, error) {
	if tok, ok := ScanProgressToken(p.Meta); ok {
		return tok, nil
	}
	var meta struct {
		ProgressToken any `json:"progressToken"`
	}
	err := parse(p.Meta, &meta)
	return meta.ProgressToken, err
}

// Decode reads data into v as Read reads a message: members by their
// exact names, as go-sdk reads them. It is for the few other shapes a
// path that skips the SDK reads (an error object, an initialize's
// params).
func Decode(data []byte, v any) error { return parse(data, v) }

// parse decodes data, one JSON value, into v with go-sdk's flags. A
// failure is worded by encoding/json, whose words jsonrpc.Problem turns
// into a person's ("name must be a string, got number"); the decoder's
// own show the rest of the text instead of its kind.
func parse(data []byte, v any) error {
	rest, err := json.Parse(data, v, flags)
	if err == nil && len(rest) == 0 {
		return nil
	}
	if serr := stdjson.Unmarshal(data, v); serr != nil {
		return serr
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("invalid character %q after the JSON value", rest[0])
}

// str is the JSON string raw, read without the decoder when it holds no
// escape.
func str(raw []byte) (string, error) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' &&
		bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	err := parse(raw, &s)
	return s, err
}
