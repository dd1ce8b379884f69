package term

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestAcceptWithProposerGone: the CLI writes an accepted change itself,
// so a change accepted once the CLI that proposed it has gone is written
// by nobody. Seen in the tour: Gemini CLI killed with its proposal
// waiting, then `a` printed "Accepted …notes.txt." and the file stayed
// as it was. The answer must say that nothing was written and why; while
// the proposer (or, when it is not known, any CLI) is connected it says
// no such thing.
func TestAcceptWithProposerGone(t *testing.T) {
	gemini := companion.Client{Name: "gemini", Agent: companion.AgentGemini, AgentVersion: "0.61.0", Transport: companion.TransportHTTP}
	claude := companion.Client{Name: "claude", Agent: companion.AgentClaude, AgentVersion: "2.1.330", Transport: companion.TransportClaude}
	const nothing = "Nothing was written:"
	for _, tc := range []struct {
		name    string
		agent   string // the proposer, "" when not known
		clients []companion.Client
		want    string // in the answer; "" for no warning
	}{
		{"proposer connected", companion.AgentGemini, []companion.Client{gemini}, ""},
		{"proposer gone", companion.AgentGemini, nil, nothing + " Gemini CLI, which proposed it, is no longer connected"},
		{"proposer gone, another CLI connected", companion.AgentGemini, []companion.Client{claude}, nothing + " Gemini CLI, which proposed it, is no longer connected"},
		{"proposer not known, a CLI connected", "", []companion.Client{claude}, ""},
		{"proposer not known, no CLI connected", "", nil, nothing + " no CLI is connected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr, pw := io.Pipe()
			defer pw.Close()
			out := &gemkittest.Output{}
			ev := &listing{}
			ev.set(tc.clients...)
			f := New(Options{In: pr, Out: out, Editor: "false", TempDir: t.TempDir(), Clients: ev.Clients})
			done := make(chan error, 1)
			go func() { done <- f.Run(context.Background(), ev) }()
			path := filepath.Join(t.TempDir(), "a.txt")
			ctx := context.Background()
			if tc.agent != "" {
				ctx = companion.WithProposer(ctx, tc.agent)
			}
			if err := f.OpenDiff(ctx, path, "A\n"); err != nil {
				t.Fatal(err)
			}
			out.WaitFor(t, "the prompt", func(o string) bool { return strings.Contains(o, "or edit [e]") })
			if _, err := io.WriteString(pw, "a\n"); err != nil {
				t.Fatal(err)
			}
			out.WaitFor(t, "the answer", func(o string) bool { return strings.Contains(o, "Accepted "+path+".") })
			pw.Close()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			got := out.String()
			if tc.want == "" && strings.Contains(got, nothing) {
				t.Errorf("warned with the proposer there:\n%s", got)
			}
			if tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("the answer does not say %q:\n%s", tc.want, got)
			}
		})
	}
}
