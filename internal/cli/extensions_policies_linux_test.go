package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// policyHome is a home shared by the real Gemini CLI 0.61, run headless
// against a scripted model on loopback, and gemkit; user, when set,
// runs every process of theirs as another user (setpriv).
type policyHome struct {
	t                    *testing.T
	root, home, ws, bin  string
	node, gemini, gemkit string
	user                 []string
}

func newPolicyHome(t *testing.T, unprivileged bool) *policyHome {
	node, interop := gemkittest.Interop(t, "@google/gemini-cli/package.json")
	root := t.TempDir()
	h := &policyHome{t: t, root: root, home: filepath.Join(root, "home"), ws: filepath.Join(root, "work"), bin: filepath.Join(root, "bin"),
		node: node, gemini: filepath.Join(interop, "node_modules", "@google", "gemini-cli", "bundle", "gemini.js")}
	writeFiles(t, filepath.Join(h.home, ".gemini"), map[string]string{"settings.json": `{"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
		"general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
		"privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false}}`})
	writeFiles(t, h.ws, map[string]string{"notes.txt": "the notes of the workspace\n"})
	b, err := os.ReadFile(gemkittest.Gemkit(t))
	must(t, err)
	must(t, os.MkdirAll(h.bin, 0o755))
	h.gemkit = filepath.Join(h.bin, "gemkit")
	must(t, os.WriteFile(h.gemkit, b, 0o755))
	if unprivileged {
		setpriv := gemkittest.Tool(t, "setpriv", "util-linux")
		must(t, os.Chmod(filepath.Dir(root), 0o755))
		must(t, os.Chmod(root, 0o755))
		h.user = []string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"}
	}
	return h
}

// own gives the home's files to the user the processes run as.
func (h *policyHome) own() {
	if h.user == nil {
		return
	}
	must(h.t, filepath.WalkDir(h.root, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 65534, 65534)
	}))
}

func (h *policyHome) env() []string {
	return []string{"HOME=" + h.home, "GEMINI_CLI_HOME=" + h.home, "PATH=" + h.bin + ":" + os.Getenv("PATH"),
		"NO_COLOR=1", "TERM=dumb", "CI=1", "GEMINI_CLI_NO_RELAUNCH=true"}
}

