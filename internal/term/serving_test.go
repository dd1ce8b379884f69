package term

import (
	"strings"
	"testing"
)

func TestServingText(t *testing.T) {
	got := ServingText(4321, "/tmp/gemini/ide/gemini-ide-server-1-4321.json", map[string]string{
		"GEMINI_CLI_IDE_SERVER_PORT":    "4321",
		"GEMINI_CLI_IDE_WORKSPACE_PATH": "/home/me/my project:/srv/it's",
	})
	for _, want := range []string{
		"serving on 127.0.0.1:4321\n",
		"Discovery file: /tmp/gemini/ide/gemini-ide-server-1-4321.json\n",
		"  export GEMINI_CLI_IDE_SERVER_PORT=4321 GEMINI_CLI_IDE_WORKSPACE_PATH='/home/me/my project:/srv/it'\\''s'\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("ServingText lacks %q:\n%s", want, got)
		}
	}
}

func TestShellQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"abc-1.2/x", "abc-1.2/x"},
		{"", "''"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{"$HOME", "'$HOME'"},
	}
	for _, tc := range tests {
		if got := shellQuote(tc.in); got != tc.want {
			t.Errorf("shellQuote(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
