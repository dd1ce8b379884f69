package extmcp

import (
	"context"
	"fmt"
	"sync"

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
	c, what, err := s.listRunning(lctx, r)
	s.mu.Lock()
	if err != nil {
		if ctx.Err() != nil {
			// Not the server's bound: what waited for the listing went.
			return Catalog{}, &stopped{fmt.Sprintf("%s was not listed: %s", s.who(), stoppedWhileStarting)}
		}
		if s.ended() {
			return Catalog{}, &stopped{fmt.Sprintf("%s was not listed: %s", s.who(), stoppedForGood)}
		}
		if lctx.Err() != nil {
			return Catalog{}, s.failure("did not list its " + what + " within " + s.startTimeout().String())
		}
		return Catalog{}, s.failure("could not list its " + what + ": " + oneLine(err.Error()))
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

// listRunning lists r's catalog; on failure it says which list failed.
// The lists are asked at once, not one after the other: a server that
// has just started is listed before the call that started it goes on,
// and each round trip waited for the one before.
func (s *server) listRunning(ctx context.Context, r *running) (Catalog, string, error) {
	var c Catalog
	items := func(list func(context.Context) ([]mcpclient.Item, error)) ([]Item, error) {
		got, err := list(ctx)
		out := make([]Item, 0, len(got))
		for _, it := range got {
			out = append(out, Item{Spec: s.spec, Item: it})
		}
		return out, err
	}
	var wg sync.WaitGroup
	var perr, rerr, terr error
	if r.caps.Prompts {
		wg.Go(func() { c.Prompts, perr = items(r.client.ListPrompts) })
	}
	if r.caps.Resources {
		wg.Go(func() { c.Resources, rerr = items(r.client.ListResources) })
		wg.Go(func() { c.Templates, terr = items(r.client.ListResourceTemplates) })
	}
	tools, err := r.client.ListTools(ctx)
	wg.Wait()
	if err != nil {
		return c, "tools", err
	}
	for _, t := range tools {
		c.Tools = append(c.Tools, Tool{Spec: s.spec, Tool: t})
	}
	switch {
	case perr != nil:
		return c, "prompts", perr
	case rerr != nil:
		return c, "resources", rerr
	case terr != nil:
		return c, "resource templates", terr
	}
	return c, "", nil
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
