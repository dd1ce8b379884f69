package claudeswitch

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/gemkit/gemkit/internal/extension"
)

// Vars are the values of the variables Claude Code 2.1.330 expands in a
// plugin's MCP servers and hooks, as the twin extension has them.
type Vars struct {
	// Data is the folder ${CLAUDE_PLUGIN_DATA} names: the twin's
	// servers' data folder in gemkit.
	Data string
	// UserConfig are the values the person gave Claude Code for the
	// plugin's user_config keys (pluginConfigs in its user settings).
	UserConfig map[string]string
}

// dollar finds what a $ may start: ${...}, or $ and a name.
var dollar = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\$\{[^}]*\}?|\$[A-Za-z_][A-Za-z0-9_]*`)
})

// expand converts s, a string of the plugin's server or hook (where),
// into the twin's: ${CLAUDE_PLUGIN_ROOT} becomes ${extensionPath} (the
// copy), ${CLAUDE_PLUGIN_DATA} the data folder, ${user_config.KEY} the
// person's value. Any other ${...}, which Claude Code would take from
// its environment or leave, refuses the switch: the twin would not run
// what the plugin runs. So does a $NAME where gemkit mcp reads it as a
// variable and Claude Code passes it as written (an env value, a
// header: extmcp's expand); where neither reads it (a command, its
// args) or both leave it to the shell (a hook's command), dollarOK, it
// stays.
func (v Vars) expand(s, where string, dollarOK bool) (string, error) {
	var bad error
	out := dollar().ReplaceAllStringFunc(s, func(ref string) string {
		switch {
		case ref == "${CLAUDE_PLUGIN_ROOT}":
			return "${extensionPath}"
		case ref == "${CLAUDE_PLUGIN_DATA}":
			return v.Data
		case strings.HasPrefix(ref, "${user_config.") && strings.HasSuffix(ref, "}"):
			key := strings.TrimSuffix(strings.TrimPrefix(ref, "${user_config."), "}")
			if val, ok := v.UserConfig[key]; ok {
				return val
			}
			bad = cmpErr(bad, fmt.Errorf("%s: %s has no value in Claude Code's user settings (pluginConfigs): set it in Claude Code first (a sensitive one, kept in its credentials, gemkit does not read)", where, extension.Printable(ref)))
		case strings.HasPrefix(ref, "${"):
			bad = cmpErr(bad, fmt.Errorf("%s: %s is a variable gemkit does not convert (Claude Code expands only ${CLAUDE_PLUGIN_ROOT}, ${CLAUDE_PLUGIN_DATA} and ${user_config.KEY} as the plugin's own; any other it takes from its environment, which the sandbox does not have)", where, extension.Printable(ref)))
		case dollarOK:
		default:
			bad = cmpErr(bad, fmt.Errorf("%s: %q holds %s, which Claude Code passes as written and gemkit would read as a variable", where, extension.Printable(s), extension.Printable(ref)))
		}
		return ref
	})
	return out, bad
}

// cmpErr is the first error of a and b.
func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
