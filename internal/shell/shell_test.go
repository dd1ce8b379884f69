package shell

import (
	"os/exec"
	"testing"
)

// TestQuote: every word a shell would split, expand or run is quoted,
// and the real sh reads each quoted word back as the string itself.
func TestQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"abc-1.2/x", "abc-1.2/x"},
		{"/tmp/gemini/ide/gemini-ide-server-1-2.json", "/tmp/gemini/ide/gemini-ide-server-1-2.json"},
		{"", "''"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{"$HOME", "'$HOME'"},
		{"/tmp/x;rm -rf ~", "'/tmp/x;rm -rf ~'"},
		{"/tmp/a&b", "'/tmp/a&b'"},
		{"/tmp/*.json", "'/tmp/*.json'"},
		{"/tmp/a|b>c<d", "'/tmp/a|b>c<d'"},
		{"/tmp/(x)", "'/tmp/(x)'"},
		{"/tmp/a\nb", "'/tmp/a\nb'"},
		{"~/x", "'~/x'"},
		{"/tmp/#x", "'/tmp/#x'"},
		{"/tmp/x?", "'/tmp/x?'"},
		{"/tmp/[ab]", "'/tmp/[ab]'"},
		{"/tmp/{a,b}", "'/tmp/{a,b}'"},
		{"/tmp/`id`", "'/tmp/`id`'"},
		{`/tmp/a\b`, `'/tmp/a\b'`},
		{`/tmp/"x"`, `'/tmp/"x"'`},
		{"/tmp/!x", "'/tmp/!x'"},
		{"/tmp/é", "'/tmp/é'"},
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal("sh is not installed: ", err)
	}
	for _, tc := range tests {
		got := Quote(tc.in)
		if got != tc.want {
			t.Errorf("Quote(%q) = %q, want %q", tc.in, got, tc.want)
		}
		out, err := exec.Command(sh, "-c", "printf %s "+got).Output()
		if err != nil || string(out) != tc.in {
			t.Errorf("sh read %s back as %q (%v), want %q", got, out, err, tc.in)
		}
	}
}
