package editorproto

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/golden"
)

// The language requests (lsp/*, and diagnostics/get's settle) go from
// gemkit's own processes through the companion's route to the editor and
// back. Their conformance cases are transcripts in testdata/lsp/*.txtar:
//
//	What the case shows, in prose.
//	-- route --
//	the JSON-RPC requests POSTed to the companion's /lsp, one a line
//	-- editor --
//	the editor's answers to gemkit's requests, one a line, in order
//	-- gemkit --
//	the lines gemkit writes to the editor, in order
//	-- answer --
//	the companion's answers to the route's requests, one a line
//
// Paths are written under /home/me/project, the workspace: the test puts
// a real folder in its place. go test -update rewrites the gemkit and
// answer sections from what gemkit does now.
func TestLSPTranscripts(t *testing.T) {
	golden.Transcripts(t, filepath.Join("testdata", "lsp"), func(t *testing.T, a *golden.Archive) {
		gemkit, answer := runLSPTranscript(t, a.Get("route"), a.Get("editor"))
		a.Set("gemkit", gemkit)
		a.Set("answer", answer)
	})
}

// transcriptWorkspace is the workspace folder the transcripts name.
const transcriptWorkspace = "/home/me/project"

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// runLSPTranscript serves a companion whose editor answers gemkit's
// requests with the editor lines, in order, POSTs each route line to its
// /lsp and returns gemkit's lines to the editor and the route's answers.
func runLSPTranscript(t *testing.T, route, editor string) (gemkitLines, answers string) {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	log := slog.New(slog.DiscardHandler)
	conn := New(inR, outW, Options{Logger: log})
	srv, err := companion.New(companion.Config{
		Workspace: []string{ws}, Editor: conn, DiscoveryDir: t.TempDir(), PID: os.Getpid(), Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ctx)
	}()
	go func() { _ = conn.Run(ctx, srv) }()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		outR.Close()
		<-served
	})
	<-srv.Ready()

	toReal := strings.NewReplacer(transcriptWorkspace, ws)
	toDoc := strings.NewReplacer(ws, transcriptWorkspace)
	answersLeft := nonEmptyLines(toReal.Replace(editor))
	var mu sync.Mutex
	var wrote []string
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			wrote = append(wrote, toDoc.Replace(line))
			var next string
			if len(answersLeft) > 0 {
				next, answersLeft = answersLeft[0], answersLeft[1:]
			}
			mu.Unlock()
			if next != "" {
				_, _ = io.WriteString(inW, next+"\n")
			}
		}
	}()

	client := &http.Client{Timeout: 10 * time.Second}
	var out strings.Builder
	for _, l := range nonEmptyLines(toReal.Replace(route)) {
		req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:"+strconv.Itoa(srv.Port())+ide.LSPPath, strings.NewReader(l))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+srv.Token())
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: HTTP %d %s", l, resp.StatusCode, body)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, body); err != nil {
			t.Fatalf("%s: answer is not JSON: %s", l, body)
		}
		out.WriteString(toDoc.Replace(compact.String()) + "\n")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(answersLeft) > 0 {
		t.Errorf("editor answers never asked for: %q", answersLeft)
	}
	var g strings.Builder
	for _, l := range wrote {
		g.WriteString(l + "\n")
	}
	return g.String(), out.String()
}
