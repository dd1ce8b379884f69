package extmcp

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gemkit/gemkit/internal/mcpclient"
)

// Tool is one tool of a server.
type Tool struct {
	Spec Spec
	mcpclient.Tool
}

// Item is one prompt, resource or resource template of a server, as the
// server listed it.
type Item struct {
	Spec Spec
	mcpclient.Item
}

// Catalog is what servers offer: their tools, prompts, resources and
// resource templates. A server lists the last three only when its
// initialize answer declares them.
type Catalog struct {
	Tools     []Tool
	Prompts   []Item
	Resources []Item
	Templates []Item
}

func (c *Catalog) add(o Catalog) {
	c.Tools = append(c.Tools, o.Tools...)
	c.Prompts = append(c.Prompts, o.Prompts...)
	c.Resources = append(c.Resources, o.Resources...)
	c.Templates = append(c.Templates, o.Templates...)
}

// Failure is a server whose catalog could not be listed, with why in
// words.
type Failure struct {
	Spec Spec
	Err  error
}

// Catalog lists what every server offers, starting those not listed yet
// (at once, each bounded by its start timeout) and listing again those
// that said a list of theirs changed. A server that cannot start or list
// is a Failure and adds nothing; the others are listed all the same.
func (m *Manager) Catalog(ctx context.Context) (Catalog, []Failure) {
	all := m.all()
	type answer struct {
		c   Catalog
		err error
	}
	answers := make([]answer, len(all))
	var wg sync.WaitGroup
	for i, s := range all {
		wg.Go(func() {
			c, err := s.list(ctx)
			answers[i] = answer{c, err}
		})
	}
	wg.Wait()
	var out Catalog
	var failed []Failure
	for i, s := range all {
		if answers[i].err != nil {
			failed = append(failed, Failure{s.spec, answers[i].err})
			continue
		}
		out.add(answers[i].c)
	}
	return out, failed
}

// Tools lists the tools of every server, as Catalog does.
func (m *Manager) Tools(ctx context.Context) ([]Tool, []Failure) {
	c, failed := m.Catalog(ctx)
	return c.Tools, failed
}

// list returns the server's catalog, starting it to list it once (and
// again after it said a list changed), or answering from its kept
// catalog the first time (kept.go).
func (s *server) list(ctx context.Context) (Catalog, error) {
	s.listing.Lock()
	s.mu.Lock()
	unlock := func() { s.mu.Unlock(); s.listing.Unlock() }
	if err := s.cache.takeConfirmErr(); err != nil {
		unlock()
		return Catalog{}, err
	}
	if c, ok := s.cache.fresh(); ok {
		unlock()
		return c, nil
	}
	if c, v, ok := s.fromKept(); ok {
		// The start behind the answer (confirm) takes s.listing and
		// s.mu at once: it starts the server while the answer waits for
		// the consent check.
		unlock()
		if err := v.wait(ctx); err != nil {
			return Catalog{}, err
		}
		return c, nil
	}
	defer unlock()
	// A change said from here on is listed again next time.
	s.cache.stale.Store(false)
	return s.listNow(ctx)
}

