//go:build linux

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/lspclient"
)

// Warm calls, interleaved so that the machine's load falls alike on
// every server measured.

// warm measures warm calls: gemkit and cclsp through MCP, gopls asked
// directly.
func (e *env) warm(n int, res *results) error {
	g, err := e.startGemkit()
	if err != nil {
		return err
	}
	defer func() { g.Close(); e.waitNoBroker() }()
	c, err := e.startCclsp()
	if err != nil {
		return err
	}
	defer func() { c.Close(); e.killLeft() }()
	var r *server
	if e.ref != "" {
		if r, err = e.startRef(); err != nil {
			return err
		}
		defer func() { r.Close(); e.waitNoBroker() }()
		for range 3 {
			r.call("code_definition", gemkitDefByName)
			r.call("code_definition", gemkitDefByPos)
		}
	}
	warmUp(g, c)
	ctx := context.Background()
	dc, err := lspclient.Start(ctx, lspclient.Config{Name: "gopls", Command: []string{e.gopls}, Dir: e.ws})
	if err != nil {
		return err
	}
	defer dc.Shutdown(ctx)
	d := openDirect(ctx, dc, e.ws)
	// Interleaved, so that every figure sees the same load, and in a new
	// order each round (the same orders every run): a question asked
	// right after another kind of question pays for the switch (caches of
	// gopls, of the processes between), and a fixed order would charge
	// that to the same figures every round.
	order := rand.New(rand.NewPCG(1, 2))
	for range n {
		steps := warmSteps(ctx, res, g, c, d)
		if r != nil {
			steps = append(steps,
				toolStep(&res.refDefPos, r, "code_definition", gemkitDefByPos, "reference gemkit code_definition by position", gemkitDefOK),
				toolStep(&res.refDefName, r, "code_definition", gemkitDefByName, "reference gemkit code_definition by name", gemkitDefOK))
		}
		order.Shuffle(len(steps), func(i, j int) { steps[i], steps[j] = steps[j], steps[i] })
		for _, s := range steps {
			if err := s(); err != nil {
				return err
			}
		}
	}
	return nil
}

// warmUp asks gemkit and cclsp each question three times before any is
// timed.
func warmUp(g, c *server) {
	for range 3 {
		g.call("code_definition", gemkitDefByName)
		g.call("code_definition", gemkitDefByPos)
		g.call("code_references", gemkitRefsByPos)
		g.call("code_references", gemkitFewByPos)
		c.call("find_references", cclspFew)
		c.call("find_definition", cclspDef)
		c.call("find_references", cclspRefs)
		g.call("code_hover", gemkitHoverByPos)
		g.call("code_hover", gemkitHoverByName)
		g.call("code_implementations", gemkitImplByPos)
		g.call("code_implementations", gemkitImplByName)
		c.call("get_hover", cclspHover)
		c.call("find_implementation", cclspImpl)
	}
}

// direct is gopls asked directly, with the places the questions are
// about: a use of Greet, its declaration, Store.Total and the Greeter
// interface.
type direct struct {
	goplsDirect
	use, decl, total, iface codeintel.DocPos
}

// openDirect opens the workspace's files in gopls and warms it up with
// each question three times.
func openDirect(ctx context.Context, dc *lspclient.Client, ws string) direct {
	main, greet := filepath.Join(ws, "main.go"), filepath.Join(ws, "greet", "greet.go")
	dc.Open(main, "go")
	dc.Open(greet, "go")
	store := filepath.Join(ws, "store", "store.go")
	dc.Open(store, "go")
	d := direct{
		goplsDirect: goplsDirect{dc},
		use:         codeintel.DocPos{Path: main, Pos: codeintel.Position{Line: 14, Character: 19}},
		decl:        codeintel.DocPos{Path: greet, Pos: codeintel.Position{Line: 15, Character: 5}},
		total:       codeintel.DocPos{Path: store, Pos: codeintel.Position{Line: 29, Character: 16}},
		iface:       codeintel.DocPos{Path: greet, Pos: codeintel.Position{Line: 4, Character: 5}},
	}
	for range 3 {
		d.Definition(ctx, d.use)
		d.References(ctx, d.decl)
		d.Hover(ctx, d.decl)
		d.Implementations(ctx, d.iface)
	}
	return d
}

