package extmcp

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/pkgrun"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// Which extensions' servers gemkit mcp serves, and whether one may start
// now, is the policy below: the command (gemkit mcp) only names the
// store, the person's home folder, and whether every enabled
// extension's servers are served. It stands here, beside the servers it
// governs, rather than in package extension: it joins what extension
// knows (consent, the person's choices, the pinned trees) with what only
// the servers have (their data folders, DataRoot, which belong to the
// folders a program other than the person may write; the Choice the
// Manager takes), and extension stays below both.

// Policy decides which extensions' MCP servers are served, and with
// what.
type Policy struct {
	Store *extension.Store
	// Home is the person's home folder: the folders an installed
	// extension's tools may write and the servers' data folders are
	// found from it.
	Home string
	// All serves the servers of every enabled extension
	// (--extension-servers), not only of those switched to gemkit.
	All bool
}

// AgreeCommand is the command by which the person agrees to the
// extension name as it is now.
func AgreeCommand(name string) string { return "gemkit extensions consent " + name + " --grant" }

// Choose serves the MCP servers of the extensions switched to gemkit
// (`gemkit extensions sandbox NAME`), or with All of every enabled one,
// stdio and remote ones alike (the switch takes both from Gemini CLI),
// with the widening the person allowed; each server starts only while
// the person's consent to its extension as it is now holds (checked at
// each start: it hashes the extension's files).
func (p Policy) Choose() Choose {
	choices := &choiceCache{st: p.Store}
	return func(e *disclosure.Extension) Choice {
		name := e.Name
		c, err := choices.get(name)
		if err != nil {
			return Choice{Why: err.Error()}
		}
		// An Agent Plugins plugin's servers run nowhere else: gemkit mcp
		// serves them from its install on, under the consent given
		// then (internal/extension/plugin.go).
		if !c.Switched && !p.All && !e.Ext.IsPlugin() {
			return Choice{Why: "its servers are not switched to gemkit (gemkit extensions sandbox " + name + ")"}
		}
		allowed := func() error { return p.allowed(e.Ext, name, c) }
		agreed := func() string { return p.Store.AgreedCopy(e.Ext) }
		keep := func() error {
			_, err := p.Store.KeepAgreedCopy(context.Background(), e.Ext)
			return err
		}
		// A pinned package's tree lies in gemkit's data folder, beside
		// the copy, which any process of the person's may write: it is
		// checked at every start, from the copy too.
		tree := func(label string) error {
			pin, ok := c.Packages[label]
			if !ok {
				return nil
			}
			return CheckPinnedTree(p.Store, name, label, pin)
		}
		return Choice{Widening: c.Widening, Allowed: allowed, Agreed: agreed, Keep: keep, Agents: c.Switched, Workspace: p.Store.Workspace(), Packages: c.Packages, Handed: c.Handed, Tree: tree}
	}
}

// allowed says why the servers of ext (named name), chosen as c, may not
// start now: consent to it as it is now must hold and bind its files,
// and so must the trees its package-runner servers run from.
func (p Policy) allowed(ext *extension.Extension, name string, c extension.ServerChoice) error {
	st := p.Store
	state, err := st.Consent(ext)
	if err != nil {
		return fmt.Errorf("consent to its extension cannot be checked: %w", err)
	}
	var links []extension.CopiedLink
	if state.Unbound != nil {
		links = CopiedLinks(st, ext, state)
	}
	if err := NotServed(state, name, links); err != nil {
		return err
	}
	return CheckPinnedTrees(st, name, c)
}

// Writable are the folders some sandboxed tool or server may write and
// the shared temporary folders: a link of an extension's folder into one
// of them names code that consent to the extension does not bind. They
// are what a tool run distrusts (permission.Untrusted: the workspace,
// and the home folder when an installed extension's tools may write it),
// with the servers' data folders, which only servers write. The
// installed extensions are listed at each server start, which is rare
// beside the start itself.
func (p Policy) Writable() []string {
	st := p.Store
	var writes []permission.Access
	if list, err := st.List(); err == nil {
		for _, in := range list {
			if m := in.Manifest(); m != nil {
				writes = append(writes, m.EffectivePermissions().Filesystem.Write)
			}
		}
	}
	var out []string
	for _, d := range permission.Untrusted(st.Workspace(), p.Home, writes) {
		if d != "" {
			out = append(out, d)
		}
	}
	out = append(out, toolrun.SharedTemp()...)
	if data, err := DataRoot(map[string]string{"HOME": p.Home}); err == nil {
		out = append(out, data)
	}
	return out
}

// WithWritable is the store with Writable known to its consent checks,
// so that every command takes the one check the start of a server makes
// (extension.Store.CheckFiles).
func (p Policy) WithWritable() *extension.Store {
	return p.Store.WithWritable(p.Writable)
}