// listNow lists the server, starting it when it is not running, and
// keeps what it listed. The caller holds s.listing and s.mu; s.mu is let
// go across the lists' round trips, so that a call reaches the server
// meanwhile rather than wait for the listing: a client calls a tool it
// listed before the server was started again (after a widening, or a
// change of its extension), and a server slow to list would keep the
// call waiting up to the start timeout, only to answer it after.
func (s *server) listNow(ctx context.Context) (Catalog, error) {
	r, err := s.ensure(ctx)
	if err != nil {
		s.keepFailure(err)
		return Catalog{}, err
	}
	waits := func() bool { return s.queued.Load() > 0 || (unwaited(ctx) && s.early.Load() > 0) }
	if waits() {
		// The requests waiting for s.mu (the client's first call, which
		// an answer from the kept catalog let it send while the server
		// started) get the server before the listing: a server answers
		// in the order it reads, and a node server just started took
		// tens of milliseconds over its four lists (server-everything
		// at load 29: four lists and a call 182 ms, the call alone 51
		// ms), which the call waited behind. The listing goes on once
		// each of them has written its request (request); one that no
		// client waits for (Background: the listing behind a kept
		// answer, and again after a server said a list changed) once
		// those begun before the server ran are answered, since a node
		// server answers a call after the lists it read at once with it.
		for waits() {
			s.passed.Wait()
		}
		if c, ok := s.cache.fresh(); ok {
			return c, nil
		}
		if r, err = s.ensure(ctx); err != nil {
			return Catalog{}, err
		}
	}
	lctx, cancel := context.WithTimeout(ctx, s.startTimeout())
	defer cancel()
	s.mu.Unlock()
	c, err := s.listRunning(lctx, r)
	s.mu.Lock()
	if err != nil {
		if ctx.Err() != nil {
			// Not the server's bound: what waited for the listing went.
			return Catalog{}, &stopped{fmt.Sprintf("%s was not listed: %s", s.who(), stoppedWhileStarting)}
		}
		if s.ended() {
			return Catalog{}, &stopped{fmt.Sprintf("%s was not listed: %s", s.who(), stoppedForGood)}
		}
		err = s.failure("could not list its tools: " + oneLine(err.Error()))
		if lctx.Err() != nil {
			err = s.failure("did not list its tools within " + s.startTimeout().String())
		}
		s.keepFailure(err)
		return Catalog{}, err
	}
	s.cache.set(c)
	s.touch()
	s.keep(c)
	return c, nil
}

// backgroundKey marks the context of a listing no client waits for.
type backgroundKey struct{}

// Background returns ctx for a listing that no client waits for (the
// servers listed again after one said a list of its changed): it lets
// the requests begun before the server ran be answered first.
func Background(ctx context.Context) context.Context {
	return context.WithValue(ctx, backgroundKey{}, true)
}

func unwaited(ctx context.Context) bool { return ctx.Value(backgroundKey{}) != nil }

// A server is served when it answers initialize and tools/list: its
// prompts, resources and resource templates are listed when its
// initialize answer declares them, and one it cannot list (it answers
// an error, -32601 Method not found among them, or nothing in time) is
// simply not offered, for the rest of its run. mcp-server-kubernetes
// 4.1.7 declares resources and answers resources/templates/list with
// Method not found, and gemkit served none of its 23 tools where Gemini
// CLI serves them all: Gemini CLI 0.61 never asks for resource
// templates, and takes Method not found to prompts/list or
// resources/list for none (discoverPrompts and listResources in
// dist/src/tools/mcp-client.js of @google/gemini-cli-core). gemkit takes
// any failure of an optional list so: a server's tools do not depend on
// its other lists, and the tools are what the agents use.

// optionalWait bounds the wait for a server's optional lists once its
// tools are in, and its other optional requests (logging/setLevel, the
// subscriptions given again as it starts): a quarter of the start's
// bound, at most 5 s. They were sent with tools/list, and a server
// answers what it has in the order it reads; one that never answers a
// method costs its first listing this long, not the start's whole bound
// (which the clients' own first tools/list may not wait for).
func (s *server) optionalWait() time.Duration { return min(5*time.Second, s.startTimeout()/4) }

// optionalList is one of a server's lists beyond its tools.
type optionalList struct {
	method string // its MCP method, as lacking names it
	list   func(context.Context) ([]mcpclient.Item, error)
	into   *[]Item
}

