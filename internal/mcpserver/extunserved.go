package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemkit/gemkit/internal/extmcp"
)

// A client calls a tool by the name it listed, and may call one that is
// not served now: a tool of an extension's server whose consent went
// stale after an edit, whose start was refused, whose pinned package no
// longer matches, or that the person switched off, listed before that
// (or told by the model's memory of an earlier session); or a tool the
// server gained since gemkit mcp last listed it, whose first listing
// came from the kept catalog (extmcp's kept.go). The SDK would answer
// both with a bare -32602 "unknown tool". Here the name is mapped back
// to the extension whose servers may serve it
// (disclosure.Set.MayNameServerTool, the inverse of the namer's prefix):
// a server of it that runs or is being listed is waited for, its fresh
// list served, and the call goes on when the tool is in it; a server of
// it that is not served answers with a tool error saying why and the
// fix, in the words its placeholder tool (unavailableTool), list,
// describe and doctor use (extmcp.NotServed, Unpinned, the start's
// refusal). A name of no extension's servers, or of a server that runs
// and lists no such tool, is left to the SDK's "unknown tool".

// serving reports whether a tool of name is served now.
func (s *Server) serving(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.tools[name]
	return ok
}

// notServed is a server of an extension that gemkit mcp does not serve
// now, with why and the fix.
type notServed struct {
	ext, server, why string
	failed           bool // it could not start or list; else it is left out (skipped)
}

// unservedCall answers the call of name, which no served tool has:
// nil when the call is to go on to the SDK (the tool is served now, or
// the name is no extension server's), else a tool error saying why the
// server that may serve it is not served, and the fix.
func (s *Server) unservedCall(ctx context.Context, name string) *mcp.CallToolResult {
	set := s.set.Load()
	s.mu.Lock()
	var keys []string
	for _, sp := range s.ext.specs {
		if set.MayNameServerTool(name, sp.Extension) {
			keys = append(keys, sp.Key())
		}
	}
	skipped := s.skippedFor(name)
	s.mu.Unlock()
	if len(keys) == 0 && len(skipped) == 0 {
		return nil
	}
	// The servers that run, or are being started or listed, are waited
	// for: their fresh lists may hold the tool.
	relist := false
	for _, k := range keys {
		tools, ok, err := s.cfg.Servers.Fresh(ctx, k)
		relist = relist || err != nil || ok && s.newTools(k, tools)
	}
	if relist {
		s.ext.listed.Store(false)
		s.listServers(ctx, true)
		if s.serving(name) {
			return nil
		}
	}
	s.mu.Lock()
	out := skipped
	for _, f := range s.ext.failures {
		if set.MayNameServerTool(name, f.Spec.Extension) {
			out = append(out, notServed{ext: f.Spec.Extension, server: serverWords(f.Spec), why: f.Err.Error(), failed: true})
		}
	}
	s.mu.Unlock()
	if len(out) == 0 {
		return nil
	}
	return textResult(unservedWords(name, out), true)
}

// newTools reports whether tools, the server key's fresh list, has a
// tool that is not served.
func (s *Server) newTools(key string, tools []extmcp.Tool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	had := map[string]bool{}
	for _, t := range s.ext.tools {
		if t.Spec.Key() == key {
			had[t.Name] = true
		}
	}
	for _, t := range tools {
		if !had[t.Name] {
			return true
		}
	}
	return false
}

// skippedFor are the servers left out of the set's extensions whose
// names name may be a tool of. The caller holds s.mu.
func (s *Server) skippedFor(name string) []notServed {
	set := s.set.Load()
	var out []notServed
	told := map[string]bool{}
	for _, k := range append(s.ext.unserved[:len(s.ext.unserved):len(s.ext.unserved)], s.ext.skipped...) {
		if key := extmcp.KeyOf(k.Extension, k.Server); set.MayNameServerTool(name, k.Extension) && !told[key] {
			told[key] = true
			out = append(out, notServed{ext: k.Extension, server: "MCP server " + k.Server, why: k.Reason})
		}
	}
	return out
}

// unservedWords say that no tool name is served, and, for each server
// of the extension it names that is not served, why and the fix.
func unservedWords(name string, servers []notServed) string {
	var b strings.Builder
	fmt.Fprintf(&b, "gemkit serves no tool %s now.", extmcp.Printable(name))
	for _, n := range servers {
		if n.failed {
			fmt.Fprintf(&b, " If it is a tool of the %s of the extension %s: that server, which gemkit serves in its sandbox, is not running, so its tools are not offered. Why, and what to do: %s",
				extmcp.Printable(n.server), extmcp.Printable(n.ext), extmcp.Printable(strings.TrimSuffix(n.why, ".")))
		} else {
			fmt.Fprintf(&b, " If it is a tool of the %s of the extension %s: gemkit does not serve that server: %s",
				extmcp.Printable(n.server), extmcp.Printable(n.ext), extmcp.Printable(strings.TrimSuffix(n.why, ".")))
		}
		b.WriteString(".")
	}
	b.WriteString(forThePerson)
	return b.String()
}

// forThePerson ends what a model is told of a server gemkit does not
// run: the fix is the person's (consent, a widening), as the sandbox's
// refusals and a tool's consent say to the model, never a command for
// the model to run in their place.
const forThePerson = " What to do is for the person, not the model: tell them, and do not run that gemkit command yourself."
