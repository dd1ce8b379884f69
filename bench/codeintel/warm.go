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
	// Warm both up.
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
	ctx := context.Background()
	dc, err := lspclient.Start(ctx, lspclient.Config{Name: "gopls", Command: []string{e.gopls}, Dir: e.ws})
	if err != nil {
		return err
	}
	defer dc.Shutdown(ctx)
	direct := goplsDirect{dc}
	main, greet := filepath.Join(e.ws, "main.go"), filepath.Join(e.ws, "greet", "greet.go")
	dc.Open(main, "go")
	dc.Open(greet, "go")
	store := filepath.Join(e.ws, "store", "store.go")
	dc.Open(store, "go")
	use := codeintel.DocPos{Path: main, Pos: codeintel.Position{Line: 14, Character: 19}}
	decl := codeintel.DocPos{Path: greet, Pos: codeintel.Position{Line: 15, Character: 5}}
	total := codeintel.DocPos{Path: store, Pos: codeintel.Position{Line: 29, Character: 16}}
	iface := codeintel.DocPos{Path: greet, Pos: codeintel.Position{Line: 4, Character: 5}}
	for range 3 {
		direct.Definition(ctx, use)
		direct.References(ctx, decl)
		direct.Hover(ctx, decl)
		direct.Implementations(ctx, iface)
	}

	timeIt := func(dst *[]time.Duration, f func() error) error {
		t0 := time.Now()
		if err := f(); err != nil {
			return err
		}
		*dst = append(*dst, time.Since(t0))
		return nil
	}
	check := func(ok bool, what, got string) error {
		if !ok {
			return fmt.Errorf("%s answered wrongly: %.300s", what, got)
		}
		return nil
	}
	tool := func(dst *[]time.Duration, s *server, name string, args map[string]any, ok func(string) bool) func() error {
		return func() error {
			return timeIt(dst, func() error {
				text, err := s.call(name, args)
				if err != nil {
					return err
				}
				return check(ok(text), name, text)
			})
		}
	}
	// Interleaved, so that every figure sees the same load, and in a new
	// order each round (the same orders every run): a question asked
	// right after another kind of question pays for the switch (caches of
	// gopls, of the processes between), and a fixed order would charge
	// that to the same figures every round.
	order := rand.New(rand.NewPCG(1, 2))
	for range n {
		steps := []func() error{
			tool(&res.gemkitHover, g, "code_hover", gemkitHoverByPos, hoverOK),
			tool(&res.gemkitHoverName, g, "code_hover", gemkitHoverByName, hoverOK),
			tool(&res.cclspHover, c, "get_hover", cclspHover, hoverOK),
			func() error {
				return timeIt(&res.goplsHover, func() error {
					h, err := direct.Hover(ctx, decl)
					if err == nil && !hoverOK(h.Text) {
						err = fmt.Errorf("gopls hover: %q", h.Text)
					}
					return err
				})
			},
			tool(&res.gemkitImpl, g, "code_implementations", gemkitImplByPos, implOK),
			tool(&res.gemkitImplName, g, "code_implementations", gemkitImplByName, implOK),
			tool(&res.cclspImpl, c, "find_implementation", cclspImpl, implOK),
			func() error {
				return timeIt(&res.goplsImpl, func() error {
					l, err := direct.Implementations(ctx, iface)
					if err == nil && (len(l) != 1 || l[0].Range.Start.Line != 9) {
						err = fmt.Errorf("gopls implementations: %+v", l)
					}
					return err
				})
			},
			func() error {
				return timeIt(&res.gemkitDefPos, func() error {
					s, err := g.call("code_definition", gemkitDefByPos)
					if err != nil {
						return err
					}
					return check(gemkitDefOK(s), "gemkit code_definition by position", s)
				})
			},
			func() error {
				return timeIt(&res.gemkitDefName, func() error {
					s, err := g.call("code_definition", gemkitDefByName)
					if err != nil {
						return err
					}
					return check(gemkitDefOK(s), "gemkit code_definition by name", s)
				})
			},
			func() error {
				return timeIt(&res.gemkitRefs, func() error {
					s, err := g.call("code_references", gemkitRefsByPos)
					if err != nil {
						return err
					}
					return check(strings.Contains(s, "references to"), "gemkit code_references", s)
				})
			},
			func() error {
				return timeIt(&res.cclspDef, func() error {
					s, err := c.call("find_definition", cclspDef)
					if err != nil {
						return err
					}
					return check(cclspDefOK(s), "cclsp find_definition", s)
				})
			},
			func() error {
				return timeIt(&res.cclspRefs, func() error {
					s, err := c.call("find_references", cclspRefs)
					if err != nil {
						return err
					}
					return check(strings.Contains(s, "main.go"), "cclsp find_references", s)
				})
			},
			func() error {
				return timeIt(&res.gemkitPing, func() error { _, err := g.Request("ping", map[string]any{}); return err })
			},
			func() error {
				return timeIt(&res.cclspPing, func() error { _, err := c.Request("ping", map[string]any{}); return err })
			},
			func() error {
				return timeIt(&res.goplsDef, func() error {
					l, err := direct.Definition(ctx, use)
					if err == nil && (len(l) != 1 || l[0].Range.Start.Line != 15) {
						err = fmt.Errorf("gopls definition: %+v", l)
					}
					return err
				})
			},
			func() error {
				return timeIt(&res.goplsRefs, func() error {
					_, err := direct.References(ctx, decl)
					return err
				})
			},
			func() error {
				return timeIt(&res.gemkitFew, func() error {
					s, err := g.call("code_references", gemkitFewByPos)
					if err != nil {
						return err
					}
					return check(strings.Contains(s, "2 references to"), "gemkit code_references of Store.Total", s)
				})
			},
			func() error {
				return timeIt(&res.cclspFew, func() error {
					s, err := c.call("find_references", cclspFew)
					if err != nil {
						return err
					}
					return check(strings.Contains(s, "main.go"), "cclsp find_references of Total", s)
				})
			},
			func() error {
				return timeIt(&res.goplsFew, func() error {
					l, err := direct.References(ctx, total)
					if err == nil && len(l) != 2 {
						err = fmt.Errorf("gopls references of Total: %+v", l)
					}
					return err
				})
			},
		}
		if r != nil {
			steps = append(steps, func() error {
				return timeIt(&res.refDefPos, func() error {
					s, err := r.call("code_definition", gemkitDefByPos)
					if err != nil {
						return err
					}
					return check(gemkitDefOK(s), "reference gemkit code_definition by position", s)
				})
			}, func() error {
				return timeIt(&res.refDefName, func() error {
					s, err := r.call("code_definition", gemkitDefByName)
					if err != nil {
						return err
					}
					return check(gemkitDefOK(s), "reference gemkit code_definition by name", s)
				})
			})
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
