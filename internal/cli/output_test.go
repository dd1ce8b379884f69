package cli

import (
	"bytes"
	"testing"
)

// Every --json output escapes alike: the report of ide status/doctor/check
// (ideReport), the extension commands (writeJSON) and ide watch's event
// lines (writeJSONLine) all keep &, < and > as they are.
func TestJSONOutputsEscapeAlike(t *testing.T) {
	t.Parallel()
	v := map[string]string{"path": "/src/R&D/<x>"}
	var report, ext, line bytes.Buffer
	if err := ideReport(&report, true, v, nil, true); err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(&ext, v); err != nil {
		t.Fatal(err)
	}
	if err := writeJSONLine(&line, v); err != nil {
		t.Fatal(err)
	}
	if report.String() != ext.String() {
		t.Errorf("ide report JSON %q differs from extensions JSON %q", report.String(), ext.String())
	}
	if want := "{\n  \"path\": \"/src/R&D/<x>\"\n}\n"; ext.String() != want {
		t.Errorf("writeJSON = %q, want %q", ext.String(), want)
	}
	if want := "{\"path\":\"/src/R&D/<x>\"}\n"; line.String() != want {
		t.Errorf("writeJSONLine = %q, want %q", line.String(), want)
	}
}
