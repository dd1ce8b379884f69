//go:build linux

package main

// The stand-in's timed steps.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gemkit/gemkit/bench/internal/benchenv"
	"github.com/gemkit/gemkit/internal/proc"
)

// The steps of one round against a session, each timed alone; run
// interleaves them between the plugins, round by round, so that both see
// the same load.

// standIn connects the stand-in that the timed steps use, and notes the
// idle memory 3 s later.
func (s *session) standIn(ctx context.Context, r *result) error {
	c, err := dial(ctx, s.lock)
	if err != nil {
		return err
	}
	s.c = c
	time.Sleep(3 * time.Second) // the companion's idle state: it gives pages back 2 s after a client came
	r.rssEditor, r.rssCompanion, r.anonCompanion = rssTree(s.pid)
	return nil
}

// connectOnce times one more stand-in's dial → initialize answered, and
// the CPU time the editor's side spent on it meanwhile (the plugin's whole
// work on the path of a connect: the upgrade, the answer, and the threads
// it woke).
func (s *session) connectOnce(ctx context.Context) (d, cpu time.Duration, err error) {
	cpu0 := s.editorCPU()
	t0 := time.Now()
	c, err := dial(ctx, s.lock)
	if err != nil {
		return 0, 0, err
	}
	d = time.Since(t0)
	cpu = s.editorCPU() - cpu0
	c.close()
	return d, cpu, nil
}

func (s *session) input(keys string) error { _, err := s.nv.Call("nvim_input", keys); return err }

// selectOnce times V j typed in the file → selection_changed with both
// lines.
func (s *session) selectOnce(ctx context.Context) (time.Duration, error) {
	if err := s.input("<Esc>gg0"); err != nil {
		return 0, err
	}
	time.Sleep(250 * time.Millisecond) // the selection cleared, past both plugins' debounce
	s.c.drain()
	t0 := time.Now()
	if err := s.input("Vj"); err != nil {
		return 0, err
	}
	if err := s.c.waitSelection(ctx, func(text string) bool { return strings.HasPrefix(text, "one\ntwo") }, 5*time.Second); err != nil {
		return 0, fmt.Errorf("V j → selection_changed: %w", err)
	}
	d := time.Since(t0)
	return d, s.input("<Esc>")
}

// diffOnce times openDiff sent → the diff drawn, and → drawn with every
// side's syntax set (stamped in Neovim; 0 when that did not come within
// 2 s: a file with no filetype), then rejects the diff with the plugin's
// command.
func (s *session) diffOnce(ctx context.Context, i int) (d, highlighted time.Duration, err error) {
	if _, err := s.nv.Call("nvim_exec_lua", "_G.bench_drawn, _G.bench_highlighted = false, false", []any{}); err != nil {
		return 0, 0, err
	}
	t0 := monotonic()
	call, err := s.c.call(ctx, "tools/call", map[string]any{"name": "openDiff", "arguments": map[string]any{
		"old_file_path": s.file, "new_file_path": s.file, "new_file_contents": "one\nTWO\nthree\n", "tab_name": "bench " + strconv.Itoa(i)}})
	if err != nil {
		return 0, 0, err
	}
	stamp := func(name string, bound time.Duration) (int64, error) {
		var at int64
		err := benchenv.Poll(bound, 5*time.Millisecond, func() error {
			v, err := s.nv.Call("nvim_exec_lua", "return _G."+name, []any{})
			if err != nil {
				return err
			}
			n, ok := v.(int64)
			if !ok {
				return errors.New("no " + name)
			}
			at = n
			return nil
		})
		return at, err
	}
	drawn, err := stamp("bench_drawn", 10*time.Second)
	if err != nil {
		return 0, 0, fmt.Errorf("openDiff: %w", err)
	}
	if hl, err := stamp("bench_highlighted", 2*time.Second); err == nil {
		highlighted = time.Duration(hl) - t0
	}
	d = time.Duration(drawn) - t0
	if _, err := s.nv.Call("nvim_command", s.p.reject); err != nil {
		return 0, 0, fmt.Errorf(":%s: %w", s.p.reject, err)
	}
	select {
	case <-call:
	case <-time.After(10 * time.Second):
		return 0, 0, errors.New("openDiff did not answer after :" + s.p.reject)
	}
	time.Sleep(100 * time.Millisecond) // the view closes
	return d, highlighted, nil
}

// rssTree is the VmRSS of pid and, apart, of its child processes, with
// their RssAnon (what is not the executable's pages).
func rssTree(pid int) (self, children, childrenAnon int64) {
	self, _ = proc.StatusBytes(pid, "VmRSS")
	kids, _ := proc.Children(pid)
	for _, c := range kids {
		rss, _ := proc.StatusBytes(c, "VmRSS")
		anon, _ := proc.StatusBytes(c, "RssAnon")
		children += rss
		childrenAnon += anon
	}
	return self, children, childrenAnon
}
