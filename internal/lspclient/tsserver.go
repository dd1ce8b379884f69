package lspclient

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/gemkit/gemkit/internal/codeintel"
)

// typescript-language-server (4.4.1) offers no textDocument/diagnostic:
// it publishes what tsserver's geterr finds, one kind after another,
// without versions, a few hundred milliseconds after a change, and
// publishes nothing again for a file still without problems, so a
// publish cannot be told from the tail of the check before a change.
// Its command typescript.tsserverRequest passes a request to tsserver
// (TSServerRequestCommand in its lib/cli.mjs), whose
// syntacticDiagnosticsSync, semanticDiagnosticsSync and
// suggestionDiagnosticsSync answer a file's diagnostics for tsserver's
// current program, after the changes sent before them: the diagnostics
// on request it lacks.

// tsserverRequest is typescript-language-server's command.
const tsserverRequest = "typescript.tsserverRequest"

// tsDiagnostic is tsserver's protocol.Diagnostic: 1-based lines and
// UTF-16 offsets.
type tsDiagnostic struct {
	Start    tsLocation      `json:"start"`
	End      tsLocation      `json:"end"`
	Text     string          `json:"text"`
	Code     json.RawMessage `json:"code"`
	Category string          `json:"category"`
	Source   string          `json:"source"`
}

type tsLocation struct {
	Line   int `json:"line"`
	Offset int `json:"offset"`
}

func (l tsLocation) position() codeintel.Position {
	return codeintel.Position{Line: max(l.Line-1, 0), Character: max(l.Offset-1, 0)}
}

// diagnostic converts as typescript-language-server does (toDiagnostic,
// toDiagnosticSeverity), so that pulled and published ones read alike.
func (d tsDiagnostic) diagnostic() codeintel.Diagnostic {
	sev := codeintel.SevError
	switch d.Category {
	case "warning":
		sev = codeintel.SevWarning
	case "suggestion":
		sev = codeintel.SevHint
	}
	src := d.Source
	if src == "" {
		src = "typescript"
	}
	code := string(d.Code)
	if s, err := strconv.Unquote(code); err == nil {
		code = s
	}
	if code == "null" {
		code = ""
	}
	return codeintel.Diagnostic{Range: codeintel.Range{Start: d.Start.position(), End: d.End.position()}, Severity: sev, Code: code, Source: src, Message: d.Text}
}

// offersTSServerRequest reports whether the server is
// typescript-language-server with its tsserver request command.
func (c *Client) offersTSServerRequest() bool {
	var p struct {
		Commands []string `json:"commands"`
	}
	raw, ok := c.caps.raw["executeCommandProvider"]
	return ok && json.Unmarshal(raw, &p) == nil && slices.Contains(p.Commands, tsserverRequest)
}

// pullTSServer asks tsserver, through typescript-language-server, for
// path's diagnostics of the three kinds it publishes.
func (c *Client) pullTSServer(ctx context.Context, path string) ([]codeintel.Diagnostic, error) {
	out := []codeintel.Diagnostic{}
	for _, kind := range []string{"syntacticDiagnosticsSync", "semanticDiagnosticsSync", "suggestionDiagnosticsSync"} {
		var rep struct {
			Success bool           `json:"success"`
			Message string         `json:"message"`
			Body    []tsDiagnostic `json:"body"`
		}
		params := map[string]any{"command": tsserverRequest, "arguments": []any{kind, map[string]any{"file": URI(path)}}}
		if err := c.request(ctx, "workspace/executeCommand", params, &rep); err != nil {
			return nil, err
		}
		if !rep.Success {
			return nil, fmt.Errorf("tsserver %s: %s", kind, rep.Message)
		}
		for _, d := range rep.Body {
			out = append(out, d.diagnostic())
		}
	}
	return out, nil
}
