package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// ACP v1 has session/delete (schema/v1/schema.json of
// @agentclientprotocol/sdk 2.4.0: DeleteSessionRequest,
// SessionCapabilities.delete), which coder/acp-go-sdk v0.13.0 predates:
// it answers the method "Method not found" and has no field to declare
// it. It does hand any method whose name starts with "_" (an extension
// method) to the agent, and gemkit's wire sees every message it writes.
// So the client's session/delete reaches the SDK renamed deleteMethod
// (inbound), and the initialize answer gets sessionCapabilities.delete
// on its way out (wire.Write).

// maxRenamed bounds the line inbound reads whole to rename: a
// session/delete request is a few hundred bytes. Longer lines pass
// through as they came.
const maxRenamed = 64 << 10

// inbound is the client's end of the connection as the SDK reads it:
// every line as it came, but a session/delete request renamed.
type inbound struct {
	r *bufio.Reader
	// pending is what is read and not yet handed on; partial is set while
	// a line longer than maxRenamed passes through.
	pending []byte
	partial bool
	err     error
}

func newInbound(r io.Reader) *inbound { return &inbound{r: bufio.NewReaderSize(r, maxRenamed)} }

func (in *inbound) Read(p []byte) (int, error) {
	if len(in.pending) == 0 {
		if in.err != nil {
			return 0, in.err
		}
		chunk, err := in.r.ReadSlice('\n')
		full := errors.Is(err, bufio.ErrBufferFull)
		if !in.partial && !full && bytes.Contains(chunk, []byte(`"session/delete"`)) {
			chunk = renamed(chunk)
		}
		in.partial = full
		in.pending = chunk
		if err != nil && !full {
			in.err = err
		}
	}
	n := copy(p, in.pending)
	in.pending = in.pending[n:]
	return n, nil
}

// renamed is line with deleteMethod for its method when it is a
// session/delete request, else line as it is.
func renamed(line []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil {
		return line
	}
	var method string
	if json.Unmarshal(m["method"], &method) != nil || method != "session/delete" {
		return line
	}
	m["method"], _ = json.Marshal(deleteMethod)
	out, err := json.Marshal(m)
	if err != nil {
		return line
	}
	return append(out, '\n')
}

// withDelete is b, the answer to initialize, with
// result.agentCapabilities.sessionCapabilities.delete: {}; b as it is
// when it is anything else.
func withDelete(b []byte) []byte {
	var msg map[string]json.RawMessage
	if json.Unmarshal(b, &msg) != nil || msg["result"] == nil || msg["method"] != nil {
		return b
	}
	var result, caps, sess map[string]json.RawMessage
	if json.Unmarshal(msg["result"], &result) != nil || json.Unmarshal(result["agentCapabilities"], &caps) != nil || caps == nil {
		return b
	}
	if json.Unmarshal(caps["sessionCapabilities"], &sess) != nil || sess == nil {
		sess = map[string]json.RawMessage{}
	}
	sess["delete"] = json.RawMessage(`{}`)
	var err error
	if caps["sessionCapabilities"], err = json.Marshal(sess); err != nil {
		return b
	}
	if result["agentCapabilities"], err = json.Marshal(caps); err != nil {
		return b
	}
	if msg["result"], err = json.Marshal(result); err != nil {
		return b
	}
	out, err := json.Marshal(msg)
	if err != nil {
		return b
	}
	return append(out, '\n')
}
