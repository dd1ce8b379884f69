package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/gemkit/gemkit/internal/jsonrpc"
)

// screen answers, on w, each message of a stdio line that the SDK could
// not read (text that is not JSON, or JSON that is not a JSON-RPC 2.0
// message), with JSON-RPC's error for it, and returns what of the line
// the SDK can read, to go on to it: the line itself in the usual case.
// go-sdk v1.8.0 ends the whole session at the first message it cannot
// read (its ioConn.Read returns the decoding error), which would end
// every call under way for one bad line; JSON-RPC 2.0 answers that one
// message with an error and goes on. A batch (an array) stays the
// SDK's to read, as do the rest of an overlong line and a line with no
// message at all. bad reports each answered message's problem.
func screen(line []byte, w io.Writer, bad func(problem string)) []byte {
	text := bytes.TrimSpace(line)
	if len(text) == 0 || text[0] == '[' {
		return line
	}
	if _, err := sdkjsonrpc.DecodeMessage(text); err == nil {
		return line
	}
	// Several values on one line, or one the SDK refuses: value by value,
	// as the SDK's stream decoder would take them.
	var keep []byte
	dec := json.NewDecoder(bytes.NewReader(text))
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return keep
		}
		if err != nil {
			problem := "Parse error: each line gemkit mcp reads must be one JSON-RPC 2.0 message, and this one is not JSON (" + jsonrpc.Problem(err) + ")"
			answerError(w, nil, jsonrpc.CodeParseError, problem)
			bad(problem)
			return keep
		}
		if raw[0] == '[' {
			keep = append(append(keep, raw...), '\n')
			continue
		}
		if _, err := sdkjsonrpc.DecodeMessage(raw); err != nil {
			problem := "Invalid Request: not a JSON-RPC 2.0 message (" + jsonrpc.Problem(err) + `); a request is {"jsonrpc":"2.0","id":1,"method":"…","params":{…}}`
			answerError(w, messageID(raw), jsonrpc.CodeInvalidRequest, problem)
			bad(problem)
			continue
		}
		keep = append(append(keep, raw...), '\n')
	}
}

// messageID is the id of raw, a JSON value, when it is an object whose
// id is a string or a number, as JSON-RPC answers an invalid request
// under; else nil (null).
func messageID(raw json.RawMessage) []byte {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(raw, &m) != nil || len(m.ID) == 0 {
		return nil
	}
	switch c := m.ID[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return m.ID
	}
	return nil
}

// answerError writes JSON-RPC's error answer of code under id (null
// when nil).
func answerError(w io.Writer, id []byte, code int, message string) {
	msg, _ := json.Marshal(message)
	out := []byte(`{"jsonrpc":"2.0","id":`)
	if id == nil {
		out = append(out, "null"...)
	} else {
		out = append(out, id...)
	}
	out = append(out, `,"error":{"code":`...)
	out = strconv.AppendInt(out, int64(code), 10)
	out = append(out, `,"message":`...)
	out = append(out, msg...)
	_, _ = w.Write(append(out, "}}\n"...))
}
