package model

import (
	"crypto/x509"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
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
	// KindIncomplete is a reply whose stream ended without finishing: no
	// finish reason, a finish reason saying the call could not be made
	// (MALFORMED_FUNCTION_CALL, OpenRouter's "error"), an empty reply, or
	// a body that was not a stream at all.
	KindIncomplete Kind = "incomplete"
)

// maxMsg bounds the API's message kept in an error: whole sentences such
// as "Please retry in 38s" and the quota's name come after the first
// line, so the message is kept whole up to this size.
const maxMsg = 2000

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
	// RetryDelay is how long the server asked to wait before trying again
	// (Gemini's RetryInfo, "Please retry in Ns", Retry-After); 0 when it
	// did not say.
	RetryDelay time.Duration
	// Final marks a quota that waiting a few minutes will not restore (a
	// daily quota, "limit: 0", a wait over five minutes): not retried.
	Final bool
	// noQuota marks a quota of zero ("limit: 0"): Final whatever wait
	// the answer names, and its hint says so.
	noQuota bool
	// Midstream marks a failure after the server began its answer (a
	// broken stream, an error event, a reply that did not finish).
	Midstream bool
	// Attempts is how many times the request was sent, when more than
	// once.
	Attempts int
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
		if e.Midstream {
			b.WriteString("the model's server failed while answering")
		} else {
			b.WriteString("the model's server failed")
		}
	case KindIncomplete:
		b.WriteString("the model's reply did not finish")
	case KindNoTools:
		b.WriteString("the model cannot call functions")
	default:
		if e.Midstream {
			b.WriteString("the model's stream broke off")
		} else {
			b.WriteString("the model could not be reached")
		}
	}
	if e.Endpoint != "" {
		fmt.Fprintf(&b, " (%s", e.Endpoint)
		if e.Status != 0 {
			fmt.Fprintf(&b, ", HTTP %d", e.Status)
		}
		b.WriteString(")")
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " after %d attempts", e.Attempts)
	}
	if msg := clip(e.Msg, maxMsg); msg != "" {
		b.WriteString(": ")
		b.WriteString(msg)
	}
	if e.Hint != "" {
		s := strings.TrimRight(b.String(), ". ")
		b.Reset()
		b.WriteString(s)
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
	if noQuota(status, msg) {
		// Waiting gives back nothing: there is no quota to wait for.
		e.Final, e.noQuota = true, true
		e.Hint = "The project or key has no quota at all for this model (limit: 0), so waiting will not help: use another model (--model), or a key of a project that has quota for this one (billing enabled, or the model offered on its tier)"
		return e
	}
	e.RetryDelay, e.Final = quotaInMessage(status, msg)
	return e
}

// brokenStream is the error for a stream that failed after the server
// answered: its words must not send the person to check that the server
// runs, since it just did.
func brokenStream(endpoint string, status int, err error) *Error {
	msg := err.Error()
	if errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "the connection closed in the middle of the stream"
	}
	return &Error{Kind: KindNetwork, Status: status, Endpoint: endpoint, Midstream: true, Err: err,
		Msg: msg, Hint: "The server answered, then its stream failed; this is usually a passing fault of the server or the network"}
}

// incomplete is the error for a reply that ended without finishing.
func incomplete(endpoint string, status int, msg string) *Error {
	return &Error{Kind: KindIncomplete, Status: status, Endpoint: endpoint, Midstream: true, Msg: msg,
		Hint: "Nothing of this reply was used; try again, or another model (--model)"}
}

