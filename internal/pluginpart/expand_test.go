package pluginpart

import (
	"strings"
	"testing"
)

// TestExpand: Claude Code's three variables of a part are replaced
// (a value holding ${...} is not read again); any other ${...}, the
// person's options and variables among them, is refused by name.
func TestExpand(t *testing.T) {
	vars := map[string]string{"CLAUDE_PLUGIN_ROOT": "/twin", "CLAUDE_PLUGIN_DATA": "/data/${CLAUDE_PLUGIN_ROOT}", "CLAUDE_PROJECT_DIR": "/ws"}
	for _, c := range []struct{ in, want, bad string }{
		{"${CLAUDE_PLUGIN_ROOT}/bin/lsp", "/twin/bin/lsp", ""},
		{"cd ${CLAUDE_PROJECT_DIR} && tail -f ${CLAUDE_PLUGIN_DATA}/log", "cd /ws && tail -f /data/${CLAUDE_PLUGIN_ROOT}/log", ""},
		{"$CLAUDE_PLUGIN_ROOT and $HOME stay for the shell", "$CLAUDE_PLUGIN_ROOT and $HOME stay for the shell", ""},
		{"${user_config.token}", "", "${user_config.token}"},
		{"${HOME}/x ${CLAUDE_PLUGIN_ROOT} ${claude_plugin_root}", "", "${HOME}, ${claude_plugin_root}"},
		{"${}", "", "${}"},
	} {
		got, err := Expand(c.in, vars)
		if c.bad != "" {
			if err == nil || !strings.Contains(err.Error(), "names "+c.bad+",") {
				t.Errorf("%q: %q, %v", c.in, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}
