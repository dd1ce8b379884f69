package gemkittest

import (
	"os"
	"path/filepath"
	"strings"
)

// AgentEnv is the environment of a gemkit agent command under test: this
// process's, less what points at the person's own home, config, temp
// folder and model credentials, with a private home and, under root, a
// private temp folder and config folder. The caller adds the model's
// address and key.
func AgentEnv(home, root string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || k == "TMPDIR" || k == "XDG_CONFIG_HOME" || strings.HasPrefix(k, "GEMINI_") || strings.HasPrefix(k, "GOOGLE_") || strings.HasPrefix(k, "OPENAI_") {
			continue
		}
		env = append(env, kv)
	}
	tmp := filepath.Join(root, "tmp")
	os.MkdirAll(tmp, 0o755)
	return append(env, "HOME="+home, "TMPDIR="+tmp, "LANG=C.UTF-8", "XDG_CONFIG_HOME="+filepath.Join(root, "config"))
}