func (h *policyHome) command(ctx context.Context, env []string, argv ...string) *exec.Cmd {
	argv = append(append([]string(nil), h.user...), argv...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdin = h.ws, append(h.env(), env...), strings.NewReader("")
	return cmd
}

// kit runs gemkit extensions args and returns its output and exit code.
func (h *policyHome) kit(args ...string) (string, int) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := h.command(ctx, nil, append([]string{h.gemkit, "extensions"}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	} else if err != nil {
		h.t.Fatalf("gemkit %v: %v", args, err)
	}
	return out.String(), 0
}

func (h *policyHome) mustKit(args ...string) string {
	h.t.Helper()
	out, code := h.kit(args...)
	if code != 0 {
		h.t.Fatalf("gemkit extensions %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// session runs `gemini -p` in the workspace against a model that calls
// read_file on notes.txt, then glob, and returns what Gemini CLI
// answered the model for each call.
func (h *policyHome) session() (readFile, glob string) {
	h.t.Helper()
	model, err := fakemodel.Start(
		fakemodel.Call("read_file", map[string]any{"file_path": "notes.txt"}),
		fakemodel.Call("glob", map[string]any{"pattern": "*.txt"}),
		fakemodel.Text("Done."))
	must(h.t, err)
	defer model.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := h.command(ctx, []string{"GOOGLE_GEMINI_BASE_URL=" + model.URL, "GEMINI_API_KEY=test-key"}, h.node, h.gemini, "-p", "Read the notes, then list the text files.")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		h.t.Fatalf("gemini -p: %v\n%s", err, out.String())
	}
	turns := model.Turns()
	if len(turns) != 3 {
		h.t.Fatalf("%d model turns, want 3\n%s", len(turns), out.String())
	}
	response := func(i int) string {
		g, err := turns[i].Generate()
		must(h.t, err)
		rs := g.FunctionResponses()
		if len(rs) == 0 {
			return ""
		}
		return fmt.Sprint(rs[len(rs)-1])
	}
	return response(1), response(2)
}

// guardedPolicies are the policies of the extension guarded: a rule
// that denies glob, and an external checker on read_file, whose name is
// also a program on the PATH and in the workspace that would leave a
// mark if anything started it.
const guardedPolicies = `
[[rule]]
toolName = "glob"
decision = "deny"
priority = 10
denyMessage = "guarded lists nothing"

[[safety_checker]]
toolName = "read_file"
priority = 1
checker = { type = "external", name = "lint-guard" }
`

// TestPolicyCheckerHeld: an extension's policies/*.toml, as the real
// Gemini CLI 0.61 applies them, are what gemkit says. Its rule denies
// glob (the model is offered no glob then); its external safety checker on read_file starts no program (a
// program of that name on the PATH and in the workspace leaves no mark)
// and read_file is denied instead, as describe says. Switched to gemkit,
// an extension that brings an external checker is held in Gemini CLI,
// saying why: its rule and checker no longer apply (nor does anything
// of it run); once its author drops the checker and the person agrees
// again, the hold ends and the rule applies again. As root and as uid
// 65534.
func TestPolicyCheckerHeld(t *testing.T) {
	gemkittest.AsRootAndUnprivileged(t, policyCheckerHeld)
}

func policyCheckerHeld(t *testing.T, unprivileged bool) {
	h := newPolicyHome(t, unprivileged)
	marks := filepath.Join(h.root, "marks")
	must(t, os.MkdirAll(marks, 0o777))
	mark := "#!/bin/sh\necho started > " + filepath.Join(marks, "lint-guard") + "\n"
	writeFiles(t, h.bin, map[string]string{"lint-guard": mark})
	writeFiles(t, h.ws, map[string]string{"lint-guard": mark})
	must(t, os.Chmod(filepath.Join(h.bin, "lint-guard"), 0o755))
	must(t, os.Chmod(filepath.Join(h.ws, "lint-guard"), 0o755))
	src := filepath.Join(h.root, "src", "guarded")
	writeFiles(t, src, map[string]string{
		"gemini-extension.json": notesManifest("guarded", marks, ""),
		"marker.mjs":            markerServer,
		"policies/guard.toml":   guardedPolicies,
	})
	h.own()
	h.mustKit("link", src, "--consent")
	started := func() bool { _, err := os.Stat(filepath.Join(marks, "lint-guard")); return err == nil }

	out := h.mustKit("describe", "guarded")
	for _, want := range []string{
		`denies calls of glob (with no pattern, Gemini CLI leaves the tool out of those it offers the model), telling the model "guarded lists nothing" [priority 10; policies/guard.toml: rule 1]`,
		"names an external safety checker, lint-guard, a program for Gemini CLI to start on calls of read_file: Gemini CLI 0.61 starts none (it knows no external checker by name) and denies those calls instead",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out)
		}
	}
	// What describe says is what Gemini CLI does: the checker denies
	// read_file and starts nothing; the rule denies glob.
	read, glob := h.session()
	if !strings.Contains(read, "Tool execution denied by policy.") || !strings.Contains(glob, `Tool "glob" not found`) {
		t.Errorf("not switched, Gemini CLI answered read_file %s and glob %s", read, glob)
	}
	if started() {
		t.Fatal("a program named like the external checker was started")
	}

	// Switched, it is held: Gemini CLI runs none of it.
	out, _ = h.kit("sandbox", "guarded")
	for _, want := range []string{
		"guarded is switched to gemkit, but its policies/guard.toml names an external safety checker, lint-guard",
		"gemkit holds it in Gemini CLI (disabled in its extension enablement)",
		"Not switched whole: gemkit holds guarded in Gemini CLI",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the switch does not say %q:\n%s", want, out)
		}
	}
	st := extension.OpenStore(h.home)
	if hs, _ := st.Holds(); hs["guarded"].Fix == "" {
		t.Fatalf("not held for its policies: %+v", hs)
	}
	read, glob = h.session()
	if !strings.Contains(read, "the notes of the workspace") || !strings.Contains(glob, "notes.txt") {
		t.Errorf("held, Gemini CLI answered read_file %s and glob %s", read, glob)
	}
	if started() {
		t.Fatal("a program named like the external checker was started")
	}
	if out, _ := h.kit("doctor"); !strings.Contains(out, "held in Gemini CLI since") || !strings.Contains(out, "its policies name an external safety checker, lint-guard") {
		t.Errorf("doctor does not say the hold and the checker:\n%s", out)
	}
	// Agreeing again does not end it while the checker is there.
	if out := h.mustKit("consent", "guarded", "--grant"); !strings.Contains(out, "guarded is switched to gemkit, but its policies/guard.toml names an external safety checker") {
		t.Errorf("consent --grant does not say the hold stays:\n%s", out)
	}
	if hs, _ := st.Holds(); hs["guarded"].Fix == "" {
		t.Fatalf("consent --grant ended the hold: %+v", hs)
	}

	// Its author drops the checker; agreeing again ends the hold, and
	// the rule applies again.
	policies := strings.SplitN(guardedPolicies, "[[safety_checker]]", 2)[0]
	must(t, os.WriteFile(filepath.Join(src, "policies", "guard.toml"), []byte(policies), 0o644))
	h.own()
	if out := h.mustKit("consent", "guarded", "--grant"); !strings.Contains(out, "Gemini CLI runs guarded again") {
		t.Errorf("consent --grant does not say the release:\n%s", out)
	}
	read, glob = h.session()
	if !strings.Contains(read, "the notes of the workspace") || !strings.Contains(glob, `Tool "glob" not found`) {
		t.Errorf("released, Gemini CLI answered read_file %s and glob %s", read, glob)
	}
}

