package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/model"
)

// TestRetryFlagsRefused: a retry flag that is not a positive duration is
// refused with words naming it, before any model is contacted, as the
// same value in the config file is.
func TestRetryFlagsRefused(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "none.json")
	for _, c := range []struct{ flag, words string }{
		{"--retry-delay=-5s", `retry delay "-5s"`},
		{"--retry-max-wait=-1m", `retry max wait "-1m0s"`},
	} {
		var out, errb bytes.Buffer
		code := Run(context.Background(), []string{"run", "--no-ide", "--config", cfg, c.flag, "hi"}, Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
		if code != ExitError || !strings.Contains(errb.String(), c.words) {
			t.Errorf("%s: exit %d, %q", c.flag, code, errb.String())
		}
	}
}

// TestHomeFlagWords: every command's --home is the folder that holds
// .gemini, and says so in the same words.
func TestHomeFlagWords(t *testing.T) {
	t.Parallel()
	root := newRoot(newApp(Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}))
	want := ""
	for _, path := range [][]string{{"extensions", "list"}, {"mcp"}, {"run"}, {"chat"}} {
		cmd, _, err := root.Find(path)
		if err != nil {
			t.Fatal(err)
		}
		f := cmd.Flags().Lookup("home")
		if f == nil {
			f = cmd.InheritedFlags().Lookup("home")
		}
		if f == nil {
			t.Fatalf("%v has no --home", path)
		}
		if want == "" {
			want = f.Usage
		}
		if f.Usage != want || !strings.Contains(f.Usage, "holds .gemini") {
			t.Errorf("%v --home: %q, want %q", path, f.Usage, want)
		}
	}
}

// TestWaitLine: the retry line is one line, without the error's hint
// (waiting is what gemkit does) and without a period before its own
// semicolon.
func TestWaitLine(t *testing.T) {
	t.Parallel()
	err := &model.Error{Kind: model.KindQuota, Status: 429, Endpoint: "m at x", Msg: "You exceeded your current quota.\nPlease retry in 1.5s.", Hint: "Wait and try again"}
	got := waitLine(model.Wait{Attempt: 1, MaxAttempts: 10, Delay: 1600 * time.Millisecond, Err: err})
	want := "gemkit: the model's quota or rate limit is exhausted (m at x, HTTP 429): You exceeded your current quota. Please retry in 1.5s; retrying in 1.6s (attempt 2 of 10; Ctrl-C stops)"
	if got != want {
		t.Errorf("%q\nwant %q", got, want)
	}
}
