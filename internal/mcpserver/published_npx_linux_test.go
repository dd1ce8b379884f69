package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/claudetest"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/mcpclient"
	"github.com/gemkit/gemkit/internal/npmregistrytest"
)

// Three published Gemini CLI extensions whose servers start with
// `npx -y`, their manifests as published, unchanged. gemkit pins each
// server's package when the extension is switched, from a registry the
// test runs on loopback (internal/npmregistrytest) that serves the
// packages interop/published holds (scripts/setup-and-test installs
// them, pinned there at the newest versions when pinned, since none of
// the three manifests names a version): no outside registry is asked.
// Their code is not in this repository: only the manifests' facts.

// context7Manifest is upstash/context7's gemini-extension.json at tag
// @upstash/context7-mcp@4.0.3, commit
// 05796c74259a768f45a3f508ae8583df1467a6dd (unchanged since 34704b6;
// the same at the repository's head, c324828). Gemini CLI 0.61 passes
// "${CONTEXT7_API_KEY}" to the server as it is written: its
// loadExtensionConfig substitutes only extensionPath, workspacePath, /
// and pathSeparator in a manifest's mcpServers, and its MCP client
// expands variables in env, not in args (McpClient's stdio transport,
// packages/core/src/tools/mcp-client.ts); gemkit does the same.
const context7Manifest = `{
  "name": "context7",
  "description": "Up-to-date code docs for any prompt",
  "version": "1.0.0",
  "settings": [
    {
      "name": "API Key",
      "description": "Context7 API key. Create new key at https://context7.com/dashboard.",
      "envVar": "CONTEXT7_API_KEY"
    }
  ],
  "mcpServers": {
    "context7": {
      "command": "npx",
      "args": ["-y", "@upstash/context7-mcp", "--api-key", "${CONTEXT7_API_KEY}"]
    }
  }
}
`

// postmanManifest is postmanlabs/postman-mcp-server's
// gemini-extension.json at tag v2.8.7, commit
// 15edf817a28394a8fb07f3be2672519fbd6cf072 (added in 6f51e13, removed
// from the repository in cdf6dfd).
const postmanManifest = `{
    "name": "postman-api-mcp",
    "version": "1.0.0",
    "mcpServers": {
        "postman-api-mcp": {
            "command": "npx",
            "args": [
                "-y",
                "@postman/postman-mcp-server"
            ]
        }
    },
    "settings": [
        {
            "name": "Postman API Key",
            "description": "Postman API Key",
            "envVar": "POSTMAN_API_KEY"
        }
    ]
}`

// cloudRunManifest is GoogleCloudPlatform/cloud-run-mcp's
// gemini-extension.json at tag v1.10.0, commit
// 6ce7cbb4100032a53ef4d92701b4e8b58a844729 (unchanged since 02ef608).
const cloudRunManifest = `{
  "name": "cloud-run",
  "version": "1.0.0",
  "mcpServers": {
    "cloud-run": {
      "command": "npx",
      "args": ["-y", "@google-cloud/cloud-run-mcp"]
    }
  },
  "settings": [
    {
      "name": "Project ID",
      "description": "Google Cloud project ID to use for Cloud Run operations.",
      "envVar": "GOOGLE_CLOUD_PROJECT"
    },
    {
      "name": "Region",
      "description": "Google Cloud region where Cloud Run services will be managed.",
      "envVar": "GOOGLE_CLOUD_REGION"
    }
  ],
  "contextFileName": "gemini-extension/GEMINI.md"
}
`

// npxExtension is one of the published extensions, with what the test
// gives it and the call it makes.
type npxExtension struct {
	name, manifest, server string
	// pkg is the package its server runs, version the one pinned (the
	// newest interop/published holds).
	pkg, version string
	// files are what the test writes beside the manifest (the context
	// file the manifest names); env is the settings a person gives
	// (gemini extensions config writes them to the entry's .env, where
	// Gemini CLI 0.61 reads a linked extension's).
	files map[string]string
	env   string
	// tool and args are the call; answer a phrase of the server's answer
	// offline, which bare gives too (wantBare checks it of each).
	tool   string
	args   map[string]any
	answer string
	// bareArgs and bareEnv are what the server gets from the manifest,
	// for a bare run of it.
	bareArgs []string
	bareEnv  []string
}

// cloudRunContext is the line of the context file the cloud-run manifest
// names; the test writes its own.
const cloudRunContext = "Cloud Run services are listed with list_services."

