//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
)

// peerSides are the same server under the two sandboxes issue 45 names
// beside gemkit's: bubblewrap alone (every namespace it makes new, the
// host's root read-only), and Anthropic's sandbox-runtime (`srt`,
// interop/'s pinned copy: bubblewrap plus its own proxies, no host
// allowed, the workspace writable). A side is left out, with the reason
// on stderr, when its program is missing.
func peerSides(root, tmp, ws, script string, env []string) []side {
	var sides []side
	if bwrap, err := exec.LookPath("bwrap"); err == nil {
		sides = append(sides, side{name: "under bubblewrap", tool: "echo", cmd: func() *exec.Cmd {
			c := exec.Command(bwrap, "--unshare-all", "--die-with-parent", "--new-session",
				"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--",
				"node", script)
			c.Dir, c.Env = ws, env
			return c
		}})
	} else {
		fmt.Fprintln(os.Stderr, "extmcp: bwrap not found (apt-get install bubblewrap): its side is left out")
	}
	srt := filepath.Join(root, "interop", "node_modules", ".bin", "srt")
	if _, err := os.Stat(srt); err != nil {
		fmt.Fprintln(os.Stderr, "extmcp: interop/node_modules/.bin/srt missing (npm ci in interop/): its side is left out")
		return sides
	}
	// sandbox-runtime wants ripgrep on PATH on Linux; Codex's package
	// (pinned beside it in interop/) ships one.
	rg := ""
	filepath.WalkDir(filepath.Join(root, "interop", "node_modules", "@openai"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "rg" && filepath.Base(filepath.Dir(p)) == "codex-path" {
			rg = filepath.Dir(p)
			return filepath.SkipAll
		}
		return nil
	})
	settings := filepath.Join(tmp, "srt-settings.json")
	b, _ := json.Marshal(map[string]any{
		"filesystem": map[string]any{"denyRead": []string{}, "allowWrite": []string{ws}, "denyWrite": []string{}},
		"network":    map[string]any{"allowedDomains": []string{}, "deniedDomains": []string{}},
	})
	if err := os.WriteFile(settings, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "extmcp:", err)
		return sides
	}
	srtEnv := env
	if rg != "" {
		srtEnv = withPath(env, rg)
	}
	return append(sides, side{name: "under sandbox-runtime (srt)", tool: "echo", cmd: func() *exec.Cmd {
		c := exec.Command(srt, "--settings", settings, "node", script)
		c.Dir, c.Env = ws, srtEnv
		return c
	}})
}

// withPath is env with dir first on PATH.
func withPath(env []string, dir string) []string {
	out := make([]string, 0, len(env)+1)
	path := "PATH=" + dir
	for _, kv := range env {
		if len(kv) > 5 && kv[:5] == "PATH=" {
			path += ":" + kv[5:]
			continue
		}
		out = append(out, kv)
	}
	return append(out, path)
}