// headless runs `gemini -p` against a model that calls glob once, and
// returns Gemini CLI's output and what it answered the model for glob
// ("" when the session ended before).
func (h *policyHome) headless() (output, glob string) {
	h.t.Helper()
	model, err := fakemodel.Start(fakemodel.Call("glob", map[string]any{"pattern": "*.txt"}), fakemodel.Text("Done."))
	must(h.t, err)
	defer model.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := h.command(ctx, []string{"GOOGLE_GEMINI_BASE_URL=" + model.URL, "GEMINI_API_KEY=test-key"}, h.node, h.gemini, "-p", "List the text files.")
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run() // a broken session fails: its output says why
	if turns := model.Turns(); len(turns) > 1 {
		if g, err := turns[1].Generate(); err == nil {
			glob = fmt.Sprint(g.FunctionResponses())
		}
	}
	return out.String(), glob
}

// TestPolicyFileBreaksGeminiCLI: a policy file that sets a key beneath a
// property every JavaScript object inherits ([hasOwnProperty] then
// call) breaks Gemini CLI 0.61's TOML library for the rest of the
// process: every policy file read after it fails to parse, the
// person's own among them, and the session fails. Gemini CLI reads it
// whether the extension is enabled or not (ExtensionManager reads every
// installed extension's policies), so holding it does not help: doctor
// says so as an error, and the switch, which holds it all the same,
// says the hold does not keep Gemini CLI from the file. As root and as
// uid 65534.
func TestPolicyFileBreaksGeminiCLI(t *testing.T) {
	gemkittest.AsRootAndUnprivileged(t, policyFileBreaks)
}

func policyFileBreaks(t *testing.T, unprivileged bool) {
	h := newPolicyHome(t, unprivileged)
	writeFiles(t, filepath.Join(h.home, ".gemini", "policies"), map[string]string{"mine.toml": "[[rule]]\ntoolName = \"glob\"\ndecision = \"deny\"\npriority = 10\n"})
	src := filepath.Join(h.root, "src", "breaker")
	writeFiles(t, src, map[string]string{
		"gemini-extension.json": notesManifest("breaker", filepath.Join(h.root, "marks"), ""),
		"marker.mjs":            markerServer,
		"policies/p.toml":       "[hasOwnProperty]\ncall = 1\n",
	})
	must(t, os.MkdirAll(filepath.Join(h.root, "marks"), 0o777))
	h.own()
	// The control: the person's own rule takes glob from the model.
	if out, glob := h.headless(); !strings.Contains(glob, `Tool "glob" not found`) {
		t.Fatalf("the control failed: glob answered %q\n%s", glob, out)
	}
	h.mustKit("link", src, "--consent")
	out, code := h.kit("doctor")
	if code != 1 || !strings.Contains(out, "error: breaker: policies/p.toml can break Gemini CLI, whether the extension is enabled, held or not") {
		t.Errorf("doctor (exit %d):\n%s", code, out)
	}
	out, _ = h.kit("sandbox", "breaker")
	if !strings.Contains(out, "the hold does not keep it from this file") {
		t.Errorf("the switch does not say the hold does not help:\n%s", out)
	}
	if hs, _ := extension.OpenStore(h.home).Holds(); hs["breaker"].Fix == "" {
		t.Errorf("not held: %+v", hs)
	}
	// Held, its file still breaks Gemini CLI's reading of the person's
	// policy, as doctor said.
	out, _ = h.headless()
	if !strings.Contains(out, "Policy file error in mine.toml") {
		t.Errorf("Gemini CLI read the person's policy file, with the extension held:\n%s", out)
	}
}
