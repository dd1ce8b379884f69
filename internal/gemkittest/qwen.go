package gemkittest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// QwenCode returns node and the script of the real Qwen Code CLI pinned in
// interop/package.json (@qwen-code/qwen-code 0.24.4, which runs on Node
// 20 though it asks for 22), failing the test with the install hint when
// it is missing.
func QwenCode(t testing.TB) (node, cli string) {
	t.Helper()
	node, interop := Interop(t, "@qwen-code/qwen-code/package.json")
	return node, filepath.Join(interop, "node_modules", "@qwen-code", "qwen-code", "cli.js")
}

// WriteQwenSettings gives the real Qwen Code whose folder is dir
// ($QWEN_HOME, else ~/.qwen; its settings.json goes there) what it needs to
// start offline in IDE mode, against an OpenAI-compatible server, with no
// first-run question: IDE mode on, OpenAI auth, no telemetry, usage
// statistics or update check; edits asked about ("default" approval: its
// own default, "auto", lets a classifier allow edits without a diff); and
// none of the side requests that would take the scripted model's turns
// (managed memory and its consolidation, follow-up suggestions, the
// feedback and welcome-back dialogs). Its bundled ripgrep is not
// executable as npm installs it, so the built-in search is used. No
// banner, tips or loading phrases: the banner's large letters are most
// of the drawing of its first screen, and no test reads them (idle Qwen
// Code in tmux to its input, in a cpuacct cgroup, one process: 4.8 to
// 5.5 CPU-s with them, 3.1 to 3.9 without).
func WriteQwenSettings(t testing.TB, dir string) {
	t.Helper()
	settings, _ := json.Marshal(map[string]any{
		"ide":       map[string]any{"enabled": true},
		"security":  map[string]any{"auth": map[string]any{"selectedType": "openai"}},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"general":   map[string]any{"enableAutoUpdate": false},
		"tools":     map[string]any{"approvalMode": "default", "useRipgrep": false},
		"memory":    map[string]any{"enableManagedAutoMemory": false, "enableManagedAutoDream": false},
		"ui": map[string]any{"enableFollowupSuggestions": false, "enableUserFeedback": false, "enableWelcomeBack": false,
			"hideBanner": true, "hideTips": true, "accessibility": map[string]any{"enableLoadingPhrases": false}},
	})
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), settings, 0o600); err != nil {
		t.Fatal(err)
	}
}

// QwenModelEnv points Qwen Code at an OpenAI-compatible server at url
// (http://127.0.0.1:PORT, without /v1), and runs it in one process:
// QWEN_CODE_NO_RELAUNCH skips its launcher, a first node process that
// loads the whole CLI only to start a second with a larger heap bound
// (--max-old-space-size, half the machine's memory) and wait on it. The
// launcher is about a third of a session's start-up CPU (idle Qwen Code
// in tmux to its input, in a cpuacct cgroup: 7.0 to 15.2 CPU-s with it,
// 4.8 to 5.5 without, at load 16 to 21); nothing the tests check goes
// through it: Qwen Code finds the companion by its lock files and the
// workspace, not by its process tree, which it walks only for the
// legacy file named after the editor's pid.
func QwenModelEnv(url string) []string {
	return []string{"OPENAI_BASE_URL=" + url + "/v1", "OPENAI_API_KEY=sk-test", "OPENAI_MODEL=test-model", "QWEN_CODE_NO_RELAUNCH=true"}
}