var npxExtensions = []npxExtension{
	{name: "context7", manifest: context7Manifest, server: "context7", pkg: "@upstash/context7-mcp", version: "4.1.1",
		env:  "CONTEXT7_API_KEY=test-key-3312\n",
		tool: "resolve-library-id", args: map[string]any{"libraryName": "react", "query": "How do I use hooks?"},
		// Offline, its client's fetch of context7.com fails; the
		// answer says so (not as an error).
		answer: "Error searching libraries: TypeError: fetch failed", bareArgs: []string{"--api-key", "${CONTEXT7_API_KEY}"}},
	{name: "postman-api-mcp", manifest: postmanManifest, server: "postman-api-mcp", pkg: "@postman/postman-mcp-server", version: "2.13.0",
		env: "POSTMAN_API_KEY=test-key-3312\n",
		// getEnabledTools answers from the server itself, offline.
		tool: "getEnabledTools", args: map[string]any{}, answer: "currentServerTools", bareEnv: []string{"POSTMAN_API_KEY=test-key-3312"}},
	{name: "cloud-run", manifest: cloudRunManifest, server: "cloud-run", pkg: "@google-cloud/cloud-run-mcp", version: "1.10.0",
		files: map[string]string{"gemini-extension/GEMINI.md": "# Cloud Run\n\n" + cloudRunContext + "\n"},
		// Without the person's Google Cloud login, its tools say so.
		tool: "list_services", args: map[string]any{"project": "my-project"}, answer: "GCP credentials are not available"},
}

// npxProc names the three servers in a command line: each runs from its
// pinned tree.
const npxProc = "/.local/share/gemkit/packages/"

// publishedTarballs keeps the tarballs packed from interop/published
// across the tests of this binary.
var publishedTarballs npmregistrytest.Cache

// publishedRegistry is a loopback npm registry serving what
// interop/published holds, and f's home's npm configuration naming it
// (with no retries: a failure is told at once).
func publishedRegistry(t *testing.T, f *fixture) *npmregistrytest.Registry {
	t.Helper()
	gemkittest.Interop(t) // node and npm
	dir := filepath.Dir(publishedModules(t, "@upstash/context7-mcp"))
	r := npmregistrytest.New(t, &publishedTarballs)
	r.AddInstalled(dir)
	writeFile(t, filepath.Join(f.home, ".npmrc"), "registry="+r.URL+"\nfetch-retries=0\n", 0o600)
	return r
}

// linkNPX links the published extensions and switches each to gemkit,
// which pins its server's package from r; it checks what the switch
// says. The switches run side by side, as a person's in two terminals
// may: each holds only its own extension's lock of its trees
// (pkgrun.Lock) while npm installs in the sandbox, and the records they
// share (the choices, the consent, Gemini CLI's mcp.excluded) are each
// changed under the store's lock, so none is lost (the subtests run all
// three servers, and Gemini CLI starts none of them). One after the
// other, the three installs were most of the test's time.
func linkNPX(t *testing.T, f *fixture, r *npmregistrytest.Registry, exts []npxExtension) {
	t.Helper()
	for _, e := range exts {
		f.link(t, e.name, e.manifest, e.files)
		if e.env != "" {
			writeFile(t, filepath.Join(f.home, ".gemini", "extensions", e.name, ".env"), e.env, 0o600)
		}
	}
	type switched struct {
		out string
		err error
	}
	res := make([]switched, len(exts))
	var wg sync.WaitGroup
	for i, e := range exts {
		wg.Go(func() {
			out, err := f.gemkit("extensions", "sandbox", e.name)
			res[i] = switched{out, err}
		})
	}
	wg.Wait()
	for i, e := range exts {
		out, err := res[i].out, res[i].err
		if err != nil {
			t.Fatalf("gemkit extensions sandbox %s: %v\n%s", e.name, err, out)
		}
		for _, want := range []string{
			fmt.Sprintf("Installing %s (the newest) for %s from %s in gemkit's sandbox (no network but the registry, install scripts off):", e.pkg, e.server, r.URL),
			fmt.Sprintf("pinned: it runs %s %s (the newest when pinned;", e.pkg, e.version),
			"Gemini CLI, with the same manifest, runs the runner itself at each start",
			"Switched: Gemini CLI no longer starts " + e.server,
		} {
			if !strings.Contains(out, want) {
				t.Errorf("switching %s does not say %q:\n%s", e.name, want, out)
			}
		}
	}
}

