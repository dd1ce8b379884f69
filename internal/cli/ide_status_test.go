package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/client"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
)

// TestStatusNamesTheProcess: the editor process is named by its command
// line; when the discovery file with its pid names no editor (gemkit's
// terminal front-end writes ideInfo "gemkit" and its parent's pid, a
// shell), the line says that the process started gemkit rather than
// letting a shell pass for the editor.
func TestStatusNamesTheProcess(t *testing.T) {
	for _, tc := range []struct {
		name, ideName, command, want string
		noWant                       string
	}{
		{name: "terminal companion", ideName: ide.DefaultIDEName, command: "bash --norc",
			want: "pid 42 (from GEMINI_CLI_IDE_PID) bash --norc, which started gemkit ide serve (no editor: the file names gemkit)"},
		{name: "editor", ideName: "neovim", command: "nvim --embed", want: "pid 42 (from GEMINI_CLI_IDE_PID) nvim --embed\n", noWant: "started gemkit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &client.StatusReport{
				Process: discovery.IDEProcess{PID: 42, Command: tc.command, Source: "env"},
				Files:   []client.FileStatus{{Name: "gemini-ide-server-42-1.json", PIDMatch: true, Alive: true, IDEInfo: &ide.IDEInfo{Name: tc.ideName, DisplayName: tc.ideName}}},
			}
			var b bytes.Buffer
			printStatus(&b, r)
			if !strings.Contains(b.String(), tc.want) || (tc.noWant != "" && strings.Contains(b.String(), tc.noWant)) {
				t.Fatalf("status:\n%s\nwant %q", b.String(), tc.want)
			}
		})
	}
}
