package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// The agent reads and edits the workspace with the person's rights while
// tools it ran may have written there. These tests attack it by class:
// links of every form at the file or on the way to it, a folder swapped
// for a link while the person reviews, and protected files asked for by
// the model.

// swapReviewer accepts every proposal, after doing swap while the
// person "reviews"; it writes as a host that hands the write to a client
// when clientWrites is set.
type swapReviewer struct {
	swap         func()
	clientWrites bool
	written      map[string]string
	protectedOK  bool
	asked        []Proposal
}

func (r *swapReviewer) Review(_ context.Context, p Proposal) (Decision, error) {
	r.asked = append(r.asked, p)
	if r.swap != nil {
		r.swap()
	}
	return Decision{Accepted: true, Content: p.New, Where: "the test"}, nil
}

func (r *swapReviewer) ReviewsProtected() bool { return r.protectedOK }

func (r *swapReviewer) ReadTextFile(context.Context, string) (string, bool, error) {
	return "", false, nil
}

func (r *swapReviewer) WriteTextFile(_ context.Context, abs, content string) (bool, error) {
	if !r.clientWrites {
		return false, nil
	}
	if r.written == nil {
		r.written = map[string]string{}
	}
	r.written[abs] = content
	return true, os.WriteFile(abs, []byte(content), 0o644)
}

func (r *swapReviewer) AllowTool(context.Context, toolrun.ConsentRequest) (bool, error) {
	return false, nil
}

func edit(path, content string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"path": path, "content": content})
	return b
}

// TestEditSwappedDuringReview: the file is resolved before the review
// and written after it; a tool that swaps a folder on the way for a link
// (out of the workspace, into .git, by a relative or absolute link)
// while the person reviews does not get the accepted content written
// through the link, whether gemkit writes the disk or hands the write to
// an ACP client, nor through a link swapped in at the file's own name.
// Before, gemkit wrote the path it had resolved
// before the review, following whatever was there after it.
func TestEditSwappedDuringReview(t *testing.T) {
	for _, c := range []struct {
		name, path string
		target     func(ws, out string) string // what sub becomes
		atFile     bool
	}{
		{"folder-to-absolute-link", "sub/notes.txt", func(ws, out string) string { return out }, false},
		{"folder-to-relative-link", "sub/notes.txt", func(ws, out string) string { return "../outside" }, false},
		{"folder-to-git", "sub/config", func(ws, out string) string { return ".git" }, false},
		{"folder-to-proc", "sub/notes.txt", func(ws, out string) string { return "/proc/self/root" + out }, false},
		{"deep-folder-to-link", "sub/deeper/notes.txt", func(ws, out string) string { return out }, false},
		{"file-to-link", "sub/notes.txt", func(ws, out string) string { return filepath.Join(out, "notes.txt") }, true},
	} {
		for _, client := range []bool{false, true} {
			name := c.name
			if client {
				name += "/client-writes"
			}
			t.Run(name, func(t *testing.T) {
				base := t.TempDir()
				ws, out := filepath.Join(base, "ws"), filepath.Join(base, "outside")
				gemkittest.WriteFile(t, filepath.Join(ws, c.path), "old\n")
				gemkittest.WriteFile(t, filepath.Join(ws, ".git", "config"), "[core]\n")
				gemkittest.WriteFile(t, filepath.Join(out, "notes.txt"), "the person's own\n")
				gemkittest.WriteFile(t, filepath.Join(out, "deeper", "notes.txt"), "the person's own\n")
				gemkittest.WriteFile(t, filepath.Join(out, "config"), "the person's own\n")
				r := &swapReviewer{clientWrites: client, swap: func() {
					if c.atFile {
						p := filepath.Join(ws, c.path)
						os.Remove(p)
						if err := os.Symlink(c.target(ws, out), p); err != nil {
							t.Fatal(err)
						}
						return
					}
					sub := filepath.Join(ws, "sub")
					if err := os.Rename(sub, sub+".old"); err != nil {
						t.Fatal(err)
					}
					if err := os.Symlink(c.target(ws, out), sub); err != nil {
						t.Fatal(err)
					}
				}}
				a := &Agent{Workspace: ws, Host: r, Home: base}
				msg, err := a.proposeEdit(context.Background(), edit(c.path, "[core]\n\tfsmonitor = touch /tmp/pwned\n"))
				for _, f := range []string{"notes.txt", "deeper/notes.txt", "config"} {
					if b, _ := os.ReadFile(filepath.Join(out, f)); string(b) != "the person's own\n" {
						t.Fatalf("outside/%s was written through the swapped link: %q (%s, %v)", f, b, msg, err)
					}
				}
				if b, _ := os.ReadFile(filepath.Join(ws, ".git", "config")); string(b) != "[core]\n" {
					t.Fatalf(".git/config was written: %q", b)
				}
				if err == nil || !strings.Contains(err.Error(), "changed while the edit was reviewed") {
					t.Fatalf("proposeEdit = %q, %v: want a refusal saying the folder changed", msg, err)
				}
				if len(r.written) != 0 {
					t.Fatalf("the client was asked to write: %v", r.written)
				}
			})
		}
	}
}