// bare holds each server's tools and its answer to the call, run bare:
// the same package, from interop/published's tree, outside gemkit, in a
// network namespace of its own with nothing in it (this machine
// offline, as gemkit's sandbox gives it no network), with the
// manifest's arguments and settings. Worked out once per test binary,
// the three servers side by side.
var bare struct {
	once    sync.Once
	answers map[string]bareAnswer
	err     error
}

func bareAnswers(root string) (map[string]bareAnswer, error) {
	bare.once.Do(func() {
		answers := make([]bareAnswer, len(npxExtensions))
		errs := make([]error, len(npxExtensions))
		var wg sync.WaitGroup
		for i, e := range npxExtensions {
			wg.Go(func() {
				answers[i], errs[i] = runBare(root, e)
				if errs[i] != nil {
					errs[i] = fmt.Errorf("%s bare: %w", e.name, errs[i])
				}
			})
		}
		wg.Wait()
		bare.answers = map[string]bareAnswer{}
		for i, e := range npxExtensions {
			bare.answers[e.name] = answers[i]
		}
		bare.err = errors.Join(errs...)
	})
	return bare.answers, bare.err
}

type bareAnswer struct {
	tools []string
	text  string
}

func runBare(root string, e npxExtension) (bareAnswer, error) {
	dir := filepath.Join(root, "interop", "published", "node_modules", filepath.FromSlash(e.pkg))
	var m struct {
		Bin json.RawMessage `json:"bin"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return bareAnswer{}, err
	}
	json.Unmarshal(b, &m)
	var bin string
	if json.Unmarshal(m.Bin, &bin) != nil {
		var bins map[string]string
		json.Unmarshal(m.Bin, &bins)
		for _, v := range bins {
			bin = v
		}
	}
	unshare := []string{"unshare", "-n"}
	if os.Getuid() != 0 {
		unshare = []string{"unshare", "-rn"}
	}
	home, err := os.MkdirTemp("", "gemkit-bare-")
	if err != nil {
		return bareAnswer{}, err
	}
	defer os.RemoveAll(home)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, unshare[0], append(append(unshare[1:], "node", filepath.Join(dir, bin)), e.bareArgs...)...)
	cmd.Dir = home
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8"}, e.bareEnv...)
	in, _ := cmd.StdinPipe()
	outp, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return bareAnswer{}, err
	}
	defer func() { in.Close(); cmd.Process.Kill(); cmd.Wait() }()
	c, err := mcpclient.Stdio(ctx, outp, in, mcpclient.Options{Name: "bare", Version: "1"})
	if err != nil {
		return bareAnswer{}, fmt.Errorf("%w; stderr: %s", err, stderr.String())
	}
	defer c.Close()
	tools, err := c.ListTools(ctx)
	if err != nil {
		return bareAnswer{}, err
	}
	var a bareAnswer
	for _, tl := range tools {
		a.tools = append(a.tools, tl.Name)
	}
	sort.Strings(a.tools)
	res, err := c.CallTool(ctx, e.tool, e.args)
	if err != nil {
		return bareAnswer{}, err
	}
	a.text = res.Text("\n")
	return a, nil
}

// wantBare fails unless bare answered the test's call with the phrase
// the tests look for: what the servers say offline is theirs, not the
// test's.
func wantBare(t *testing.T) map[string]bareAnswer {
	t.Helper()
	gemkittest.Interop(t) // node
	publishedModules(t, "@upstash/context7-mcp")
	answers, err := bareAnswers(gemkittest.RepoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range npxExtensions {
		if !strings.Contains(answers[e.name].text, e.answer) {
			t.Fatalf("%s run bare answered %s with %q, not %q", e.name, e.tool, answers[e.name].text, e.answer)
		}
	}
	return answers
}

// wantAsBare checks, through a gemkit mcp of f's, that the switched
// published extensions' servers, run from their pinned trees with no
// network, serve the tools bare lists and answer the call as bare
// answers it.
func wantAsBare(t *testing.T, f *fixture, bare map[string]bareAnswer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Ended here, with its servers, not at the test's end: the next
	// subtest counts the server processes its own runs start.
	run, tools, end := f.startListed(t, ctx)
	defer end()
	for _, e := range npxExtensions {
		var served []string
		for _, tl := range tools {
			if n, ok := strings.CutPrefix(tl.Name, e.name+"_"); ok {
				served = append(served, n)
			}
		}
		sort.Strings(served)
		if !slices.Equal(served, bare[e.name].tools) {
			t.Errorf("%s: gemkit serves %q, bare lists %q\n%s", e.name, served, bare[e.name].tools, run.stderr.String())
		}
		res, err := run.c.CallTool(ctx, e.name+"_"+e.tool, e.args)
		if err != nil {
			t.Fatalf("%s: %v\n%s", e.name, err, run.stderr.String())
		}
		// gemkit adds a line when its sandbox refused the server a host
		// during the call (context7.com, Google's metadata server).
		if got := res.Text("\n"); !strings.HasPrefix(got, bare[e.name].text) {
			t.Errorf("%s answered %q\nbare answered %q", e.name, got, bare[e.name].text)
		}
	}
}

// TestPublishedNPX: the three published extensions switched to gemkit,
// which installed each server's package from the loopback registry at
// the switch (linkNPX checks what the switch says), then two real agents
// in turn on that one switched home, each through `gemkit mcp`, against
// a scripted model. The agents share the switch, as a person's agents
// do, rather than each install the same three trees again (npm's
// installs in the sandbox were most of the CPU these runs took): one
// after the other, since each checks the server processes its own run
// started.
//
// ClaudeCode: the real Claude Code calls a tool of each; each answer,
// bare's, reaches the model, and each server runs once, in the sandbox,
// from its pinned tree.
//
// GeminiCLI: the real Gemini CLI 0.61, whose model calls a tool of each
// through gemkit mcp; each answer, bare's, reaches it; Gemini CLI starts
// none of its own copies (it would run npx), the run's three server
// processes are gemkit's, inside the sandbox, each from its pinned tree.
// Then, through gemkit mcp, each server lists the tools bare lists and
// answers as bare does (wantAsBare).
//
// Neither run asks the registry anything.
func TestPublishedNPX(t *testing.T) {
	t.Parallel()
	gemkittest.SkipShort(t, "the real Claude Code and Gemini CLI 0.61 with three published servers installed from a loopback registry")
	// The servers run bare while the switches install them: neither
	// waits on the other.
	gemkittest.Interop(t) // node
	publishedModules(t, "@upstash/context7-mcp")
	root := gemkittest.RepoRoot(t)
	bareRun := make(chan struct{})
	go func() { bareAnswers(root); close(bareRun) }()
	t.Cleanup(func() { <-bareRun })
	f := newFixture(t)
	r := publishedRegistry(t, f)
	linkNPX(t, f, r, npxExtensions)
	<-bareRun
	bare := wantBare(t)
	// notAsked fails t when the registry was asked anything during run.
	notAsked := func(t *testing.T, run func()) {
		t.Helper()
		asked := len(r.Requests())
		run()
		if n := len(r.Requests()); n != asked {
			t.Errorf("the run asked the registry %d times: %q", n-asked, r.Requests()[asked:])
		}
	}
	t.Run("ClaudeCode", func(t *testing.T) {
		claude := claudetest.Binary(t)
		notAsked(t, func() {
			var calls []claudeCall
			for _, e := range npxExtensions {
				calls = append(calls, claudeCall{"mcp__gemkit__" + e.name + "_" + e.tool, e.args, e.answer})
			}
			allSandboxed(t, runSwitchedClaude(t, f, claude, npxProc, calls...), 3)
		})
	})
	t.Run("GeminiCLI", func(t *testing.T) {
		notAsked(t, func() {
			var script []fakemodel.Reply
			for _, e := range npxExtensions {
				script = append(script, fakemodel.Call("mcp_gemkit_"+e.name+"_"+e.tool, e.args))
			}
			script = append(script, fakemodel.Text("All done."))
			run := runSwitchedGemini(t, f, npxProc, "Use the published servers.", script...)
			for i, e := range npxExtensions {
				name := "mcp_gemkit_" + e.name + "_" + e.tool
				run.wantOffered(t, name, "mcp_"+e.server+"_")
				run.wantAnswer(t, i+1, name, e.answer)
			}
			run.wantContext(t, cloudRunContext)
			allSandboxed(t, run.seen, 3)
			wantAsBare(t, f, bare)
		})
	})
	t.Run("NewVersion", func(t *testing.T) { testNewVersion(t, f, r) })
}

// newVersionMarker is what the test's new version of context7's server
// says in its tool's description.
const newVersionMarker = "(new-version-5521)"

// testNewVersion: a new version of context7's server published to the
// registry is not run: gemkit mcp, started afresh, runs the pinned one,
// from its tree, and asks the registry nothing; an update without
// consent shows the new version and changes nothing; with consent, the
// next start runs the new one, from a new tree. It runs on
// TestPublishedNPX's home, where the switch installed context7 (and the
// two others, which each start of gemkit mcp runs beside it), rather
// than install it again in a home of its own.
func testNewVersion(t *testing.T, f *fixture, r *npmregistrytest.Registry) {
	c7 := npxExtensions[0]
	pinned := func() extension.Pin {
		t.Helper()
		c, err := extension.OpenStore(f.home).ServerChoice(c7.name)
		if err != nil {
			t.Fatal(err)
		}
		return c.Packages[c7.server]
	}
	old := pinned()
	r.PublishDir(filepath.Join(filepath.Dir(publishedModules(t, c7.pkg)), "node_modules", filepath.FromSlash(c7.pkg)), "4.1.2", func(name string, b []byte) []byte {
		if strings.HasPrefix(name, "dist/") && strings.HasSuffix(name, ".js") {
			return []byte(strings.ReplaceAll(string(b), "Resolves a package/product name to a Context7-compatible library ID", "Resolves a package/product name to a Context7-compatible library ID "+newVersionMarker))
		}
		return b
	})
	// description starts gemkit mcp afresh, lists and calls context7's
	// tool, and returns the tool's description and the command line of
	// the server process that answered.
	description := func() (string, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		stop := watchServers(f, npxProc)
		run := f.startMCP(t, ctx, mcpclient.Options{Name: "test", Version: "1"})
		defer func() { run.c.Close(); run.stdin.Close(); run.cmd.Wait() }()
		tools, err := run.c.ListTools(ctx)
		if err != nil {
			t.Fatalf("tools/list: %v\n%s", err, run.stderr.String())
		}
		if _, err := run.c.CallTool(ctx, c7.name+"_"+c7.tool, c7.args); err != nil {
			t.Fatal(err)
		}
		// The other two servers run from trees of their own names.
		var c7Seen []string
		for pid := range stop() {
			b, _ := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
			if cmdline := strings.ReplaceAll(string(b), "\x00", " "); strings.Contains(cmdline, "/"+c7.server+"@") {
				c7Seen = append(c7Seen, cmdline)
			}
		}
		if len(c7Seen) != 1 {
			t.Fatalf("%d server processes of %s, want 1: %q", len(c7Seen), c7.server, c7Seen)
		}
		cmdline := c7Seen[0]
		for _, tl := range tools {
			if tl.Name == c7.name+"_"+c7.tool {
				return tl.Description, cmdline
			}
		}
		t.Fatalf("no %s_%s among %d tools\n%s", c7.name, c7.tool, len(tools), run.stderr.String())
		return "", ""
	}
	asked := len(r.Requests())
	if d, cmdline := description(); strings.Contains(d, newVersionMarker) || !strings.Contains(cmdline, old.Tree) {
		t.Errorf("before update and consent, the server runs %q with the description %q; want the pinned tree %s", cmdline, d, old.Tree)
	}
	if n := len(r.Requests()); n != asked {
		t.Errorf("gemkit mcp asked the registry: %q", r.Requests()[asked:])
	}
	out, err := f.gemkit("extensions", "update", c7.name)
	if err == nil || !strings.Contains(out, "changed since you agreed: @upstash/context7-mcp 4.1.1 → 4.1.2") {
		t.Errorf("update without consent: %v\n%s", err, out)
	}
	if p := pinned(); p.Version != "4.1.1" || p.Tree != old.Tree {
		t.Errorf("the refused update changed the pin: %+v", p)
	}
	if d, _ := description(); strings.Contains(d, newVersionMarker) {
		t.Errorf("the new version runs after an update without consent: %q", d)
	}
	if out, err := f.gemkit("extensions", "update", c7.name, "--consent"); err != nil || !strings.Contains(out, "Updated context7's servers' packages: context7 @upstash/context7-mcp 4.1.1 → 4.1.2") {
		t.Fatalf("update --consent: %v\n%s", err, out)
	}
	now := pinned()
	if now.Version != "4.1.2" || now.Tree == old.Tree {
		t.Fatalf("after update --consent: %+v", now)
	}
	if d, cmdline := description(); !strings.Contains(d, newVersionMarker) || !strings.Contains(cmdline, now.Tree) {
		t.Errorf("after the update, the server runs %q with the description %q; want the new tree %s", cmdline, d, now.Tree)
	}
	if _, err := os.Stat(old.Tree); err == nil {
		t.Error("the old tree is still there after the update")
	}
}