// notAStream is the error for a 200 whose body is no stream of the API's
// events (a web page, a JSON body): what answered at the base URL is not
// the API, so the fix is the URL, not another try or another model.
func notAStream(endpoint string, status int, contentType, what string) *Error {
	e := incomplete(endpoint, status, fmt.Sprintf("the server answered %q, not a stream of %s", contentType, what))
	e.Hint = "Check the base URL: what answers there is not the model's API"
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

// maxRetryableDelay is the longest wait a server may ask for and still
// be waited for: Gemini CLI's MAX_RETRYABLE_DELAY_SECONDS (300, in
// packages/core/src/utils/googleQuotaErrors.ts), past which "the user is
// effectively locked out".
const maxRetryableDelay = 300 * time.Second

// retryInRE is the wait Gemini's quota messages name ("Please retry in
// 38.5s."), read as googleQuotaErrors.ts's fallback reads it.
var retryInRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`Please retry in ([0-9.]+(?:ms|s))`) })

// limitZeroRE is googleQuotaErrors.ts's "limit: 0" check (a quota the
// project does not have at all), without its lookahead: the character
// after the 0 is checked by hand.
var limitZeroRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`limit:\s*0`) })

// noQuota reports a quota message that says the project has no quota
// at all ("limit: 0" on a 429/499/503), as Gemini CLI's
// classifyGoogleError reads it: final, whatever wait it also names.
func noQuota(status int, msg string) bool {
	if status != 429 && status != 499 && status != 503 {
		return false
	}
	low := strings.ToLower(msg)
	for _, loc := range limitZeroRE().FindAllStringIndex(low, -1) {
		rest := low[loc[1]:]
		if rest == "" || !(rest[0] >= '0' && rest[0] <= '9' || len(rest) > 1 && rest[0] == '.' && rest[1] >= '0' && rest[1] <= '9') {
			return true
		}
	}
	return false
}

// quotaInMessage reads what a quota message says of waiting: the delay
// of "Please retry in Ns", and whether the quota is final (a delay over
// five minutes), as Gemini CLI's classifyGoogleError does.
func quotaInMessage(status int, msg string) (time.Duration, bool) {
	if m := retryInRE().FindStringSubmatch(msg); m != nil {
		if d, ok := parseGoogleDuration(m[1]); ok {
			return d, d > maxRetryableDelay
		}
	}
	return 0, false
}

// parseGoogleDuration reads "34.074824224s", "60s" or "900ms".
func parseGoogleDuration(s string) (time.Duration, bool) {
	unit := time.Second
	num, ok := strings.CutSuffix(s, "ms")
	if ok {
		unit = time.Millisecond
	} else if num, ok = strings.CutSuffix(s, "s"); !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return 0, false
	}
	return time.Duration(f * float64(unit)), true
}

// retryAfter reads the Retry-After wait an OpenAI-style server sends:
// retry-after-ms, else retry-after in seconds or as an HTTP date (the
// headers OpenAI's own Node SDK honours, in src/client.ts).
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 {
			return time.Duration(f * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 {
		return time.Duration(f * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

var titleRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`) })

// bodyWords is what an error body that is not the API's JSON says: an
// HTML page (a proxy's, a load balancer's) by its title, other text as
// it is, nothing by the status line.
func bodyWords(status string, contentType string, body []byte) string {
	s := strings.TrimSpace(string(body))
	isHTML := strings.Contains(strings.ToLower(contentType), "html") || strings.HasPrefix(strings.ToLower(s), "<!doctype html") || strings.HasPrefix(strings.ToLower(s), "<html")
	if isHTML {
		title := ""
		if m := titleRE().FindStringSubmatch(s); m != nil {
			title = strings.Join(strings.Fields(html.UnescapeString(m[1])), " ")
		}
		switch {
		case title == "":
			title = status
		case !strings.HasPrefix(title, strings.SplitN(status, " ", 2)[0]):
			title = status + ": " + title
		}
		return title + " (an HTML page, not the API's answer)"
	}
	if s == "" {
		return status
	}
	return s
}

// isCertError reports a TLS certificate failure: a setup problem, not a
// passing one, so it is not retried.
func isCertError(err error) bool {
	var u x509.UnknownAuthorityError
	var h x509.HostnameError
	var c x509.CertificateInvalidError
	return errors.As(err, &u) || errors.As(err, &h) || errors.As(err, &c)
}

// clip trims s and cuts it at n bytes (on a rune boundary).
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
