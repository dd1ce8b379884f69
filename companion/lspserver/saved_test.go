package lspserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

const savedBefore = "package a\n\nfunc A() {}\n"

// savedSetup shows a proposal for a.go (or for a new file when before is
// nil) in an open buffer, with the given hold, and returns the client,
// the file's path and its URI. onDisk gets what the agent finds on disk
// when the answer reaches it.
func savedSetup(t *testing.T, hold time.Duration, before *string, proposal string, onDisk *diskSeen) (*client, string, string) {
	t.Helper()
	ws := t.TempDir()
	path := filepath.Join(ws, "a.go")
	if before != nil {
		if err := os.WriteFile(path, []byte(*before), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	c := start(t, Options{SaveHold: hold})
	c.ev.onAccepted = onDisk.read
	c.initialize(map[string]any{"processId": nil, "rootUri": uriOf(ws), "capabilities": eglotCaps})
	uri := uriOf(path)
	text := ""
	if before != nil {
		text = *before
	}
	c.notification("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uri, "languageId": "go", "version": 0, "text": text}})
	c.ev.wait(t, "focus "+path)
	open := make(chan error, 1)
	go func() { open <- c.srv.OpenDiff(context.Background(), path, proposal) }()
	c.answer(c.nextMethod("workspace/applyEdit"), map[string]any{"applied": true})
	if err := <-open; err != nil {
		t.Fatal(err)
	}
	return c, path, uri
}

// diskSeen records a file's content (or its absence) at one moment.
type diskSeen struct {
	mu     sync.Mutex
	text   string
	exists bool
}

func (d *diskSeen) read(path string) {
	b, err := os.ReadFile(path)
	d.mu.Lock()
	d.text, d.exists = string(b), err == nil
	d.mu.Unlock()
}

func (d *diskSeen) get() (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.text, d.exists
}

// save does what an editor does on save: it writes the file, then sends
// didSave with the text.
func save(t *testing.T, c *client, path, uri, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o640); err != nil {
		t.Fatal(err)
	}
	c.notification("textDocument/didSave", map[string]any{"textDocument": map[string]any{"uri": uri}, "text": text})
}

// TestSavedAgentSeesTheChange: a proposal accepted by saving reaches the
// agent with the file on disk as it was when the agent proposed it, so
// that the agent (Gemini CLI reads the file when the answer comes) sees
// the real change; the agent's own write then stays.
func TestSavedAgentSeesTheChange(t *testing.T) {
	before := savedBefore
	var seen diskSeen
	c, path, uri := savedSetup(t, time.Minute, &before, "package a\n\nfunc A() { x() }\n", &seen)
	saved := "package a\n\nfunc A() { x() } // mine\n"
	save(t, c, path, uri, saved)
	c.ev.wait(t, "accepted "+path+" "+js(saved))
	if text, ok := seen.get(); !ok || text != savedBefore {
		t.Fatalf("the agent found %q (exists %v) on disk, want the text it proposed against", text, ok)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("the file put back: %v %v; want mode 0640 kept", fi, err)
	}
	// The agent writes the accepted text; gemkit leaves it.
	if err := os.WriteFile(path, []byte(saved), 0o640); err != nil {
		t.Fatal(err)
	}
	// A sleep: what is checked is that gemkit leaves the file, which no event
	// can say.
	time.Sleep(200 * time.Millisecond)
	if b, _ := os.ReadFile(path); string(b) != saved {
		t.Fatalf("a.go holds %q after the agent's write", b)
	}
}

// TestSavedNobodyWrites: when no agent writes the file within the hold,
// the bytes the editor saved go back to disk: nothing saved is lost.
func TestSavedNobodyWrites(t *testing.T) {
	before := savedBefore
	var seen diskSeen
	c, path, uri := savedSetup(t, 300*time.Millisecond, &before, "package b\n", &seen)
	save(t, c, path, uri, "package b // mine\n")
	c.ev.wait(t, "accepted "+path+" "+js("package b // mine\n"))
	if text, _ := seen.get(); text != savedBefore {
		t.Fatalf("the agent found %q on disk", text)
	}
	waitFile(t, path, "package b // mine\n")
	// Logged once the file is written back, with no event to wait on.
	if !gemkittest.Poll(waitTimeout, 10*time.Millisecond, func() bool {
		return strings.Contains(c.logText(), "no agent wrote the proposal accepted by saving")
	}) {
		t.Fatalf("no warning logged:\n%s", c.logText())
	}
}

// TestSavedServerStops: the server stopping before the hold ends puts
// the saved bytes back before Run returns.
func TestSavedServerStops(t *testing.T) {
	before := savedBefore
	var seen diskSeen
	c, path, uri := savedSetup(t, time.Hour, &before, "package c\n", &seen)
	save(t, c, path, uri, "package c\n")
	c.ev.wait(t, "accepted "+path+" "+js("package c\n"))
	c.in.Close()
	select {
	case err := <-c.done:
		c.done <- err // for the cleanup's wait
	case <-time.After(waitTimeout):
		t.Fatal("the server did not stop")
	}
	if b, _ := os.ReadFile(path); string(b) != "package c\n" {
		t.Fatalf("a.go holds %q once the server stopped, want the saved text", b)
	}
}

// TestSavedNewFile: a new file saved from its proposal is absent again
// when the agent hears of it (it creates the file itself), and comes back
// if nobody does.
func TestSavedNewFile(t *testing.T) {
	var seen diskSeen
	c, path, uri := savedSetup(t, 300*time.Millisecond, nil, "package n\n", &seen)
	save(t, c, path, uri, "package n\n")
	c.ev.wait(t, "accepted "+path+" "+js("package n\n"))
	if text, ok := seen.get(); ok {
		t.Fatalf("the agent found the new file on disk (%q): it would not create it", text)
	}
	waitFile(t, path, "package n\n")
}

// TestSavedUnchanged: a proposal saved with the file's own text leaves
// the file alone (the agent sees no change, which is true).
func TestSavedUnchanged(t *testing.T) {
	before := savedBefore
	var seen diskSeen
	c, path, uri := savedSetup(t, time.Minute, &before, "package d\n", &seen)
	fi, _ := os.Stat(path)
	save(t, c, path, uri, savedBefore)
	c.ev.wait(t, "accepted "+path+" "+js(savedBefore))
	after, err := os.Stat(path)
	if err != nil || !os.SameFile(fi, after) {
		t.Fatalf("the file was replaced (%v)", err)
	}
}

// TestSavedSymlink: a file reached through a symbolic link is put back
// through it: the link stays a link.
func TestSavedSymlink(t *testing.T) {
	ws := t.TempDir()
	real := filepath.Join(ws, "real.go")
	if err := os.WriteFile(real, []byte(savedBefore), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(ws, "a.go")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	var seen diskSeen
	c := start(t, Options{SaveHold: time.Minute})
	c.ev.onAccepted = seen.read
	c.initialize(map[string]any{"processId": nil, "rootUri": uriOf(ws), "capabilities": eglotCaps})
	uri := uriOf(link)
	c.notification("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uri, "languageId": "go", "version": 0, "text": savedBefore}})
	c.ev.wait(t, "focus "+link)
	open := make(chan error, 1)
	go func() { open <- c.srv.OpenDiff(context.Background(), link, "package l\n") }()
	c.answer(c.nextMethod("workspace/applyEdit"), map[string]any{"applied": true})
	if err := <-open; err != nil {
		t.Fatal(err)
	}
	save(t, c, link, uri, "package l\n")
	c.ev.wait(t, "accepted "+link+" "+js("package l\n"))
	if text, _ := seen.get(); text != savedBefore {
		t.Fatalf("the agent found %q", text)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("a.go is no longer a link: %v %v", fi, err)
	}
}

func waitFile(t *testing.T, path, want string) {
	t.Helper()
	// The file is written on the server's own time, with no event to wait
	// on.
	var b []byte
	if !gemkittest.Poll(waitTimeout, 20*time.Millisecond, func() bool { b, _ = os.ReadFile(path); return string(b) == want }) {
		t.Fatalf("%s holds %q, want %q", path, b, want)
	}
}

// TestSavedShutdown: the saved bytes are back on disk before shutdown is
// answered (lsp-mode kills its server right after exit).
func TestSavedShutdown(t *testing.T) {
	before := savedBefore
	var seen diskSeen
	c, path, uri := savedSetup(t, time.Hour, &before, "package s\n", &seen)
	save(t, c, path, uri, "package s\n")
	c.ev.wait(t, "accepted "+path+" "+js("package s\n"))
	c.request(42, "shutdown", nil)
	for m := c.next(); m["id"] != float64(42); m = c.next() {
	}
	if b, _ := os.ReadFile(path); string(b) != "package s\n" {
		t.Fatalf("a.go holds %q when shutdown is answered, want the saved text", b)
	}
}
