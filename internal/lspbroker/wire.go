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
// once, each location five numbers (the file's index, then the range).
// A thousand references are some 25 KB this way, not 150 KB of objects
// repeating their path, and decode several times faster.
type locList []codeintel.Location

type wireLocList struct {
	// Files are "p:" and an absolute path, or "u:" and a URI.
	Files []string `json:"f"`
	Locs  [][5]int `json:"l"`
}

func (l locList) MarshalJSON() ([]byte, error) {
	w := wireLocList{Files: []string{}, Locs: make([][5]int, 0, len(l))}
	index := map[string]int{}
	for _, loc := range l {
		key := "p:" + loc.Path
		if loc.Path == "" {
			key = "u:" + loc.URI
		}
		i, ok := index[key]
		if !ok {
			i = len(w.Files)
			index[key] = i
			w.Files = append(w.Files, key)
		}
		r := loc.Range
		w.Locs = append(w.Locs, [5]int{i, r.Start.Line, r.Start.Character, r.End.Line, r.End.Character})
	}
	return json.Marshal(w)
}

func (l *locList) UnmarshalJSON(b []byte) error {
	var w wireLocList
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	out := make(locList, 0, len(w.Locs))
	for _, x := range w.Locs {
		if x[0] < 0 || x[0] >= len(w.Files) {
			return errors.New("a location names no file of the list")
		}
		loc := codeintel.Location{Range: codeintel.Range{
			Start: codeintel.Position{Line: x[1], Character: x[2]},
			End:   codeintel.Position{Line: x[3], Character: x[4]},
		}}
		f := w.Files[x[0]]
		if p, ok := strings.CutPrefix(f, "p:"); ok {
			loc.Path = p
		} else {
			loc.URI = strings.TrimPrefix(f, "u:")
		}
		out = append(out, loc)
	}
	*l = out
	return nil
}
