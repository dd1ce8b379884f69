package runnerline

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestParse reads every runner's spellings as the manifests of published
// extensions and the runners' documentation write them.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		line                    string
		runner, pkg, spec, prog string
		args                    []string
		eco                     string
		latestTag               bool
	}{
		// context7's published manifest (upstash/context7).
		{line: "npx -y @upstash/context7-mcp --api-key YOUR_API_KEY", runner: "npx", pkg: "@upstash/context7-mcp", args: []string{"--api-key", "YOUR_API_KEY"}},
		// dynatrace's (dynatrace-oss/dynatrace-mcp): @latest is the newest,
		// the same request as the bare name, but the tag named (npm takes
		// it whatever its engines).
		{line: "npx -y @dynatrace-oss/dynatrace-mcp-server@latest", runner: "npx", pkg: "@dynatrace-oss/dynatrace-mcp-server", latestTag: true},
		// google-cloud-storage's (gemini-cli-extensions/google-cloud-storage).
		{line: "npx -y @toolbox-sdk/server@1.9.0 --prebuilt cloud-storage --stdio", runner: "npx", pkg: "@toolbox-sdk/server", spec: "1.9.0", args: []string{"--prebuilt", "cloud-storage", "--stdio"}},
		// chrome-devtools-mcp's, without -y.
		{line: "npx chrome-devtools-mcp@1.7.0", runner: "npx", pkg: "chrome-devtools-mcp", spec: "1.7.0"},
		{line: "npx --yes --quiet pkg@^1.2.0 -y", runner: "npx", pkg: "pkg", spec: "^1.2.0", args: []string{"-y"}},
		{line: "npx -y -- pkg@next --flag", runner: "npx", pkg: "pkg", spec: "next", args: []string{"--flag"}},
		{line: "npx -p @scope/tools serve --port 1", runner: "npx", pkg: "@scope/tools", prog: "serve", args: []string{"--port", "1"}},
		{line: "npx --package=@scope/tools@2 serve", runner: "npx", pkg: "@scope/tools", spec: "2", prog: "serve"},
		{line: "/usr/local/bin/npx -y pkg", runner: "npx", pkg: "pkg"},
		{line: "npm exec -y -- pkg@1.0.0 --stdio", runner: "npm exec", pkg: "pkg", spec: "1.0.0", args: []string{"--stdio"}},
		{line: "npm exec --yes pkg a b", runner: "npm exec", pkg: "pkg", args: []string{"a", "b"}},
		{line: "npm x -y pkg", runner: "npm exec", pkg: "pkg"},
		{line: "npm --yes exec pkg", runner: "npm exec", pkg: "pkg"},
		{line: "npm exec --package=pkg@3 -- prog --x", runner: "npm exec", pkg: "pkg", spec: "3", prog: "prog", args: []string{"--x"}},
		{line: "pnpm dlx pkg@1.2.3 --stdio", runner: "pnpm dlx", pkg: "pkg", spec: "1.2.3", args: []string{"--stdio"}},
		{line: "pnpm --silent dlx pkg", runner: "pnpm dlx", pkg: "pkg"},
		{line: "pnpm dlx --package pkg prog", runner: "pnpm dlx", pkg: "pkg", prog: "prog"},
		{line: "pnpx pkg", runner: "pnpm dlx", pkg: "pkg"},
		{line: "bunx pkg@1 --stdio", runner: "bunx", pkg: "pkg", spec: "1", args: []string{"--stdio"}},
		{line: "bun x pkg", runner: "bunx", pkg: "pkg"},
		{line: "bunx -p pkg prog", runner: "bunx", pkg: "pkg", prog: "prog"},
		{line: "yarn dlx -q pkg@2.0.0 a", runner: "yarn dlx", pkg: "pkg", spec: "2.0.0", args: []string{"a"}},
		{line: "yarn dlx -p pkg prog", runner: "yarn dlx", pkg: "pkg", prog: "prog"},
		{line: "uvx mcp-server-fetch", runner: "uvx", pkg: "mcp-server-fetch", eco: PyPI},
		{line: "uvx mcp-server-git@2025.1.14 --repository .", runner: "uvx", pkg: "mcp-server-git", spec: "2025.1.14", args: []string{"--repository", "."}, eco: PyPI},
		{line: "uvx --from awslabs.core-mcp-server==1.0 core", runner: "uvx", pkg: "awslabs.core-mcp-server", spec: "1.0", prog: "core", eco: PyPI},
		{line: "uv tool run pkg>=2", runner: "uvx", pkg: "pkg", spec: ">=2", eco: PyPI},
		{line: "pipx run --spec pkg==1.0 prog", runner: "pipx run", pkg: "pkg", spec: "1.0", prog: "prog", eco: PyPI},
		{line: "pipx run pkg", runner: "pipx run", pkg: "pkg", eco: PyPI},
	} {
		f := strings.Fields(tc.line)
		in, ok, err := Parse(f[0], f[1:])
		if !ok || err != nil {
			t.Errorf("%s: ok %v, err %v", tc.line, ok, err)
			continue
		}
		eco := tc.eco
		if eco == "" {
			eco = NPM
		}
		if in.Runner != tc.runner || in.Package != tc.pkg || in.Spec != tc.spec || in.Program != tc.prog || in.Ecosystem != eco || !slices.Equal(in.Args, tc.args) || in.LatestTag != tc.latestTag {
			t.Errorf("%s: %+v", tc.line, in)
		}
	}
}

