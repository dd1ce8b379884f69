package pkgrun

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/npmregistrytest"
	"github.com/gemkit/gemkit/internal/runnerline"
)

// publishEngines serves name at each version with its engines.node
// ("" for none) and, when deprecated, npm's deprecation; the last
// published is the latest. Its program prints its name and version.
func publishEngines(r *npmregistrytest.Registry, name string, versions ...[3]string) {
	for _, v := range versions {
		manifest := `{"name": "` + name + `", "version": "` + v[0] + `", "bin": "server.js"`
		if v[1] != "" {
			manifest += `, "engines": {"node": "` + v[1] + `"}`
		}
		if v[2] != "" {
			manifest += `, "deprecated": "` + v[2] + `"`
		}
		r.Publish(map[string]string{
			"package.json": manifest + "}",
			"server.js":    "#!/usr/bin/env node\nconsole.log(require('./package.json').name + ' ' + require('./package.json').version);\n",
		})
	}
}

// npxVersion is the version of the package the request names that the
// person's own npx runs (outside any sandbox, with the installer's
// environment and configuration): what it printed.
func npxVersion(t *testing.T, in *Installer, request string) string {
	t.Helper()
	cmd := execCommand("npx")
	cmd.Args = []string{"npx", "-y", request}
	cache := t.TempDir()
	cmd.Env = append(slices.Clone(in.Environ), "npm_config_cache="+cache, "npm_config_update_notifier=false")
	cmd.Dir = cache
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("npx -y %s: %v\n%s", request, err, out)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		t.Fatalf("npx -y %s printed %q", request, out)
	}
	return f[1]
}

// nodeVersion is the version of the node first on PATH, which runs
// npm in the install and starts the server.
func nodeVersion(t *testing.T) string {
	t.Helper()
	cmd := execCommand("node")
	cmd.Args = []string{"node", "--version"}
	b, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(strings.TrimSpace(string(b)), "v")
}

// TestInstallPicksForRuntime: the version pinned is the one the
// person's npx runs on the node that will start the server (firecrawl:
// on Node 20 npx runs 3.22.2, the newest that runs there, where the
// latest, 3.26.0, needs Node 22; gemkit pinned 3.26.0 as "the newest"
// and said nothing). Each line is checked against the real npx of this
// machine pointed at the same registry; the install says which version
// and why, and warns when the newest needs another runtime or the one
// pinned does not fit.
func TestInstallPicksForRuntime(t *testing.T) {
	needNPM(t)
	r := npmregistrytest.New(t, nil)
	publishEngines(r, "eng-mcp", [3]string{"1.0.0", ">=18", ""}, [3]string{"1.1.0", ">=18", ""}, [3]string{"2.0.0", ">=99", ""})
	publishEngines(r, "fit-mcp", [3]string{"1.0.0", "", ""}, [3]string{"1.2.0", ">=18", ""})
	publishEngines(r, "old-mcp", [3]string{"1.0.0", "", ""}, [3]string{"1.1.0", "", "use new-mcp"})
	node := nodeVersion(t)
	for _, tc := range []struct {
		request, want string
		choice, warn  string
	}{
		{"eng-mcp", "1.1.0", "the newest that runs on Node " + node + "; 2.0.0, the latest, needs node >=99",
			"the newest, eng-mcp 2.0.0, needs node >=99, and the server starts with Node " + node + " (the first node on your PATH): your npx runs 1.1.0 there too"},
		{"eng-mcp@latest", "2.0.0", "", "eng-mcp 2.0.0 needs node >=99, and the server starts with Node " + node + " (the first node on your PATH), as your npx would run it: it may fail"},
		{"eng-mcp@2.0.0", "2.0.0", "", "eng-mcp 2.0.0 needs node >=99"},
		{"eng-mcp@^1", "1.1.0", "", ""},
		{"eng-mcp@1.0.0", "1.0.0", "", ""},
		{"eng-mcp@*", "1.1.0", "the newest that runs on Node " + node + "; 2.0.0, the latest, needs node >=99", "your npx runs 1.1.0 there too"},
		{"fit-mcp", "1.2.0", "", ""},
		{"old-mcp", "1.0.0", "the newest not deprecated; 1.1.0, the latest, is deprecated", ""},
	} {
		t.Run(tc.request, func(t *testing.T) {
			in, _ := testInstaller(t, r, "")
			if got := npxVersion(t, in, tc.request); got != tc.want {
				t.Fatalf("the person's npx runs %s, the test wants %s", got, tc.want)
			}
			inv, ok, err := runnerline.Parse("npx", []string{"-y", tc.request})
			if !ok || err != nil {
				t.Fatal(ok, err)
			}
			var progress bytes.Buffer
			in.Progress = &progress
			tr, err := in.Install(context.Background(), Request{Extension: "e", Server: "s", Invocation: inv})
			if err != nil {
				t.Fatalf("%v\n%s", err, progress.String())
			}
			if tr.Version != tc.want {
				t.Errorf("pinned %s %s where npx runs %s\n%s", tr.Package, tr.Version, tc.want, progress.String())
			}
			if got := tr.Engine.Choice(); got != tc.choice {
				t.Errorf("Choice = %q, want %q", got, tc.choice)
			}
			if got := tr.Engine.Warning(tr.Package, tr.Version, ""); (tc.warn == "") != (got == "") || !strings.Contains(got, tc.warn) {
				t.Errorf("Warning = %q, want %q", got, tc.warn)
			}
			if tc.choice != "" && !strings.Contains(progress.String(), "installed "+tr.Package+" "+tr.Version+" ("+tc.choice+"): ") {
				t.Errorf("the progress does not say why:\n%s", progress.String())
			}
			if tc.warn != "" && !strings.Contains(progress.String(), tc.warn) {
				t.Errorf("the progress does not warn %q:\n%s", tc.warn, progress.String())
			}
			if tc.choice != "" && !strings.Contains(tr.Summary(), "("+tc.choice+")") {
				t.Errorf("Summary = %q", tr.Summary())
			}
		})
	}
}
