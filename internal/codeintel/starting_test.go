package codeintel

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// logged is an editing Source that notes each change told to it.
type logged struct {
	editing
	log *[]string
}

func (l *logged) Changed(ctx context.Context, ch []Change) error {
	*l.log = append(*l.log, "changed")
	return l.editing.Changed(ctx, ch)
}

// TestAfterEditStarting: AfterEdit tells its Starting, before anything
// is asked of the server, when the file's server is not running yet (the
// file and the server's name), and calls the func it returns once the
// check is over; a server already running tells nothing.
func TestAfterEditStarting(t *testing.T) {
	ws, _ := shop(t)
	g := filepath.Join(ws, "greet", "greet.go")
	old := "package greet\n"
	for _, c := range []struct {
		name   string
		status Status
		nilFn  bool
		want   []string
	}{
		{"starting", Status{Server: "gopls", Starting: true}, false, []string{"start greet/greet.go gopls", "changed", "changed", "done"}},
		{"starting, unnamed", Status{Starting: true}, false, []string{"start greet/greet.go the language server", "changed", "changed", "done"}},
		{"running", Status{Server: "gopls"}, false, []string{"changed", "changed"}},
		{"starting, nobody told", Status{Server: "gopls", Starting: true}, true, []string{"changed", "changed"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var log []string
			src := &logged{editing: editing{fakeSource: fakeSource{status: c.status}}, log: &log}
			tools := newTestTools(t, ws, src, Options{})
			starting := Starting(func(rel, server string) func() {
				log = append(log, "start "+rel+" "+server)
				return func() { log = append(log, "done") }
			})
			if c.nilFn {
				starting = nil
			}
			if got := tools.AfterEdit(context.Background(), g, &old, starting); got != "" {
				t.Errorf("nothing new, yet %q", got)
			}
			if strings.Join(log, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("told:\n%s\nwant:\n%s", strings.Join(log, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}
