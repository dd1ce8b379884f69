//go:build linux

package main

import (
	"fmt"
	"strings"
	"syscall"
	"time"
)

// Start to the first correct answer, with nothing left running from
// the start before (no broker, no language server).

// startTimes measures process start to the first correct definition,
// alternating the two servers (each start finds no broker and no server
// running).
func (e *env) startTimes(starts int, res *results) error {
	kinds := []string{"gemkit", "cclsp"}
	if e.ref != "" {
		kinds = []string{"gemkit", "ref", "cclsp"}
	}
	// One start of each gemkit first, not measured: gemkit's gopls runs
	// in its sandbox with a build cache of its own (the reference's
	// uses the person's, as cclsp's gopls does), and a measured start is
	// the start of a person who asked a question once before.
	for _, which := range kinds[:len(kinds)-1] {
		start := e.startGemkit
		if which == "ref" {
			start = e.startRef
		}
		s, err := start()
		if err != nil {
			return err
		}
		for t0 := time.Now(); time.Since(t0) < time.Minute; {
			if text, err := s.call("code_definition", gemkitDefByName); err == nil && gemkitDefOK(text) {
				break
			}
		}
		s.Close()
		if err := e.waitNoBroker(); err != nil {
			return err
		}
	}
	for i := range starts {
		for _, which := range kinds {
			if i == 0 && which == "gemkit" {
				// A first gopls start fills the build cache for both.
				if err := e.waitNoBroker(); err != nil {
					return err
				}
			}
			var s *server
			var err error
			t0 := time.Now()
			switch which {
			case "gemkit":
				s, err = e.startGemkit()
			case "ref":
				s, err = e.startRef()
			default:
				s, err = e.startCclsp()
			}
			if err != nil {
				return err
			}
			ok := false
			for time.Since(t0) < time.Minute {
				var text string
				if which != "cclsp" {
					text, err = s.call("code_definition", gemkitDefByName)
					ok = err == nil && gemkitDefOK(text)
				} else {
					text, err = s.call("find_definition", cclspDef)
					ok = err == nil && cclspDefOK(text)
				}
				if ok {
					break
				}
			}
			d := time.Since(t0)
			s.Close()
			if !ok {
				return fmt.Errorf("%s gave no correct definition within a minute", which)
			}
			if which != "cclsp" {
				if which == "gemkit" {
					res.gemkitStart = append(res.gemkitStart, d)
				} else {
					res.refStart = append(res.refStart, d)
				}
				if err := e.waitNoBroker(); err != nil {
					return err
				}
			} else {
				res.cclspStart = append(res.cclspStart, d)
				e.killLeft()
			}
		}
	}
	return nil
}

// waitNoBroker waits until the workspace's broker has gone (its last
// client went), so that the next start is cold.
func (e *env) waitNoBroker() error {
	deadline := time.Now().Add(30 * time.Second)
	for len(e.brokers()) > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("the broker did not end after its last client went")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// brokers are the running brokers of the workspace.
func (e *env) brokers() []int {
	var out []int
	for _, p := range allProcs() {
		if strings.Contains(p.cmdline, "codeintel\x00broker\x00--workspace\x00"+e.ws+"\x00") {
			out = append(out, p.pid)
		}
	}
	return out
}

// killLeft ends the gopls processes cclsp left running in the workspace
// (it does not end them when its client goes: a fault counted apart).
func (e *env) killLeft() {
	for _, p := range allProcs() {
		if p.cwd == e.ws && (p.comm == "gopls" || p.comm == "node") {
			syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
	time.Sleep(200 * time.Millisecond)
}
