package geminisettings

import (
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Gemini CLI 0.61 starts a stdio MCP server (gemkit mcp too) with its
// own environment redacted: a variable whose name holds one of these
// words, or is one of redactedNames, is left out, unless the server's
// entry in settings.json names it in its env, whose "$NAME" values
// Gemini CLI takes from its whole environment when it loads the file.
// Source: @google/gemini-cli-core 0.61,
// dist/src/services/environmentSanitization.js
// (NEVER_ALLOWED_NAME_PATTERNS, NEVER_ALLOWED_ENVIRONMENT_VARIABLES,
// ALWAYS_ALLOWED_ENVIRONMENT_VARIABLES), applied by
// dist/src/tools/mcp-client.js (createTransport, with
// enableEnvironmentVariableRedaction); and @google/gemini-cli 0.61's
// settings loader (resolveEnvVarsInObject over each settings file).
var redactedPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)TOKEN|SECRET|PASSWORD|PASSWD|KEY|AUTH|CREDENTIAL|CREDS|PRIVATE|CERT`)
})

var redactedNames = []string{"CLIENT_ID", "DB_URI", "CONNECTION_STRING", "AWS_DEFAULT_REGION", "AZURE_CLIENT_ID", "AZURE_TENANT_ID",
	"SLACK_WEBHOOK_URL", "TWILIO_ACCOUNT_SID", "DATABASE_URL", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_ACCOUNT", "FIREBASE_PROJECT_ID"}

var keptNames = []string{"PATH", "HOME", "LANG", "SHELL", "TMPDIR", "USER", "LOGNAME", "TERM", "COLORTERM"}

// Redacted reports whether Gemini CLI 0.61 leaves the variable name out
// of the environment of the MCP servers it starts (gemkit mcp's
// included), going by its name (it also leaves out any whose value looks
// like a key or a token).
func Redacted(name string) bool {
	up := strings.ToUpper(name)
	switch {
	case strings.HasPrefix(up, "GEMINI_CLI_"), strings.HasPrefix(up, "GIT_CONFIG_"), slices.Contains(keptNames, up):
		return false
	case slices.Contains(redactedNames, up):
		return true
	}
	return redactedPattern().MatchString(up)
}