// NotServed says why gemkit mcp does not start the servers of the
// extension name, whose consent stands as state (Store.Consent), in
// words with the fix; nil when it does. The start, the switch, list,
// describe and doctor all say it the same way. links are the extension's
// links a copy made absolute (CopiedLinks): when they are all that keeps
// consent from binding its files, the fix is the command that makes them
// relative again.
func NotServed(state extension.ConsentState, name string, links []extension.CopiedLink) error {
	hint := "`" + AgreeCommand(name) + "`"
	switch {
	case state.Unbound != nil && len(links) > 0 && extension.WithoutCopied(state.Unbound, links) == nil:
		return fmt.Errorf("%s Run %s: it makes them relative again once you agree", extension.Printable(extension.CopiedLinksWords(links)), hint)
	case state.Unbound != nil:
		// As for a tool: the bytes the server runs must be those the
		// digest read, not a file with another name, or behind a link,
		// that a program may rewrite meanwhile.
		return state.Unbound
	case state.FilesChanged && state.Notice != "":
		return fmt.Errorf("you agreed to the extension %s as it was, not as it is now. %s Then agree to it as it is now: %s", extension.Printable(name), extension.Printable(state.Notice), hint)
	case !state.Granted:
		return fmt.Errorf("you have not agreed to the extension %s as it is now (its servers and what they may do included); run %s", extension.Printable(name), hint)
	}
	return nil
}

// CopiedLinks are the links of ext, as state read it, that Gemini CLI's
// install made absolute into the folder it copied
// (extension.CopiedLinks); none for a linked extension, which is no
// copy.
func CopiedLinks(st *extension.Store, ext *extension.Extension, state extension.ConsentState) []extension.CopiedLink {
	in, err := st.Get(ext.Manifest.Name)
	if err != nil || in.Metadata == nil || in.Metadata.Type == extension.SourceLink || state.Content.Digest == "" {
		return nil
	}
	from := ""
	if in.Metadata.Type == extension.SourceLocal {
		from = in.Metadata.Source
	}
	links, err := extension.CopiedLinks(ext.Dir, state.Content, from)
	if err != nil {
		return nil
	}
	return links
}

// CheckPinnedTrees checks, at a server's start, that each tree pinned
// for the servers of the extension name (chosen as c) is still the one
// the person agreed to (CheckPinnedTree).
func CheckPinnedTrees(st *extension.Store, name string, c extension.ServerChoice) error {
	for _, server := range sortedKeys(c.Packages) {
		if err := CheckPinnedTree(st, name, server, c.Packages[server]); err != nil {
			return err
		}
	}
	return nil
}

// CheckPinnedTree says whether the tree pinned as p for the server
// (by its label) of the extension name is the one the person agreed to
// (PinnedTreeChanged), nil when it is; else why, with the fix.
func CheckPinnedTree(st *extension.Store, name, server string, p extension.Pin) error {
	err := PinnedTreeChanged(st, name, p)
	if err == nil {
		return nil
	}
	var be *extension.BindError
	if errors.As(err, &be) {
		return err
	}
	return fmt.Errorf("the package pinned for its server %s (%s %s) is not as you agreed to it: %v; run `gemkit extensions sandbox %s` to pin it again, for you to agree to",
		extension.Printable(server), extension.Printable(p.Package), extension.Printable(p.Version), err, extension.Printable(name))
}

// PinnedTreeChanged says how the tree pinned as p for the extension
// name differs from the one pinned, nil when it does not: it must be
// the tree gemkit installed, where it put it, with no link on the way
// (pkgrun.Verify), its lock and its package's integrity as pinned, the
// bytes of its files those of its digest (read through the digest
// cache), with no link out of it (the server, which reads its tree
// alone, could not read through one, wherever it led), and no file with
// another name (a *extension.BindError). The tree lies in gemkit's data
// folder, which no sandboxed process may write but every process of the
// person's may: the switch, the consent and every start check it, and
// doctor tells of one that changed.
func PinnedTreeChanged(st *extension.Store, name string, p extension.Pin) error {
	if err := pkgrun.Verify(pkgrun.Root(st.Home()), name, pkgrun.Pinned{Tree: p.Tree, Package: p.Package, Integrity: p.Integrity, Lock: p.Lock}); err != nil {
		return err
	}
	content, err := st.ReadContent(p.Tree)
	switch {
	case err != nil:
		return fmt.Errorf("its files in %s cannot be read (%v)", extension.Printable(p.Tree), err)
	case content.Digest != p.Digest:
		return fmt.Errorf("its files in %s changed since it was pinned", extension.Printable(p.Tree))
	}
	if links := sortedKeys(content.LinksOut); len(links) > 0 {
		return fmt.Errorf("%s in %s is a link out of the tree, to %s", extension.Printable(links[0]), extension.Printable(p.Tree), extension.Printable(content.LinksOut[links[0]]))
	}
	return content.Bindable(p.Tree, nil)
}

// choiceCache reads the MCP server choices once per change of their
// file rather than once per extension at every load of the set.
type choiceCache struct {
	st    *extension.Store
	mu    sync.Mutex
	stamp string
	all   map[string]extension.ServerChoice
	err   error
}

func (c *choiceCache) get(name string) (extension.ServerChoice, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	stamp := c.st.ServerChoicesStamp()
	if c.all == nil || stamp != c.stamp {
		c.all, c.err = c.st.ServerChoices()
		c.stamp = stamp
	}
	return c.all[name], c.err
}
