package mcpclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// forwardMethod is the method Forward calls.
const forwardMethod = "tools/call"

// ErrNoForward is Forward's answer on a session whose tool calls go
// through the SDK (Streamable HTTP, a stdout gemkit cannot close, a
// revision from 2026-07-28 on): CallToolRaw calls there.
var ErrNoForward = errors.New("mcpclient: this session's tool calls go through the SDK")

// CanForward reports whether Forward calls on this session.
func (c *Client) CanForward() bool { return c.direct != nil }

// Forward sends a tools/call of the tool name with args (the text of a
// JSON object, which goes on as it is) and, when token is not "", that
// progress token, as CallToolRaw's direct calls go, and returns at once:
// done receives the answer, in the goroutine that reads the server's
// stdout, without a goroutine of its own between the two. It is for a
// proxy that passes the answer on itself: the result comes as the server
// wrote it (a JSON object, not compacted), or the error CallToolRaw would
// have returned. done must not block. The request is written without
// blocking the caller: when the server's stdin is full, a goroutine of
// its own writes it.
//
// cancel gives the call up (the server is sent notifications/cancelled
// with reason) and reports whether it was still waiting for its answer;
// once it has returned true, done is not called.
func (c *Client) Forward(name string, args json.RawMessage, token string, done func(result json.RawMessage, err error)) (cancel func(reason string) bool, err error) {
	if c.direct == nil {
		return nil, ErrNoForward
	}
	return c.direct.forward(name, args, token, done)
}

func (c *stdioConn) forward(name string, args json.RawMessage, token string, done func(json.RawMessage, error)) (func(string) bool, error) {
	const method = forwardMethod
	key, err := c.register(method, func(result json.RawMessage, err error) {
		if err != nil {
			done(nil, fmt.Errorf("calling %q: %w", method, err))
			return
		}
		if !isObject(result) {
			// The words of CallToolRaw's check.
			_, err = directResult(result)
			if err == nil {
				err = errors.New("unmarshaling result: not a JSON object")
			}
			done(nil, err)
			return
		}
		done(result, nil)
	})
	if err != nil {
		return nil, err
	}
	msg := appendCall(make([]byte, 0, 128+len(name)+len(args)), key, name, args, token)
	c.send(key, msg, done)
	return func(reason string) bool {
		if !c.forget(key) {
			return false
		}
		go c.cancelled(key, reason)
		return true
	}, nil
}

// send writes msg, the request of the forwarded call key, to the
// server's stdin, after what was written before it and without blocking
// the caller: at once when the pipe takes it whole, else in a goroutine
// that holds the writing lock until it is written; a call given up
// before its turn came is not written. A write's error is the call's
// answer (done). Nothing is made on the heap for the first way, which
// is the way of nearly every call.
func (c *stdioConn) send(key string, msg []byte, done func(json.RawMessage, error)) {
	if c.raw != nil && c.wmu.TryLock() {
		n, err, again := c.raw.TryWrite(msg)
		if !again {
			c.wmu.Unlock()
			if err != nil {
				c.sendFailed(key, done, err)
			}
			return
		}
		go func() {
			defer c.wmu.Unlock()
			if _, err := c.t.in.Write(msg[n:]); err != nil {
				c.sendFailed(key, done, err)
			}
		}()
		return
	}
	go func() {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		if !c.waiting(key) {
			return
		}
		if _, err := c.t.in.Write(msg); err != nil {
			c.sendFailed(key, done, err)
		}
	}()
}

// sendFailed answers the forwarded call key, whose request could not be
// written, with err, unless it was given up.
func (c *stdioConn) sendFailed(key string, done func(json.RawMessage, error), err error) {
	if c.forget(key) {
		done(nil, fmt.Errorf("%w: calling %q: %v", mcp.ErrConnectionClosed, forwardMethod, err))
	}
}

// waiting reports whether the direct call key still waits for its answer.
func (c *stdioConn) waiting(key string) bool {
	c.cmu.Lock()
	defer c.cmu.Unlock()
	_, ok := c.calls[key]
	return ok
}

// appendCall appends the line of a tools/call under the id key: the
// same JSON value the SDK's encoding of the same call makes (CallToolRaw).
func appendCall(b []byte, key, name string, args json.RawMessage, token string) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = appendString(b, key)
	b = append(b, `,"method":"tools/call","params":{`...)
	if token != "" {
		b = append(b, `"_meta":{"progressToken":`...)
		b = appendString(b, token)
		b = append(b, "},"...)
	}
	b = append(b, `"name":`...)
	b = appendString(b, name)
	if args = bytes.TrimSpace(args); len(args) > 0 {
		if bytes.IndexByte(args, '\n') >= 0 {
			// A line holds one message: a newline in JSON text is
			// white space, which compacting takes out.
			var c bytes.Buffer
			if json.Compact(&c, args) == nil {
				args = c.Bytes()
			}
		}
		b = append(b, `,"arguments":`...)
		b = append(b, args...)
	}
	return append(b, "}}\n"...)
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// isObject reports whether raw, one JSON value as the reader took it,
// is an object.
func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '{'
}
