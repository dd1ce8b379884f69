// Package lspbroker shares one workspace's language servers between every
// agent working in it. The first gemkit process that asks a code question
// in a workspace starts a broker (`gemkit codeintel broker`, detached),
// which runs the servers (internal/langserver's Pool) and listens on a
// Unix socket named for the workspace; every gemkit process there (each
// agent's `gemkit mcp`, `gemkit run`, the Gemini CLI hook) asks it through
// that socket, so two agents start one gopls. The broker ends, and its
// servers with it, when its last client goes.
//
// The client is a codeintel.Source: its questions and the broker's
// answers are JSON-RPC over internal/jsonrpc's line framing, one method
// per Source method, with codeintel's types as the parameters and
// results.
package lspbroker

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/jsonrpc"
)

// The methods, one per codeintel.Source method, and the broker's own.
const (
	mStatus           = "status"
	mDefinition       = "definition"
	mImplementations  = "implementations"
	mReferences       = "references"
	mHover            = "hover"
	mDocumentSymbols  = "documentSymbols"
	mWorkspaceSymbols = "workspaceSymbols"
	mIncomingCalls    = "incomingCalls"
	mOutgoingCalls    = "outgoingCalls"
	mDiagnostics      = "diagnostics"
	mChanged          = "changed"
	// mServers describes the running servers (gemkit codeintel status).
	mServers = "servers"
	// mHello is a client's first request: the broker answers with its
	// workspace and pid.
	mHello = "hello"
)

type pathParams struct {
	Path string `json:"path"`
}

type queryParams struct {
	Query string `json:"query"`
}

type pathsParams struct {
	Paths []string `json:"paths"`
}

type changesParams struct {
	Changes []codeintel.Change `json:"changes"`
}

// helloParams is a client's hello.
type helloParams struct {
	// HoldFor, when not 0, is a process the broker counts as a client of
	// its own until it ends: the agent a short-lived client (the Gemini
	// CLI hook) works for, so that the servers stay warm between its
	// calls and go with the agent.
	HoldFor int `json:"holdFor,omitempty"`
}

// Hello is the broker's answer to a client's hello.
type Hello struct {
	Workspace string `json:"workspace"`
	Pid       int    `json:"pid"`
	Version   string `json:"version"`
}

// Error codes of the errors codeintel.Source methods return, carried in
// the error's data so the client returns the same error.
const (
	codeNoServer    = -32050
	codeServerError = -32051
	codeUnsupported = -32052
)

// wireError turns a Source's error into a JSON-RPC error.
func wireError(err error) error {
	var ns *codeintel.NoServerError
	var se *codeintel.ServerError
	switch {
	case errors.As(err, &ns):
		data, _ := json.Marshal(ns)
		return &jsonrpc.Error{Code: codeNoServer, Message: ns.Error(), Data: data}
	case errors.As(err, &se):
		data, _ := json.Marshal(se)
		return &jsonrpc.Error{Code: codeServerError, Message: se.Error(), Data: data}
	case errors.Is(err, codeintel.ErrUnsupported):
		return &jsonrpc.Error{Code: codeUnsupported, Message: err.Error()}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeRequestFailed, Message: err.Error()}
}

// sourceError turns the broker's JSON-RPC error back into the Source's.
func sourceError(err error) error {
	var je *jsonrpc.Error
	if !errors.As(err, &je) {
		return err
	}
	switch je.Code {
	case codeNoServer:
		var ns codeintel.NoServerError
		if json.Unmarshal(je.Data, &ns) == nil {
			return &ns
		}
	case codeServerError:
		var se codeintel.ServerError
		if json.Unmarshal(je.Data, &se) == nil {
			return &se
		}
	case codeUnsupported:
		return codeintel.ErrUnsupported
	}
	return errors.New(je.Message)
}

// locList is a list of locations on the wire, compact: each file named
// once, each location five integers in one string. A thousand
// references are some 15 KB this way, not the 200 KB of gopls's
// objects, each repeating its path; and a string is one token to
// encoding/json, which reads and checks numbers in arrays (the form
// before this one) several times slower, and checks the answer several
// times on its way (the broker's encoder, then the client's check,
// message and result).
type locList struct {
	// Files are "p:" and an absolute path, or "u:" and a URI.
	Files []string `json:"f"`
	// Locs are five integers a location, each followed by a space: the
	// index of its file in Files, the start's line and character, and
	// the end's line and character less the start's.
	Locs string `json:"l"`
}

// encodeLocs is locs in the wire's form.
func encodeLocs(locs []codeintel.Location) locList {
	w := locList{Files: []string{}}
	index := map[string]int{}
	b := make([]byte, 0, 16*len(locs))
	lastKey, last := "", -1
	for _, loc := range locs {
		key := "p:" + loc.Path
		if loc.Path == "" {
			key = "u:" + loc.URI
		}
		i := last
		if key != lastKey {
			var ok bool
			if i, ok = index[key]; !ok {
				i = len(w.Files)
				index[key] = i
				w.Files = append(w.Files, key)
			}
			lastKey, last = key, i
		}
		r := loc.Range
		for _, n := range [5]int{i, r.Start.Line, r.Start.Character, r.End.Line - r.Start.Line, r.End.Character - r.Start.Character} {
			b = strconv.AppendInt(b, int64(n), 10)
			b = append(b, ' ')
		}
	}
	w.Locs = string(b)
	return w
}

// errLocList is the error of a list the broker could not have sent.
var errLocList = errors.New("the broker's list of locations is malformed")

// decode is the list's locations.
func (w locList) decode() ([]codeintel.Location, error) {
	type file struct{ path, uri string }
	files := make([]file, len(w.Files))
	for i, f := range w.Files {
		if p, ok := strings.CutPrefix(f, "p:"); ok {
			files[i].path = p
		} else if u, ok := strings.CutPrefix(f, "u:"); ok {
			files[i].uri = u
		} else {
			return nil, errLocList
		}
	}
	s := w.Locs
	out := make([]codeintel.Location, 0, strings.Count(s, " ")/5)
	var n [5]int
	for s != "" {
		for j := range n {
			sp := strings.IndexByte(s, ' ')
			if sp < 0 {
				return nil, errLocList
			}
			v, ok := atoi(s[:sp])
			if !ok {
				return nil, errLocList
			}
			n[j], s = v, s[sp+1:]
		}
		if n[0] < 0 || n[0] >= len(files) {
			return nil, errLocList
		}
		f := files[n[0]]
		out = append(out, codeintel.Location{Path: f.path, URI: f.uri, Range: codeintel.Range{
			Start: codeintel.Position{Line: n[1], Character: n[2]},
			End:   codeintel.Position{Line: n[1] + n[3], Character: n[2] + n[4]},
		}})
	}
	return out, nil
}

// atoi reads an integer as strconv.AppendInt writes it, and only so: no
// sign but a minus, no leading zero, no "-0".
func atoi(s string) (int, bool) {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || (digits[0] == '0' && len(s) > 1) {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.Atoi(s)
	return v, err == nil
}
