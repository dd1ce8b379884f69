package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// markerServer is a stdio MCP server that, as it starts, writes a file
// named by its first argument: where Gemini CLI starts it, the file
// says so. It answers initialize and an empty tools/list (the shapes of
// the specification's revision 2025-06-18).
const markerServer = `import { writeFileSync } from "node:fs";
import { createInterface } from "node:readline";
writeFileSync(process.argv[2], "started\n");
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  if (m.method === "initialize") return send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "marker", version: "1" } } });
  if (m.method === "tools/list") return send({ jsonrpc: "2.0", id: m.id, result: { tools: [] } });
  send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "no such method" } });
});
`

// notesManifest is the switched extension as the person agreed to it:
// one server, which the switch excludes from Gemini CLI.
func notesManifest(name, markers string, extra string) string {
	return `{"name": "` + name + `", "version": "1.0.0", "mcpServers": {
  "memory": {"command": "node", "args": ["${extensionPath}/marker.mjs", "` + filepath.Join(markers, "memory") + `"]}` + extra + `}}`
}

// addedServer is the server a change adds under a name of its own,
// which the switch never excluded.
func addedServer(name, markers string) string {
	return `,
  "` + name + `": {"command": "node", "args": ["${extensionPath}/marker.mjs", "` + filepath.Join(markers, name) + `"]}`
}

// TestHeldInGeminiCLI is the second half of the sixth round's first
// finding, with the real Gemini CLI 0.61: an extension switched to gemkit
// and linked from the workspace was rewritten (here by the test, as any
// program of the person's, or a server started before the link, could),
// adding a server under a name of its own, and Gemini CLI started it
// with the person's rights (`gemini mcp list`, in a trusted folder,
// starts every stdio server a session would; the control below shows
// it). Now gemkit mcp, which runs beside every Gemini CLI session that
// uses the extension, holds it in Gemini CLI as soon as its files change
// (Gemini CLI's own extension enablement): the next Gemini CLI starts
// none of it, nor lists it as enabled. Agreeing again releases it, and
// the added server is then excluded as the others are. Its class: a
// change that also renames the extension in its manifest (Gemini CLI
// keys enablement by that name), found by doctor: held under both names.
func TestHeldInGeminiCLI(t *testing.T) {
	h := newCompatHome(t)
	markers := filepath.Join(h.home, "markers")
	os.MkdirAll(markers, 0o755)
	started := func(name string) bool { return serverStarted(markers, name) }
	src := filepath.Join(h.ws, "tools", "notes")
	writeFiles(t, src, map[string]string{"gemini-extension.json": notesManifest("notes", markers, ""), "marker.mjs": markerServer})
	h.mustKit("link", src, "--consent")
	h.mustKit("sandbox", "notes")
	if h.mustGem("mcp", "list"); started("memory") {
		t.Fatal("Gemini CLI started the switched server memory")
	}

	// The control: a change adds a server, and Gemini CLI starts it.
	manifest := filepath.Join(src, "gemini-extension.json")
	os.WriteFile(manifest, []byte(notesManifest("notes", markers, addedServer("added", markers))), 0o644)
	h.mustGem("mcp", "list")
	if !started("added") {
		t.Fatal("the control failed: Gemini CLI did not start the server the change added")
	}
	os.Remove(filepath.Join(markers, "added"))
	os.WriteFile(manifest, []byte(notesManifest("notes", markers, "")), 0o644)
	h.mustKit("consent", "notes", "--grant")

	st := extension.OpenStore(h.home)
	heldByGemkitMCP(t, h, st, manifest, markers)

	// Agreeing again releases it; the added server is switched as well.
	out := h.mustKit("consent", "notes", "--grant")
	if !strings.Contains(out, "Gemini CLI runs notes again: gemkit held it there since") {
		t.Errorf("consent --grant does not say the release:\n%s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(h.home, ".gemini", "settings.json")); !strings.Contains(string(b), `"added"`) {
		t.Errorf("the added server is not in mcp.excluded:\n%s", b)
	}
	h.mustGem("mcp", "list")
	if started("added") {
		t.Error("Gemini CLI started the added server after consent: it is to be served by gemkit, switched")
	}

	heldUntilOff(t, h, st, manifest, markers)
}

// heldByGemkitMCP: gemkit mcp runs (as beside a Gemini CLI session) while
// the switched extension notes's manifest changes, and holds it in
// Gemini CLI, which then starts none of its servers.
func heldByGemkitMCP(t *testing.T, h *compatHome, st *extension.Store, manifest, markers string) {
	t.Helper()
	started := func(name string) bool { return serverStarted(markers, name) }
	mcp := exec.Command(h.gemkit, "mcp", "--code-intel=false")
	mcp.Dir, mcp.Env = h.ws, h.env()
	stdin, _ := mcp.StdinPipe()
	var stderr strings.Builder
	mcp.Stderr = &stderr
	if err := mcp.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); mcp.Process.Kill(); mcp.Wait() }()
	// gemkit mcp is watching once its first look found nothing to hold
	// and the folder's watch is in place: a change before that is
	// found by the first look, after it by the watch; either holds.
	os.WriteFile(manifest, []byte(notesManifest("notes", markers, addedServer("added", markers))), 0o644)
	if !gemkittest.Poll(30*time.Second, 50*time.Millisecond, func() bool { hs, _ := st.Holds(); _, ok := hs["notes"]; return ok && len(hs["notes"].Excluded) > 0 }) {
		hs, err := st.Holds()
		b, _ := os.ReadFile(filepath.Join(h.home, ".gemini", "extensions", "extension-enablement.json"))
		t.Fatalf("gemkit mcp did not hold the changed extension (holds %v %v; enablement %s):\n%s", hs, err, b, stderr.String())
	}
	stdin.Close()
	mcp.Wait()
	// Which words depends on whether gemkit looked while the manifest
	// was half written (its files changed) or after (what it runs).
	if log := stderr.String(); !strings.Contains(log, "notes is switched to gemkit, and ") || !strings.Contains(log, "since you agreed to it") && !strings.Contains(log, "since you agreed to them") || !strings.Contains(log, ": gemkit holds it in Gemini CLI") {
		hs, _ := st.Holds()
		t.Errorf("gemkit mcp's log does not say the hold (%+v; now %s):\n%s", hs, time.Now().UTC(), stderr.String())
	}
	h.mustGem("mcp", "list")
	if started("added") || started("memory") {
		t.Errorf("Gemini CLI started a server of the held extension (added %v, memory %v)", started("added"), started("memory"))
	}
	if gem, _ := h.lists(); gem["notes"]["isActive"] != false {
		t.Errorf("Gemini CLI lists the held extension as %v", gem["notes"]["isActive"])
	}
	if out := h.mustKit("list"); !strings.Contains(out, "held (changed)") || !strings.Contains(out, "held: notes: ") {
		t.Errorf("gemkit's list does not say the hold:\n%s", out)
	}
}

