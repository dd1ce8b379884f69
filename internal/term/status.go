package term

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gemkit/gemkit/companion"
)

// status returns the status line to print, or "" when Options.Clients is
// nil or nothing the line shows changed since it was last printed. With
// Options.Title it also puts the line in the terminal's title.
func (f *Frontend) status() string {
	if f.opts.Clients == nil {
		return ""
	}
	f.mu.Lock()
	dirty := f.statusDirty
	f.statusDirty = false
	var queue []string
	if dirty {
		for _, d := range f.queue {
			queue = append(queue, d.path)
		}
	}
	f.mu.Unlock()
	if !dirty {
		return ""
	}
	line := StatusText(f.opts.Clients(), queue)
	if line == f.lastStatus {
		return ""
	}
	f.lastStatus = line
	if f.opts.Title {
		fmt.Fprintf(f.opts.Out, "\x1b]2;gemkit ide serve: %s\x07", titleSafe(strings.TrimPrefix(line, "Status: ")))
	}
	return line
}

// StatusText is the status line: the CLIs connected, first connected
// first, and the diffs waiting for an answer, in the order they will be
// asked.
func StatusText(clients []companion.Client, queue []string) string {
	var b strings.Builder
	b.WriteString("Status: ")
	if len(clients) == 0 {
		b.WriteString("no CLI connected")
	} else {
		names := make([]string, len(clients))
		for i, c := range clients {
			names[i] = ClientLabel(c)
		}
		fmt.Fprintf(&b, "%s connected: %s", counted(len(clients), "CLI"), strings.Join(names, ", "))
	}
	b.WriteString("; ")
	if len(queue) == 0 {
		b.WriteString("no diff waiting.")
		return b.String()
	}
	waiting := make([]string, len(queue))
	for i, p := range queue {
		waiting[i] = fmt.Sprintf("%d. %s", i+1, p)
	}
	fmt.Fprintf(&b, "%s waiting: %s.", counted(len(queue), "diff"), strings.Join(waiting, ", "))
	return b.String()
}

// ClientLabel names a connected client as a person knows it: the agent
// the companion recognised (companion.Client.Agent: "Gemini CLI 0.61.0",
// "Qwen Code 0.24.4", "Claude Code 2.1.330"), else the name it gave with
// its transport; then its process and folder where known, which tell two
// CLIs of one name apart, and whether it came through the stdio bridge.
func ClientLabel(c companion.Client) string {
	name, version := strings.TrimSpace(c.Name), c.Version
	switch {
	case c.Agent != "":
		name, version = c.Agent, c.AgentVersion
	case name == "":
		name = "an unnamed client"
	}
	label := strings.TrimSpace(name + " " + version)
	var where []string
	if c.Agent == "" && !c.Bridged { // a bridged client spoke stdio; the bridge, HTTP
		where = append(where, transportLabel(c.Transport))
	}
	if c.PID != 0 {
		where = append(where, fmt.Sprintf("pid %d", c.PID))
	}
	if c.Dir != "" {
		where = append(where, "in "+homeShort(c.Dir))
	}
	if c.Bridged {
		where = append(where, "through the stdio bridge")
	}
	if len(where) > 0 {
		label += " (" + strings.Join(where, ", ") + ")"
	}
	return label
}

// homeShort writes a path under the home folder as ~/….
func homeShort(p string) string {
	if home, err := os.UserHomeDir(); err == nil && home != "/" {
		if rel, ok := strings.CutPrefix(p, home+string(filepath.Separator)); ok {
			return "~/" + rel
		}
	}
	return p
}

// titleSafe drops the control characters a terminal title cannot hold
// (a BEL or ESC would end or break the escape sequence).
func titleSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, s)
}

// counted is "1 diff", "2 diffs".
func counted(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func transportLabel(t string) string {
	switch t {
	case companion.TransportHTTP:
		return "HTTP"
	case companion.TransportStream:
		return "WebSocket"
	case companion.TransportClaude:
		return "Claude Code"
	}
	return t
}