// listRunning lists r's catalog: its tools, and the optional lists it
// declares and has not been found lacking. The lists are asked at once,
// not one after the other: a server that has just started is listed
// before the call that started it goes on, and each round trip waited
// for the one before. The error is the tools' alone.
func (s *server) listRunning(ctx context.Context, r *running) (Catalog, error) {
	var c Catalog
	var lists []optionalList
	if r.caps.Prompts {
		lists = append(lists, optionalList{"prompts/list", r.client.ListPrompts, &c.Prompts})
	}
	if r.caps.Resources {
		lists = append(lists, optionalList{"resources/list", r.client.ListResources, &c.Resources},
			optionalList{"resources/templates/list", r.client.ListResourceTemplates, &c.Templates})
	}
	type answer struct {
		items []mcpclient.Item
		err   error
	}
	octx, stop := context.WithCancel(ctx)
	defer stop()
	answers := make([]chan answer, len(lists))
	for i, l := range lists {
		if r.lacks.has(l.method) {
			continue
		}
		answers[i] = make(chan answer, 1)
		go func() {
			items, err := l.list(octx)
			answers[i] <- answer{items, err}
		}()
	}
	tools, err := r.client.ListTools(ctx)
	if err != nil {
		return c, err
	}
	for _, t := range tools {
		c.Tools = append(c.Tools, Tool{Spec: s.spec, Tool: t})
	}
	wait := time.NewTimer(s.optionalWait())
	defer wait.Stop()
	late := fmt.Errorf("no answer within %v of its tools", s.optionalWait())
	expired := false
	for i, l := range lists {
		if answers[i] == nil {
			continue
		}
		var a answer
		got := false
		if !expired {
			select {
			case a = <-answers[i]:
				got = true
			case <-wait.C:
				expired = true
			case <-ctx.Done():
				if ctx.Err() == context.Canceled {
					// What waited for the listing went.
					return c, ctx.Err()
				}
				expired = true
			}
		}
		if !got {
			// Once the wait is over, the lists left are taken as they
			// are.
			select {
			case a = <-answers[i]:
			default:
				a.err = late
			}
		}
		if a.err != nil {
			s.lacking(r, l.method, a.err)
			continue
		}
		for _, it := range a.items {
			*l.into = append(*l.into, Item{Spec: s.spec, Item: it})
		}
	}
	return c, nil
}

// lacking records that r lacks the optional method, which failed with
// err: it is not asked again in this run, and what it would list is not
// offered. Said once per run, in the log (the clients never see it).
func (s *server) lacking(r *running, method string, err error) {
	if r.lacks.add(method) {
		s.m.log.Debug("an extension's MCP server lacks an optional method of MCP; what it would give is not offered", "extension", s.spec.Extension, "server", s.spec.Label(), "method", method, "err", oneLine(err.Error()))
	}
}

// lacks are the optional methods a run of a server was found to lack.
type lacks struct {
	mu sync.Mutex
	m  map[string]bool
}

func (l *lacks) has(method string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[method]
}

// add records method, and reports whether it was not recorded yet.
func (l *lacks) add(method string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m[method] {
		return false
	}
	if l.m == nil {
		l.m = map[string]bool{}
	}
	l.m[method] = true
	return true
}

// Fresh waits for the fresh tools of the server key, when it runs or is
// being started or listed, bounded by ctx and the server's call timeout:
// a call of a tool the server gained since gemkit mcp last listed it
// (its first listing comes from the kept catalog, and the start behind
// it lists the new tool a moment later) is not answered "unknown tool"
// before the server's own list is in. ok is false when the server
// neither runs nor is being listed (nothing is started for it), or its
// list did not come in time; err is why the server could not list.
func (m *Manager) Fresh(ctx context.Context, key string) (tools []Tool, ok bool, err error) {
	m.mu.Lock()
	s := m.servers[key]
	m.mu.Unlock()
	if s == nil {
		return nil, false, nil
	}
	busy := !s.listing.TryLock()
	if !busy {
		s.listing.Unlock()
	}
	if !busy && !s.proc.up.Load() {
		return nil, false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	type answer struct {
		c   Catalog
		ok  bool
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		// After the listing under way, if any.
		s.listing.Lock()
		defer s.listing.Unlock()
		s.mu.Lock()
		defer s.mu.Unlock()
		if c, ok := s.cache.fresh(); ok {
			ch <- answer{c: c, ok: true}
			return
		}
		if s.cache.confirmErr != nil {
			// Left for the next listing, which says it too.
			ch <- answer{err: s.cache.confirmErr}
			return
		}
		if s.proc.run == nil || s.proc.gone || ctx.Err() != nil {
			ch <- answer{}
			return
		}
		s.cache.stale.Store(false)
		c, err := s.listNow(ctx)
		if err != nil {
			// The change it said is still to be listed.
			s.cache.stale.Store(true)
		}
		ch <- answer{c: c, ok: err == nil, err: err}
	}()
	select {
	case a := <-ch:
		return a.c.Tools, a.ok, a.err
	case <-ctx.Done():
		return nil, false, nil
	}
}