// heldUntilOff: undoing the switch of a held extension gives it back to
// Gemini CLI whole; switched again, a change that renames it too is held
// under both names.
func heldUntilOff(t *testing.T, h *compatHome, st *extension.Store, manifest, markers string) {
	t.Helper()
	started := func(name string) bool { return serverStarted(markers, name) }
	// The hold goes with the switch, and the enablement file and
	// settings are as before the switch.
	os.WriteFile(manifest, []byte(notesManifest("notes", markers, addedServer("added3", markers))), 0o644)
	if out, _, _ := h.kit("doctor"); !strings.Contains(out, "held in Gemini CLI since") {
		t.Errorf("doctor does not say the hold:\n%s", out)
	} else if strings.Contains(out, "lacks added3") {
		// The hold put added3 in mcp.excluded in this very run (a
		// tour's finding: the warning and its fix were out of date).
		t.Errorf("doctor tells of mcp.excluded as it was before its own hold:\n%s", out)
	}
	if out := h.mustKit("sandbox", "notes", "--off"); !strings.Contains(out, "Gemini CLI runs notes again, as it is now and unconfined") {
		t.Errorf("--off does not say the hold's end:\n%s", out)
	}
	if hs, _ := st.Holds(); len(hs) != 0 {
		t.Errorf("holds after --off: %+v", hs)
	}
	if gem, _ := h.lists(); gem["notes"]["isActive"] != true {
		t.Errorf("Gemini CLI lists the extension as %v after --off", gem["notes"]["isActive"])
	}
	h.mustGem("mcp", "list")
	if !started("added3") || !started("memory") {
		t.Errorf("after --off, Gemini CLI did not start the extension's servers (added3 %v, memory %v)", started("added3"), started("memory"))
	}
	for _, n := range []string{"added3", "memory", "added"} {
		os.Remove(filepath.Join(markers, n))
	}
	os.WriteFile(manifest, []byte(notesManifest("notes", markers, addedServer("added", markers))), 0o644)
	h.mustKit("sandbox", "notes")

	// A change that renames the extension too, found by doctor.
	os.WriteFile(manifest, []byte(notesManifest("renamed", markers, addedServer("added2", markers))), 0o644)
	if out, _, _ := h.kit("doctor"); !strings.Contains(out, "held in Gemini CLI since") {
		t.Errorf("doctor does not say the hold:\n%s", out)
	}
	if hs, _ := st.Holds(); strings.Join(hs["notes"].Names, ",") != "notes,renamed" {
		t.Errorf("held under %v, want notes and renamed", hs["notes"].Names)
	}
	h.mustGem("mcp", "list")
	if started("added2") {
		t.Error("Gemini CLI started the server of the renamed extension")
	}
}

// serverStarted says whether the marker server name has started: it
// leaves a file of its name in markers.
func serverStarted(markers, name string) bool {
	_, err := os.Stat(filepath.Join(markers, name))
	return err == nil
}
