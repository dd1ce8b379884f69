package extmcp_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/mcpclient"
)

// everyCapability is what the fixture declares in the tests of the
// optional methods: every capability of MCP's beyond tools.
const everyCapability = `{"tools":{},"resources":{"subscribe":true},"prompts":{},"logging":{},"completions":{}}`

// optionalMethods are the methods of MCP a server may lack whatever it
// declares: gemkit serves it on initialize and tools/list alone.
var optionalMethods = []string{"resources/list", "resources/templates/list", "prompts/list", "resources/subscribe", "completion/complete", "logging/setLevel"}

// TestOptionalMethodLacking: a server that lacks an optional method of
// MCP, each in turn and each way a real one lacks it (it declares the
// capability and answers -32601 Method not found, as
// mcp-server-kubernetes 4.1.7 answers resources/templates/list; an
// error of another code; no answer at all), is served all the same: its
// tools are all listed, without a failure, well within the start's
// bound, and called; what it lacks is simply not offered, and what it
// has is. gemkit offered only its placeholder, for "could not list its
// resource templates: Method not found".
func TestOptionalMethodLacking(t *testing.T) {
	t.Parallel()
	s := newSetup(t, 30*time.Second)
	type row struct{ method, how string }
	rows := []row{{"", ""}}
	for _, m := range optionalMethods {
		for _, how := range []string{"notfound", "error", "silent"} {
			rows = append(rows, row{m, how})
		}
	}
	for _, r := range rows {
		t.Run(strings.ReplaceAll(r.method, "/", "_")+"_"+r.how, func(t *testing.T) {
			t.Parallel()
			testLacking(t, s, r.method, r.how)
		})
	}
}

// testLacking runs one row of TestOptionalMethodLacking: the fixture
// lacking method (none: "") the way how says, in a manager of its own.
func testLacking(t *testing.T, s *setup, method, how string) {
	m := newSetup(t, 30*time.Second).m
	sp := s.spec("lacking", filepath.Join(s.ext, "fixture.mjs"))
	sp.Env = map[string]string{"FIXTURE_CAPS": everyCapability}
	if method != "" {
		sp.Env["FIXTURE_LACK"] = method + "=" + how
	}
	m.Sync([]extmcp.Spec{sp})
	ctx := context.Background()
	if method == "logging/setLevel" {
		// A client's level, given again to the server as it starts.
		m.SetLevel(ctx, "info")
	}
	began := time.Now()
	c, failed := m.Catalog(ctx)
	took := time.Since(began)
	for _, f := range failed {
		t.Fatalf("the server is not served: %v", f.Err)
	}
	// Its bound is the start's (MaxStart) and the listing's; one method
	// that never answers costs no more than the wait for the optional
	// lists after the tools.
	if took > extmcp.MaxStart/2 {
		t.Errorf("the listing took %v", took)
	}
	if names := toolNames(c.Tools, "lacking"); len(names) != 19 || !names["ok"] {
		t.Errorf("its tools are %v, want the fixture's 19", names)
	}
	for list, got := range map[string]int{"resources/list": len(c.Resources), "resources/templates/list": len(c.Templates), "prompts/list": len(c.Prompts)} {
		if want := 1; list == method {
			if got != 0 {
				t.Errorf("%s: %d entries offered of a server that lacks it", list, got)
			}
		} else if got != want {
			t.Errorf("%s: %d entries, want %d", list, got, want)
		}
	}
	// A request of what it lacks fails on its own, in words, or at its
	// caller's bound; the server goes on serving.
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	switch method {
	case "resources/subscribe":
		err := m.Subscribe(rctx, sp.Key(), "fixture://notes")
		if err == nil {
			t.Errorf("a subscription the server lacks was taken")
		}
	case "completion/complete":
		_, err := m.Complete(rctx, sp.Key(), mcpclient.Completion{Ref: mcpclient.Ref{Type: mcpclient.RefPrompt, Name: "greet"}, Name: "who", Value: "w"})
		if err == nil {
			t.Errorf("a completion the server lacks was answered")
		}
		// Declared and found lacking: gemkit mcp no longer declares it.
		if lacked := how == "notfound"; m.Completions() == lacked {
			t.Errorf("after Method not found to completion/complete, Completions() is %v", m.Completions())
		}
	case "logging/setLevel":
		m.SetLevel(rctx, "debug")
	case "":
		raw, err := m.Complete(rctx, sp.Key(), mcpclient.Completion{Ref: mcpclient.Ref{Type: mcpclient.RefPrompt, Name: "greet"}, Name: "who", Value: "w"})
		var res struct{ Completion struct{ Values []string } }
		if err != nil || json.Unmarshal(raw, &res) != nil || len(res.Completion.Values) != 1 {
			t.Errorf("completion/complete of a server that has it: %s %v", raw, err)
		}
	}
	if text, isErr, err := call(t, m, sp, "ok", nil); err != nil || isErr || text != "ok" {
		t.Errorf("its tool ok: %q %v %v", text, isErr, err)
	}
}
