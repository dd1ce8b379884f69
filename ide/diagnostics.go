package ide

import (
	"encoding/json"
	"fmt"
)

// Position is a place in a text document as LSP counts it: Line is
// 0-based, Character the 0-based offset in UTF-16 code units within the
// line. (A Cursor, the editor protocol's, is 1-based.)
type Position struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

// Range is a span of a text document as LSP counts it, End exclusive.
type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

// Severity is LSP's DiagnosticSeverity.
type Severity int

// The severities.
const (
	SevError   Severity = 1
	SevWarning Severity = 2
	SevInfo    Severity = 3
	SevHint    Severity = 4
)

var severityWords = [...]string{SevError: "error", SevWarning: "warning", SevInfo: "info", SevHint: "hint"}

// String is the severity in words ("error"), as diagnostics/get spells it.
func (s Severity) String() string {
	if s >= SevError && s <= SevHint {
		return severityWords[s]
	}
	return "error" // LSP: a diagnostic without severity is the client's to judge; errors are safest
}

// Diagnostic is a problem a language server reports in a file: gemkit's
// one diagnostic type, from whichever server or editor it comes (gemkit's
// code intelligence calls it codeintel.Diagnostic, the companion
// companion.Diagnostic). In memory it is in LSP's terms; its JSON is the
// editor protocol's diagnostics/get form, positions 1-based and the
// severity in words, so that the base changes only where a diagnostic
// crosses that protocol, here. Claude Code's getDiagnostics, 0-based
// like LSP, writes its own form.
type Diagnostic struct {
	Range    Range
	Severity Severity
	// Code is the server's code for the problem, as a string.
	Code string
	// Source is the tool that found it ("compiler", "ts", "Pyright").
	Source  string
	Message string
}

// wireDiagnostic is a Diagnostic as diagnostics/get carries it.
type wireDiagnostic struct {
	Message  string `json:"message"`
	Severity string `json:"severity"`
	Source   string `json:"source,omitempty"`
	Code     string `json:"code,omitempty"`
	Range    struct {
		Start Cursor `json:"start"`
		End   Cursor `json:"end"`
	} `json:"range"`
}

// MarshalJSON writes d as diagnostics/get carries it.
func (d Diagnostic) MarshalJSON() ([]byte, error) {
	w := wireDiagnostic{Message: d.Message, Severity: d.Severity.String(), Source: d.Source, Code: d.Code}
	w.Range.Start, w.Range.End = oneBased(d.Range.Start), oneBased(d.Range.End)
	return json.Marshal(w)
}

// UnmarshalJSON reads d as diagnostics/get carries it; a severity that is
// not one of its words is an error.
func (d *Diagnostic) UnmarshalJSON(b []byte) error {
	var w wireDiagnostic
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	sev := Severity(0)
	for s := SevError; s <= SevHint; s++ {
		if severityWords[s] == w.Severity {
			sev = s
		}
	}
	if sev == 0 {
		return fmt.Errorf("severity must be error, warning, info or hint, not %q", w.Severity)
	}
	*d = Diagnostic{Range: Range{Start: zeroBased(w.Range.Start), End: zeroBased(w.Range.End)},
		Severity: sev, Code: w.Code, Source: w.Source, Message: w.Message}
	return nil
}

func oneBased(p Position) Cursor { return Cursor{Line: p.Line + 1, Character: p.Character + 1} }

func zeroBased(c Cursor) Position {
	return Position{Line: max(c.Line-1, 0), Character: max(c.Character-1, 0)}
}

// FileDiagnostics are the diagnostics of one file (Path absolute).
type FileDiagnostics struct {
	Path        string       `json:"path"`
	Diagnostics []Diagnostic `json:"diagnostics"`
	// Stale, when not empty, says why Diagnostics may not be those of
	// the file's latest text or of the workspace's latest change (the
	// server did not report in time, or does not check the file), in
	// words for an answer. diagnostics/get carries it as an optional
	// member a plugin may leave out.
	Stale string `json:"stale,omitempty"`
	// Fix, when not empty, says what to do about some of Diagnostics
	// when gemkit can say more than the server (a Go module gopls
	// cannot download in gemkit's sandbox), in words for an answer; an
	// optional member of diagnostics/get, as Stale.
	Fix string `json:"fix,omitempty"`
}

// DiagnosticsResult is the answer to diagnostics/get.
type DiagnosticsResult struct {
	Files []FileDiagnostics `json:"files"`
}