// timeIt runs f and, when it succeeds, adds how long it took to dst.
func timeIt(dst *[]time.Duration, f func() error) error {
	t0 := time.Now()
	if err := f(); err != nil {
		return err
	}
	*dst = append(*dst, time.Since(t0))
	return nil
}

// checkAnswer fails a run whose answer is wrong: a fast wrong answer
// must not count as a fast one.
func checkAnswer(ok bool, what, got string) error {
	if !ok {
		return fmt.Errorf("%s answered wrongly: %.300s", what, got)
	}
	return nil
}

// toolStep is one timed call of an MCP tool, checked with ok; what
// names it when its answer is wrong.
func toolStep(dst *[]time.Duration, s *server, name string, args map[string]any, what string, ok func(string) bool) func() error {
	return func() error {
		return timeIt(dst, func() error {
			text, err := s.call(name, args)
			if err != nil {
				return err
			}
			return checkAnswer(ok(text), what, text)
		})
	}
}

// contains is the check of an answer that holds sub.
func contains(sub string) func(string) bool {
	return func(s string) bool { return strings.Contains(s, sub) }
}

// warmSteps is one round's timed questions, in the order the shuffle
// starts from.
func warmSteps(ctx context.Context, res *results, g, c *server, d direct) []func() error {
	return []func() error{
		toolStep(&res.gemkitHover, g, "code_hover", gemkitHoverByPos, "code_hover", hoverOK),
		toolStep(&res.gemkitHoverName, g, "code_hover", gemkitHoverByName, "code_hover", hoverOK),
		toolStep(&res.cclspHover, c, "get_hover", cclspHover, "get_hover", hoverOK),
		func() error {
			return timeIt(&res.goplsHover, func() error {
				h, err := d.Hover(ctx, d.decl)
				if err == nil && !hoverOK(h.Text) {
					err = fmt.Errorf("gopls hover: %q", h.Text)
				}
				return err
			})
		},
		toolStep(&res.gemkitImpl, g, "code_implementations", gemkitImplByPos, "code_implementations", implOK),
		toolStep(&res.gemkitImplName, g, "code_implementations", gemkitImplByName, "code_implementations", implOK),
		toolStep(&res.cclspImpl, c, "find_implementation", cclspImpl, "find_implementation", implOK),
		func() error {
			return timeIt(&res.goplsImpl, func() error {
				l, err := d.Implementations(ctx, d.iface)
				if err == nil && (len(l) != 1 || l[0].Range.Start.Line != 9) {
					err = fmt.Errorf("gopls implementations: %+v", l)
				}
				return err
			})
		},
		toolStep(&res.gemkitDefPos, g, "code_definition", gemkitDefByPos, "gemkit code_definition by position", gemkitDefOK),
		toolStep(&res.gemkitDefName, g, "code_definition", gemkitDefByName, "gemkit code_definition by name", gemkitDefOK),
		toolStep(&res.gemkitRefs, g, "code_references", gemkitRefsByPos, "gemkit code_references", contains("references to")),
		toolStep(&res.cclspDef, c, "find_definition", cclspDef, "cclsp find_definition", cclspDefOK),
		toolStep(&res.cclspRefs, c, "find_references", cclspRefs, "cclsp find_references", contains("main.go")),
		func() error {
			return timeIt(&res.gemkitPing, func() error { _, err := g.Request("ping", map[string]any{}); return err })
		},
		func() error {
			return timeIt(&res.cclspPing, func() error { _, err := c.Request("ping", map[string]any{}); return err })
		},
		func() error {
			return timeIt(&res.goplsDef, func() error {
				l, err := d.Definition(ctx, d.use)
				if err == nil && (len(l) != 1 || l[0].Range.Start.Line != 15) {
					err = fmt.Errorf("gopls definition: %+v", l)
				}
				return err
			})
		},
		func() error {
			return timeIt(&res.goplsRefs, func() error {
				_, err := d.References(ctx, d.decl)
				return err
			})
		},
		toolStep(&res.gemkitFew, g, "code_references", gemkitFewByPos, "gemkit code_references of Store.Total", contains("2 references to")),
		toolStep(&res.cclspFew, c, "find_references", cclspFew, "cclsp find_references of Total", contains("main.go")),
		func() error {
			return timeIt(&res.goplsFew, func() error {
				l, err := d.References(ctx, d.total)
				if err == nil && len(l) != 2 {
					err = fmt.Errorf("gopls references of Total: %+v", l)
				}
				return err
			})
		},
	}
}
