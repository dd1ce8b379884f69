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

// measure runs the stand-in's steps against s.
func (s *session) measure(o options) (result, error) {
	var r result
	nv, file, lock, pid, p := s.nv, s.file, s.lock, s.pid, s.p
	ctx := context.Background()
	c, err := dial(ctx, lock)
	if err != nil {
		return r, err
	}
	defer c.close()
	time.Sleep(3 * time.Second)
	r.rssEditor, r.rssCompanion, r.anonCompanion = rssTree(pid)

	for range o.n {
		t0 := time.Now()
		c2, err := dial(ctx, lock)
		if err != nil {
			return r, err
		}
		r.connect = append(r.connect, time.Since(t0))
		c2.close()
	}

	input := func(keys string) error { _, err := nv.Call("nvim_input", keys); return err }
	for range o.n {
		if err := input("<Esc>gg0"); err != nil {
			return r, err
		}
		time.Sleep(250 * time.Millisecond) // the selection cleared, past both plugins' debounce
		c.drain()
		t0 := time.Now()
		if err := input("Vj"); err != nil {
			return r, err
		}
		if err := c.waitSelection(ctx, func(text string) bool { return strings.HasPrefix(text, "one\ntwo") }, 5*time.Second); err != nil {
			return r, fmt.Errorf("V j → selection_changed: %w", err)
		}
		r.selection = append(r.selection, time.Since(t0))
	}
	if err := input("<Esc>"); err != nil {
		return r, err
	}

	for i := range o.n {
		if _, err := nv.Call("nvim_exec_lua", "_G.bench_drawn = false", []any{}); err != nil {
			return r, err
		}
		t0 := monotonic()
		call, err := c.call(ctx, "tools/call", map[string]any{"name": "openDiff", "arguments": map[string]any{
			"old_file_path": file, "new_file_path": file, "new_file_contents": "one\nTWO\nthree\n", "tab_name": "bench " + strconv.Itoa(i)}})
		if err != nil {
			return r, err
		}
		var drawn int64
		if err := benchenv.Poll(10*time.Second, 5*time.Millisecond, func() error {
			v, err := nv.Call("nvim_exec_lua", "return _G.bench_drawn", []any{})
			if err != nil {
				return err
			}
			n, ok := v.(int64)
			if !ok {
				return errors.New("no diff drawn")
			}
			drawn = n
			return nil
		}); err != nil {
			return r, fmt.Errorf("openDiff: %w", err)
		}
		r.diff = append(r.diff, time.Duration(drawn)-t0)

		if _, err := nv.Call("nvim_command", p.reject); err != nil {
			return r, fmt.Errorf(":%s: %w", p.reject, err)
		}
		select {
		case <-call:
		case <-time.After(10 * time.Second):
			return r, errors.New("openDiff did not answer after :" + p.reject)
		}
		time.Sleep(100 * time.Millisecond) // the view closes
	}
	return r, nil
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
