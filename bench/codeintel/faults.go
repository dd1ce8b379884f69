//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The faults issue 31 lists of cclsp, asked of both servers.

// faults asks both the questions behind the faults issue 31 lists.
func (e *env) faults(res *results) error {
	g, err := e.startGemkit()
	if err != nil {
		return err
	}
	defer func() { g.Close(); e.waitNoBroker() }()
	c, err := e.startCclsp()
	if err != nil {
		return err
	}
	defer func() { c.Close(); e.killLeft() }()
	first := func(s string) string {
		s = strings.TrimSpace(s)
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[:i] + " …"
		}
		if len(s) > 90 {
			s = s[:90] + "…"
		}
		return s
	}
	// Definition from a call site, by name.
	gs, _ := g.call("code_definition", gemkitDefByName)
	cs, _ := c.call("find_definition", map[string]any{"file_path": "main.go", "symbol_name": "Greet"})
	res.faults = append(res.faults, [3]string{"definition of Greet from main.go (a call site), by name", first(strings.SplitN(gs, "\n", 2)[1]), first(cs)})
	// Outside the workspace.
	gs, _ = g.call("code_definition", map[string]any{"symbol": "Println", "file": "main.go"})
	cs, _ = c.call("find_definition", map[string]any{"file_path": "main.go", "symbol_name": "Println"})
	res.faults = append(res.faults, [3]string{"definition of fmt.Println (the standard library)", first(strings.SplitN(gs, "\n", 2)[1]), first(cs)})
	// A file an agent changed: an error written into main.go on disk.
	main := filepath.Join(e.ws, "main.go")
	g.call("code_diagnostics", map[string]any{"file": "main.go"})
	c.call("get_diagnostics", map[string]any{"file_path": "main.go"})
	orig, _ := os.ReadFile(main)
	os.WriteFile(main, []byte(strings.Replace(string(orig), "s.Total()", "s.Totl()", 1)), 0o644)
	gs, _ = g.call("code_diagnostics", map[string]any{"file": "main.go"})
	cs, _ = c.call("get_diagnostics", map[string]any{"file_path": "main.go"})
	res.faults = append(res.faults, [3]string{"diagnostics of main.go after an error was written to it", first(gs), first(cs)})
	os.WriteFile(main, orig, 0o644)
	// Bounded answers.
	gs, _ = g.call("code_references", gemkitRefsByPos)
	cs, _ = c.call("find_references", cclspRefs)
	res.faults = append(res.faults, [3]string{fmt.Sprintf("references to greet.Greet: answer size"), fmt.Sprintf("%d bytes, %s", len(gs), first(lastLine(gs))), fmt.Sprintf("%d bytes", len(cs))})
	return nil
}
