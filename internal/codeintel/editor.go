package codeintel

import "github.com/gemkit/gemkit/ide"

// The diagnostics as the editor protocol's diagnostics/get carries them
// (ide.FileDiagnostics: 1-based positions, the severity in words) are
// converted here, and only here: a set of language clients (an editor's,
// gemkit's own) answers in that form, and every Source's answer is a
// FileDiagnostics.

// EditorDiagnostics is f as diagnostics/get carries it.
func EditorDiagnostics(f FileDiagnostics) ide.FileDiagnostics {
	out := ide.FileDiagnostics{Path: f.Path, Stale: f.Stale, Diagnostics: make([]ide.Diagnostic, 0, len(f.Diagnostics))}
	for _, d := range f.Diagnostics {
		out.Diagnostics = append(out.Diagnostics, ide.Diagnostic{
			Message: d.Message, Severity: d.Severity.String(), Source: d.Source, Code: d.Code,
			Range: ide.Range{Start: oneBased(d.Range.Start), End: oneBased(d.Range.End)},
		})
	}
	return out
}

// FromEditor is a file's diagnostics/get answer as a Source gives it.
func FromEditor(f ide.FileDiagnostics) FileDiagnostics {
	out := FileDiagnostics{Path: f.Path, Stale: f.Stale, Diagnostics: make([]Diagnostic, 0, len(f.Diagnostics))}
	for _, d := range f.Diagnostics {
		out.Diagnostics = append(out.Diagnostics, Diagnostic{
			Range:    Range{Start: zeroBased(d.Range.Start), End: zeroBased(d.Range.End)},
			Severity: severities[d.Severity], Code: d.Code, Source: d.Source, Message: d.Message,
		})
	}
	return out
}

var severities = map[string]Severity{"error": SevError, "warning": SevWarning, "info": SevInfo, "hint": SevHint}

func oneBased(p Position) ide.Cursor { return ide.Cursor{Line: p.Line + 1, Character: p.Character + 1} }

func zeroBased(c ide.Cursor) Position {
	return Position{Line: max(c.Line-1, 0), Character: max(c.Character-1, 0)}
}