// TestParseNotRunners: commands that start a program, not a runner.
func TestParseNotRunners(t *testing.T) {
	for _, line := range []string{"node server.js", "npm run start", "npm", "pnpm install", "bun server.ts", "yarn start", "uv run server.py", "pipx install x", "python3 -m server", "/opt/npx-like/bin/server"} {
		f := strings.Fields(line)
		if _, ok, err := Parse(f[0], f[1:]); ok || err != nil {
			t.Errorf("%s: read as a runner (%v)", line, err)
		}
	}
}

// TestParseRefused: each line gemkit cannot pin is refused with why.
func TestParseRefused(t *testing.T) {
	for _, tc := range []struct{ line, why string }{
		{"npx", "names no package"},
		{"npx -y", "names no package"},
		{"npx -c 'echo hi'", "shell command string"},
		{"npx --call=x", "shell command string"},
		{"npx -p a -p b prog", "several packages"},
		{"npx -p a", "no program"},
		{"npx --registry https://evil.example/ pkg", "registry of its own"},
		{"npx --no-install pkg", "not to install"},
		{"npx --node-options=--inspect pkg", "does not know what npx does with the option --node-options=--inspect"},
		{"npx github:user/repo", "outside the registry"},
		{"npx user/repo", "GitHub's user/repository shorthand"},
		{"npx git+https://github.com/u/r.git", "is a URL"},
		{"npx https://example.com/pkg.tgz", "is a URL"},
		{"npx ./local-dir", "folder or a file"},
		{"npx /abs/pkg.tgz", "folder or a file"},
		{"npx file:../x", "outside the registry"},
		{"npx alias@npm:real@1", "not a version, a range or a tag"},
		{"npx pkg@", "no version"},
		{"npx Bad_Name", "not the name of an npm package"},
		{"npx -p pkg ../bin/x", "is a path"},
		{"npm exec pkg --stdio", "put \"--\" before"},
		{"npm exec", "names no package"},
		{"pnpm dlx --allow-build=esbuild pkg", "install scripts"},
		{"pnpm dlx -c 'pkg --x'", "shell command string"},
		{"bunx --bun pkg", "with Bun instead of Node"},
		{"bunx --no-install pkg", "not to install"},
		{"uvx --with extra pkg", "pins one package per server"},
		{"uvx git+https://github.com/u/r", "not a project of PyPI"},
		{"uvx --index-url https://x/ pkg", "registry of its own"},
		{"pipx run ./dist/x.whl", "not a project of PyPI"},
	} {
		f := strings.Fields(tc.line)
		_, ok, err := Parse(f[0], f[1:])
		var ue *UnpinnableError
		if !ok || !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: ok %v, err %v; want a refusal saying %q", tc.line, ok, err, tc.why)
		}
	}
}

func TestRequestAndLine(t *testing.T) {
	for _, tc := range []struct {
		in            Invocation
		request, line string
	}{
		{Invocation{Runner: "npx", Ecosystem: NPM, Package: "@a/b"}, "@a/b", "npx @a/b"},
		{Invocation{Runner: "npx", Ecosystem: NPM, Package: "p", Spec: "1.0.0", Args: []string{"--stdio"}}, "p@1.0.0", "npx p@1.0.0 --stdio"},
		{Invocation{Runner: "npx", Ecosystem: NPM, Package: "p", Program: "prog"}, "p", "npx --package p prog"},
		{Invocation{Runner: "uvx", Ecosystem: PyPI, Package: "p", Spec: "1.0"}, "p==1.0", "uvx p==1.0"},
		{Invocation{Runner: "uvx", Ecosystem: PyPI, Package: "p", Spec: ">=1.0"}, "p>=1.0", "uvx p>=1.0"},
	} {
		if got := tc.in.Request(); got != tc.request {
			t.Errorf("Request %+v = %q, want %q", tc.in, got, tc.request)
		}
		if got := tc.in.Line(); got != tc.line {
			t.Errorf("Line %+v = %q, want %q", tc.in, got, tc.line)
		}
	}
}