// TestFilesThroughLinks: read_file, list_files and propose_edit resolve
// every name beneath the workspace: a link out of it, of any form, at
// the file or on the way, is refused; a link inside is followed to the
// real file, which the review names; nothing blocks on a FIFO.
func TestFilesThroughLinks(t *testing.T) {
	base := t.TempDir()
	ws, out := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	gemkittest.WriteFile(t, filepath.Join(out, "secret.txt"), "the-users-own-key\n")
	gemkittest.WriteFile(t, filepath.Join(ws, "real", "a.txt"), "inside\n")
	rel, _ := filepath.Rel(ws, out)
	links := map[string]string{
		"abs":       filepath.Join(out, "secret.txt"),
		"climb":     filepath.Join(rel, "secret.txt"),
		"dirlink":   out,
		"proc-root": "/proc/self/root" + filepath.Join(out, "secret.txt"),
		"proc-cwd":  "/proc/self/cwd/secret.txt",
		"proc-fd":   "/proc/self/fd/0",
		"chain":     "abs",
		"inside":    "real/a.txt",
		"insidedir": "real",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	a := &Agent{Workspace: ws, Host: &swapReviewer{}, Home: base}
	for _, p := range []string{"abs", "climb", "dirlink/secret.txt", "proc-root", "proc-cwd", "proc-fd", "chain", "../outside/secret.txt", filepath.Join(out, "secret.txt")} {
		got, err := a.readFile(json.RawMessage(`{"path": "` + p + `"}`))
		if err == nil || strings.Contains(got, "the-users-own-key") || !strings.Contains(err.Error(), "outside the workspace") {
			t.Errorf("read_file %s = %q, %v: want a refusal saying it is outside the workspace", p, got, err)
		}
		if _, err := a.proposeEdit(context.Background(), edit(p, "x")); err == nil || !strings.Contains(err.Error(), "outside the workspace") {
			t.Errorf("propose_edit %s: %v", p, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(out, "secret.txt")); string(b) != "the-users-own-key\n" {
		t.Fatalf("the secret was written: %q", b)
	}
	if got, err := a.readFile(json.RawMessage(`{"path": "inside"}`)); err != nil || got != "inside\n" {
		t.Errorf("read_file through an inside link: %q %v", got, err)
	}
	if _, err := a.listFiles(json.RawMessage(`{"path": "dirlink"}`)); err == nil {
		t.Error("list_files listed a folder outside through a link")
	}
	got, err := a.listFiles(json.RawMessage(`{"recursive": true}`))
	if err != nil || strings.Contains(got, "secret.txt") || !strings.Contains(got, "real/a.txt") {
		t.Errorf("recursive list_files: %q %v", got, err)
	}
	// An edit through an inside link is reviewed and written under the
	// file's real name.
	r := &swapReviewer{}
	a.Host = r
	if _, err := a.proposeEdit(context.Background(), edit("insidedir/a.txt", "new\n")); err != nil {
		t.Fatal(err)
	}
	if len(r.asked) != 1 || r.asked[0].Rel != "real/a.txt" || r.asked[0].Path != filepath.Join(ws, "real", "a.txt") {
		t.Errorf("reviewed %+v, want real/a.txt", r.asked)
	}
}

// TestProtectedEdits: the agent's own edits respect the protected paths
// (permission.GuardedPaths): --yes never writes .git/config (what a
// tool's output asks the model for: core.fsmonitor), .vscode, .gemini,
// .envrc, nor one reached through a link inside the workspace; a
// reviewer that asks about that very file in words may; naming the file
// (AllowProtected) makes it an ordinary edit. Before, --yes wrote them.
func TestProtectedEdits(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	gemkittest.WriteFile(t, filepath.Join(ws, "a.txt"), "a\n")
	gemkittest.Git(t, ws, "init", "--quiet")
	if err := os.Symlink(".git", filepath.Join(ws, "notes")); err != nil {
		t.Fatal(err)
	}
	config, _ := os.ReadFile(filepath.Join(ws, ".git", "config"))
	evil := "[core]\n\tfsmonitor = touch /tmp/pwned\n"
	for _, p := range []string{".git/config", "notes/config", ".git/hooks/pre-commit", ".vscode/tasks.json", ".gemini/settings.json", ".envrc", ".mcp.json"} {
		a := &Agent{Workspace: ws, Host: LocalHost{Reviewer: YesReviewer{}}, Home: base}
		_, err := a.proposeEdit(context.Background(), edit(p, evil))
		if err == nil || !strings.Contains(err.Error(), "protected") || !strings.Contains(err.Error(), "--allow-protected") {
			t.Errorf("--yes edit of %s: %v, want a refusal saying it is protected and how to allow it", p, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".git", "config")); string(b) != string(config) {
		t.Fatalf(".git/config was written: %q", b)
	}
	for _, p := range []string{".vscode", ".gemini", ".envrc", ".mcp.json", ".git/hooks/pre-commit"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
			t.Errorf("%s was created", p)
		}
	}
	// A reviewer that asks about the very file is given why.
	r := &swapReviewer{protectedOK: true}
	a := &Agent{Workspace: ws, Host: r, Home: base}
	if _, err := a.proposeEdit(context.Background(), edit("notes/config", evil)); err != nil {
		t.Fatal(err)
	}
	if len(r.asked) != 1 || r.asked[0].Rel != ".git/config" || !strings.Contains(r.asked[0].Protected, "hooks, core.fsmonitor") {
		t.Fatalf("the reviewer was asked %+v", r.asked)
	}
	// Named by the person, it is an ordinary edit, --yes included.
	a = &Agent{Workspace: ws, Host: LocalHost{Reviewer: YesReviewer{}}, Home: base, AllowProtected: []string{".vscode/tasks.json"}}
	if _, err := a.proposeEdit(context.Background(), edit(".vscode/tasks.json", "{}\n")); err != nil {
		t.Fatalf("an allowed protected file: %v", err)
	}
	// An ordinary file is untouched by all this.
	a = &Agent{Workspace: ws, Host: LocalHost{Reviewer: YesReviewer{}}, Home: base}
	if _, err := a.proposeEdit(context.Background(), edit("a.txt", "b\n")); err != nil {
		t.Fatal(err)
	}
}

// The same attacks hold for an unprivileged user (CI runs as root, to
// whom no mode refuses anything).
func TestUntrustedUnprivileged(t *testing.T) {
	sandboxtest.RerunUnprivileged(t, "^(TestEditSwappedDuringReview|TestFilesThroughLinks|TestProtectedEdits)$")
}
