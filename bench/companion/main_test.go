//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"github.com/gemkit/gemkit/bench/internal/benchenv"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestQuickRun runs the whole harness with a few iterations against both
// companions, so that the benchmark cannot rot. The figures of a quick run
// mean nothing and are not checked; that the run completes is.
func TestQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs both companions against the node client: runs without -short, as in CI")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := quickConfig(config{node: "node", servers: []string{"gemkit", "reference"}})
	var out bytes.Buffer
	if err := run(ctx, cfg, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	const counts = "20 acks, 5 timed contexts, 20 diffs and 200 context updates received under load, 2 starts)"
	if n := strings.Count(out.String(), counts); n != 2 {
		t.Errorf("%d servers measured in full, want 2:\n%s", n, out.String())
	}
	for _, want := range []string{
		"openDiff → ack p50", "start → discovery file p50", "gemkit/reference",
		// Every figure was measured, on both; a quick run is too short to
		// judge growth.
		"gemkit RSS under load:", "reference RSS under load:",
		"max RSS over 20 diffs + 200 context updates", "at a 1ms debounce",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 10000: "10,000", 1234567: "1,234,567", -1000: "-1,000"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	tests := []struct {
		p    float64
		want time.Duration
	}{
		{0.5, 5}, {0.99, 10}, {0.1, 1}, {0, 1}, {1, 10},
	}
	for _, tc := range tests {
		if got := percentile(ds, tc.p); got != tc.want {
			t.Errorf("percentile(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile(nil) = %v", got)
	}
}

func TestGrows(t *testing.T) {
	mb := func(v ...int) []rssPoint {
		var ps []rssPoint
		for _, x := range v {
			ps = append(ps, rssPoint{kb: x * 1024})
		}
		return ps
	}
	tests := []struct {
		name   string
		points []rssPoint
		want   bool
	}{
		{"flat", mb(12, 12, 12, 12), false},
		{"warms up then holds", mb(13, 16, 16, 17, 16, 17), false},
		{"climbs", mb(10, 14, 18, 22), true},
		{"a collected heap swings", mb(71, 106, 118, 106, 115, 108, 112, 72, 69), false},
		{"creeps under a MiB", []rssPoint{{kb: 12000}, {kb: 12100}, {kb: 12500}, {kb: 12900}}, false},
		{"one point", mb(30), false},
	}
	for _, tc := range tests {
		if got := grows(tc.points); got != tc.want {
			t.Errorf("%s: grows = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestGuards checks that both companions refuse what the official one
// refuses, with the same status codes, so that the benchmark compares
// servers doing the same work.
func TestGuards(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs both companions: runs without -short, as in CI")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root, err := benchenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	specs, cleanup, err := buildSpecs(ctx, config{root: root, node: "node", servers: []string{"gemkit", "reference"}})
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	ws := t.TempDir()
	const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, spec := range specs {
		s, err := startServer(ctx, spec, ws)
		if err != nil {
			t.Fatal(err)
		}
		defer s.stop()
		base := fmt.Sprintf("http://127.0.0.1:%d", s.file.Port)
		bearer := "Bearer " + s.file.AuthToken
		tests := []struct {
			name    string
			method  string
			body    string
			headers map[string]string
			host    string
			want    int
		}{
			{"no token", "POST", initBody, nil, "", http.StatusUnauthorized},
			{"wrong token", "POST", initBody, map[string]string{"Authorization": "Bearer nope"}, "", http.StatusUnauthorized},
			{"origin", "POST", initBody, map[string]string{"Authorization": bearer, "Origin": "http://evil.example"}, "", http.StatusForbidden},
			{"foreign host", "POST", initBody, map[string]string{"Authorization": bearer}, fmt.Sprintf("evil.example:%d", s.file.Port), http.StatusForbidden},
			{"not initialize without session", "POST", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, map[string]string{"Authorization": bearer}, "", http.StatusBadRequest},
			{"GET without session", "GET", "", map[string]string{"Authorization": bearer}, "", http.StatusBadRequest},
			{"initialize", "POST", initBody, map[string]string{"Authorization": bearer}, fmt.Sprintf("localhost:%d", s.file.Port), http.StatusOK},
		}
		for _, tc := range tests {
			t.Run(spec.name+"/"+tc.name, func(t *testing.T) {
				req, err := http.NewRequestWithContext(ctx, tc.method, base+"/mcp", strings.NewReader(tc.body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				for k, v := range tc.headers {
					req.Header.Set(k, v)
				}
				if tc.host != "" {
					req.Host = tc.host
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode != tc.want {
					t.Errorf("status %d, want %d", res.StatusCode, tc.want)
				}
				if tc.want == http.StatusOK && res.Header.Get("Mcp-Session-Id") == "" {
					t.Error("initialize answered without a session id")
				}
			})
		}
	}
}

// TestReadEvents: the harness's SSE reader joins data lines, skips other
// fields and copes with lines longer than its buffer.
func TestReadEvents(t *testing.T) {
	long := strings.Repeat("x", 100<<10)
	in := "event: message\ndata: {\"a\":1}\n\n: a comment\nid: 3\ndata: one\ndata: two\n\n" +
		"data: " + long + "\r\n\r\n" + "data: cut off"
	var got []string
	err := readEvents(strings.NewReader(in), func(data []byte) bool {
		got = append(got, string(data))
		return true
	})
	if err != io.EOF {
		t.Fatalf("err %v, want EOF", err)
	}
	want := []string{`{"a":1}`, "one\ntwo", long}
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("event %d: %.40q, want %.40q", i, got[i], want[i])
		}
	}
}
