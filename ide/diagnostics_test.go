package ide

import (
	"encoding/json"
	"testing"
)

// A Diagnostic is LSP's in memory and the editor protocol's as JSON:
// positions move base at the wire, the severity is a word there, and a
// word the protocol does not know is refused.
func TestDiagnosticJSON(t *testing.T) {
	d := Diagnostic{Range: Range{Start: Position{Line: 3, Character: 15}, End: Position{Line: 3, Character: 29}},
		Severity: SevError, Code: "UndeclaredName", Source: "compiler", Message: "undefined: undefinedThing"}
	const wire = `{"message":"undefined: undefinedThing","severity":"error","source":"compiler","code":"UndeclaredName","range":{"start":{"line":4,"character":16},"end":{"line":4,"character":30}}}`
	b, err := json.Marshal(d)
	if err != nil || string(b) != wire {
		t.Fatalf("Marshal = %s, %v; want %s", b, err, wire)
	}
	var back Diagnostic
	if err := json.Unmarshal(b, &back); err != nil || back != d {
		t.Fatalf("Unmarshal = %+v, %v; want %+v", back, err, d)
	}
	for _, c := range []struct {
		in   string
		want Severity
		err  string
	}{
		{`{"message":"m","severity":"warning","range":{"start":{"line":1,"character":1},"end":{"line":1,"character":1}}}`, SevWarning, ""},
		{`{"message":"m","severity":"hint","range":{"start":{"line":0,"character":0},"end":{"line":0,"character":0}}}`, SevHint, ""},
		{`{"message":"m","severity":"fatal","range":{"start":{"line":1,"character":1},"end":{"line":1,"character":1}}}`, 0, `severity must be error, warning, info or hint, not "fatal"`},
		{`{"message":"m","range":{"start":{"line":1,"character":1},"end":{"line":1,"character":1}}}`, 0, `severity must be error, warning, info or hint, not ""`},
	} {
		var got Diagnostic
		err := json.Unmarshal([]byte(c.in), &got)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%s: err = %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got.Severity != c.want || got.Range.Start != (Position{}) {
			t.Errorf("%s: %+v, %v", c.in, got, err)
		}
	}
}
