package claudetest

import (
	"strconv"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// Input waits for Claude Code's input in ui, answering its first-run
// question about the permission mode with "No, keep manual mode": manual
// mode's permission prompts are what show a proposed change as a diff in
// the IDE.
func Input(t testing.TB, ui gemkittest.TUI) {
	t.Helper()
	const keep = "No, keep manual mode"
	gemkittest.WaitScreen(t, ui.Screen, "Claude Code's input", func(s string) bool {
		return strings.Contains(s, keep) || strings.Contains(s, "? for shortcuts")
	})
	if strings.Contains(ui.Screen(), keep) {
		gemkittest.PressUntil(t, ui, "Down", strconv.Quote(keep)+" chosen", func() bool { return Chosen(ui.Screen(), keep) })
		gemkittest.PressUntil(t, ui, "Enter", "the first-run question answered", func() bool {
			return !strings.Contains(ui.Screen(), keep)
		})
	}
	gemkittest.WaitScreen(t, ui.Screen, "Claude Code's input", func(s string) bool { return strings.Contains(s, "? for shortcuts") })
}

// ConnectIDE connects Claude Code in ui to the IDE named name with /ide,
// as a person does: /ide lists the companions of the lock files by their
// IDE's name; choosing one connects, and the offer to connect
// automatically next time that may follow is taken as it stands.
func ConnectIDE(t testing.TB, ui gemkittest.TUI, name string) {
	t.Helper()
	gemkittest.Submit(t, ui, "/ide", func() bool {
		s := ui.Screen()
		return strings.Contains(s, "Connect to an IDE") && strings.Contains(s, name)
	})
	connected := func() bool { return strings.Contains(ui.Screen(), "Connected to "+name) }
	gemkittest.PressUntil(t, ui, "Up", name+" chosen in /ide's list", func() bool { return connected() || Chosen(ui.Screen(), name) })
	gemkittest.PressUntil(t, ui, "Enter", "the connection to "+name, func() bool {
		return connected() || strings.Contains(ui.Screen(), "Connect to your IDE automatically?")
	})
	gemkittest.PressUntil(t, ui, "Enter", "the connection to "+name, connected)
}

// Ask submits prompt at Claude Code's input in ui, and returns once model
// has a new request whose last user message holds it.
func Ask(t testing.TB, ui gemkittest.TUI, model *Model, prompt string) {
	t.Helper()
	n := len(model.Requests())
	gemkittest.Submit(t, ui, prompt, func() bool {
		for _, r := range model.Requests()[n:] {
			if strings.Contains(r.LastUser(), prompt) {
				return true
			}
		}
		return false
	})
}

// Chosen tells whether a menu on screen has its pointer (❯) on the line
// of choice.
func Chosen(screen, choice string) bool {
	for _, l := range strings.Split(screen, "\n") {
		if i := strings.Index(l, "❯"); i >= 0 && strings.Contains(l[i:], choice) {
			return true
		}
	}
	return false
}
