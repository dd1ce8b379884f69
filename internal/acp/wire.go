package acp

import (
	"bytes"
	"encoding/json"
	"io"
)

// wire is the client's end of the connection as gemkit writes to it. The
// SDK writes each message whole, with its newline, in one Write, under
// its own lock; wire sees every message on its way out and puts the
// method's name in the message of a "Method not found" error, where
// clients show it (acpx and Zed print error.message, never error.data),
// as the protocol's TypeScript library does (RequestError.methodNotFound:
// the kind, then the method).
type wire struct {
	w io.Writer
}

func newWire(w io.Writer) *wire {
	return &wire{w: w}
}

// outgoing is what wire reads of a message.
type outgoing struct {
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Method string `json:"method"`
		} `json:"data"`
	} `json:"error"`
}

var methodNotFound = []byte(`"code":-32601`)

func (c *wire) Write(b []byte) (int, error) {
	n := len(b)
	if bytes.Contains(b, methodNotFound) {
		var m outgoing
		if json.Unmarshal(b, &m) == nil && m.Error != nil && m.Error.Code == -32601 && m.Error.Message == "Method not found" && m.Error.Data.Method != "" {
			b = namedMethod(b, m.Error.Data.Method)
		}
	}
	if _, err := c.w.Write(b); err != nil {
		return 0, err
	}
	return n, nil
}

// namedMethod is the error message b with "Method not found: METHOD" for
// its message, the rest as it was.
func namedMethod(b []byte, method string) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return b
	}
	var e map[string]json.RawMessage
	if json.Unmarshal(m["error"], &e) != nil {
		return b
	}
	msg, _ := json.Marshal("Method not found: " + method)
	e["message"] = msg
	var err error
	if m["error"], err = json.Marshal(e); err != nil {
		return b
	}
	out, err := json.Marshal(m)
	if err != nil {
		return b
	}
	return append(out, '\n')
}
