package acp

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"

	sdk "github.com/coder/acp-go-sdk"
)

// wire is the client's end of the connection as gemkit writes to it. The
// SDK writes each message whole, with its newline, in one Write, under
// its own lock; wire sees every message on its way out and
//
//   - puts the method's name in the message of a "Method not found"
//     error, where clients show it (acpx and Zed print error.message,
//     never error.data), as the protocol's TypeScript library does
//     (RequestError.methodNotFound: the kind, then the method);
//   - adds sessionCapabilities.delete to the answer to initialize when
//     sessions are stored (see inbound);
//   - notes the permission requests sent and the $/cancel_request written
//     for them, so that a prompt that stops waiting for the person's
//     answer answers only once the client has been told
//     (cancelWritten).
type wire struct {
	w io.Writer
	// sessionDelete is set when session/delete is offered.
	sessionDelete bool

	mu sync.Mutex
	// asked is the id of the permission request sent for each tool call
	// of each session (its JSON text, as $/cancel_request carries it).
	asked map[askKey]string
	// cancelled holds the ids whose $/cancel_request is written; waits,
	// a channel closed when it is.
	cancelled map[string]bool
	waits     map[string]chan struct{}
}

// askKey names a permission request by what gemkit knows of it when it
// asks: a session's tool call has one request at a time.
type askKey struct {
	session  sdk.SessionId
	toolCall sdk.ToolCallId
}

func newWire(w io.Writer) *wire {
	return &wire{w: w, asked: map[askKey]string{}, cancelled: map[string]bool{}, waits: map[string]chan struct{}{}}
}

// outgoing is what wire reads of a message.
type outgoing struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		SessionID sdk.SessionId `json:"sessionId"`
		ToolCall  struct {
			ToolCallID sdk.ToolCallId `json:"toolCallId"`
		} `json:"toolCall"`
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Method string `json:"method"`
		} `json:"data"`
	} `json:"error"`
}

var (
	methodNotFound    = []byte(`"code":-32601`)
	requestPermission = []byte(`"method":"` + sdk.ClientMethodSessionRequestPermission + `"`)
	cancelRequest     = []byte(`"method":"$/cancel_request"`)
	agentCapabilities = []byte(`"agentCapabilities"`)
)

func (c *wire) Write(b []byte) (int, error) {
	n := len(b)
	if bytes.Contains(b, elicitationCreate) {
		b = c.scoped(b) // elicit.go
	}
	if c.sessionDelete && bytes.Contains(b, agentCapabilities) {
		return c.write(withDelete(b), n, "")
	}
	if !bytes.Contains(b, methodNotFound) && !bytes.Contains(b, requestPermission) && !bytes.Contains(b, cancelRequest) {
		return c.write(b, n, "")
	}
	var m outgoing
	if json.Unmarshal(b, &m) != nil {
		return c.write(b, n, "")
	}
	switch {
	case m.Error != nil && m.Error.Code == -32601 && m.Error.Message == "Method not found" && m.Error.Data.Method != "":
		b = namedMethod(b, m.Error.Data.Method)
	case m.Method == sdk.ClientMethodSessionRequestPermission && len(m.ID) > 0:
		c.mu.Lock()
		c.asked[askKey{m.Params.SessionID, m.Params.ToolCall.ToolCallID}] = string(m.ID)
		c.mu.Unlock()
	case m.Method == "$/cancel_request" && len(m.Params.RequestID) > 0:
		return c.write(b, n, string(m.Params.RequestID))
	}
	return c.write(b, n, "")
}

// write writes b, then notes that the $/cancel_request for the request
// id cancelled ("" for none) is written. It reports n, the length of
// what the SDK gave, however b was reworded.
func (c *wire) write(b []byte, n int, cancelled string) (int, error) {
	_, err := c.w.Write(b)
	if cancelled != "" {
		c.mu.Lock()
		c.cancelled[cancelled] = true
		if ch := c.waits[cancelled]; ch != nil {
			close(ch)
			delete(c.waits, cancelled)
		}
		c.mu.Unlock()
	}
	if err != nil {
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

// cancelWritten returns a channel closed once the $/cancel_request of the
// permission request sent for the session's tool call is written (at
// once when it was, or when no request was sent for it), and forgets the
// request.
func (c *wire) cancelWritten(session sdk.SessionId, toolCall sdk.ToolCallId) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := askKey{session, toolCall}
	id, ok := c.asked[k]
	delete(c.asked, k)
	ch := make(chan struct{})
	if !ok || c.cancelled[id] {
		delete(c.cancelled, id)
		close(ch)
		return ch
	}
	if prev := c.waits[id]; prev != nil {
		return prev
	}
	c.waits[id] = ch
	return ch
}

// forget drops what was noted of the permission request sent for the
// session's tool call, once it was answered.
func (c *wire) forget(session sdk.SessionId, toolCall sdk.ToolCallId) {
	c.mu.Lock()
	delete(c.asked, askKey{session, toolCall})
	c.mu.Unlock()
}
