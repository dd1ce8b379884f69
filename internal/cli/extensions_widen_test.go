package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWideningFlagNamed: a bad value of a widening flag is said with
// the one flag that gave it (not all five), and nothing is switched.
func TestWideningFlagNamed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	src := srvExt(t)
	os.WriteFile(filepath.Join(src, "server.js"), []byte("// a server\n"), 0o644)
	e.mustRun("link", src, "--consent")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--allow-host", "bad host"}, `--allow-host "bad host": the host contains spaces; give one host to each --allow-host, as permissions.network.allowedHosts takes it: api.example.com, *.example.com, localhost:8080`},
		{[]string{"--allow-host", "api.example.com", "--allow-host", ""}, `--allow-host "": the host is empty`},
		{[]string{"--allow-host", "169.254.169.254"}, `--allow-host: host "169.254.169.254" is a cloud's metadata service`},
		{[]string{"--allow-write", "everything"}, `--allow-write: write scope "everything": an extension's MCP servers may be allowed to write the workspace (workspace) or nothing but their data folder (none)`},
		{[]string{"--allow-host", "api.example.com", "--allow-credentials", "ssh"}, `--allow-credentials: credentials "ssh": ssh's credentials are not handed to an MCP server`},
		{[]string{"--allow-env", "1X"}, `--allow-env: variable: "1X" is not a variable's name`},
		{[]string{"--data-limit", "100MiB"}, "--data-limit: data limit 100 MiB is below the default, 1 GiB"},
	} {
		_, errOut, code := e.run(append([]string{"sandbox", "srv-ext"}, c.args...)...)
		if code != ExitError || !strings.HasPrefix(errOut, "gemkit: "+c.want) {
			t.Errorf("%q: exit %d, %q; want %d, %q", c.args, code, errOut, ExitError, c.want)
		}
	}
	if out := e.mustRun("describe", "srv-ext"); strings.Contains(out, "switched to gemkit") {
		t.Errorf("switched after a bad flag:\n%s", out)
	}
}
