package model

import (
	"errors"
	"fmt"
	"strings"
)

// Kind sorts API failures by what the person has to do about them.
type Kind string

const (
	KindQuota    Kind = "quota"
	KindAuth     Kind = "auth"
	KindNotFound Kind = "model_not_found"
	KindSafety   Kind = "safety"
	KindBadReq   Kind = "bad_request"
	KindServer   Kind = "server"
	KindNetwork  Kind = "network"
)

// Error is a model API failure in words, with what to do about it.
type Error struct {
	Kind Kind
	// Status is the HTTP status, 0 when there was no answer.
	Status int
	// Msg is what the API said.
	Msg string
	// Hint is what to do.
	Hint string
	// Endpoint names the model and endpoint.
	Endpoint string
	Err      error
}

func (e *Error) Error() string {
	var b strings.Builder
	switch e.Kind {
	case KindQuota:
		b.WriteString("the model's quota or rate limit is exhausted")
	case KindAuth:
		b.WriteString("the API key was refused")
	case KindNotFound:
		b.WriteString("the model was not found")
	case KindSafety:
		b.WriteString("the model's safety filter blocked the reply")
	case KindBadReq:
		b.WriteString("the API refused the request")
	case KindServer:
		b.WriteString("the model's server failed")
	default:
		b.WriteString("the model could not be reached")
	}
	if e.Endpoint != "" {
		fmt.Fprintf(&b, " (%s", e.Endpoint)
		if e.Status != 0 {
			fmt.Fprintf(&b, ", HTTP %d", e.Status)
		}
		b.WriteString(")")
	}
	if e.Msg != "" {
		b.WriteString(": ")
		b.WriteString(firstLine(e.Msg, 300))
	}
	if e.Hint != "" {
		b.WriteString(". ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// classify turns an HTTP status and message into an *Error with a hint.
func classify(status int, msg, endpoint string, err error, keyVars string) *Error {
	e := &Error{Status: status, Msg: msg, Endpoint: endpoint, Err: err}
	low := strings.ToLower(msg)
	switch {
	case status == 429 || strings.Contains(low, "resource_exhausted") || strings.Contains(low, "quota"):
		e.Kind = KindQuota
		e.Hint = "Wait and try again, use another model (--model), or raise the quota in your account"
	case status == 401 || status == 403 || strings.Contains(low, "api key not valid") || strings.Contains(low, "permission_denied"):
		e.Kind = KindAuth
		e.Hint = "Check the key in " + keyVars + " (it must belong to a project with the API enabled)"
	case status == 404:
		e.Kind = KindNotFound
		e.Hint = "Check the name given with --model or in the config file; the endpoint lists the models it serves"
	case status >= 400 && status < 500:
		e.Kind = KindBadReq
		e.Hint = "This is likely a model or endpoint that does not support what gemkit asked for; try --tool-protocol text or another model"
	case status >= 500:
		e.Kind = KindServer
		e.Hint = "Try again later"
	default:
		e.Kind = KindNetwork
		e.Hint = "Check the base URL and that the server is running"
	}
	return e
}

// SafetyError is the error for a reply the API blocked.
func SafetyError(endpoint, reason string) *Error {
	return &Error{Kind: KindSafety, Msg: reason, Endpoint: endpoint,
		Hint: "Rephrase the request; the blocked reply was not used"}
}

// IsKind reports whether err is an *Error of kind k.
func IsKind(err error, k Kind) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == k
}

func firstLine(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
