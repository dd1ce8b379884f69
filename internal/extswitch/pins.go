package extswitch

import (
	"fmt"
	"os"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// PinProblem is why gemkit mcp does not start one of an extension's
// package-runner servers, and what to do.
type PinProblem struct {
	Message, Fix string
}

// PinProblems are the package-runner servers of ext that gemkit mcp
// does not start with the choice c: one whose line cannot be pinned, one
// whose registry gemkit pins nothing of (PyPI), one with no pin for what
// its manifest asks now, one whose pinned tree is gone or not the one
// pinned (written since by some process of the person's, or swapped for
// a link). The switch refuses the first two (cannotPin); a pin gone
// stale (a linked extension's edited manifest, an update refused) or a
// tree changed is told by list, describe and doctor.
func (s *Switch) PinProblems(ext *extension.Extension, c extension.ServerChoice) []PinProblem {
	name := ext.Manifest.Name
	var ps []PinProblem
	for _, r := range RunnerServers(ext, s.Store.Workspace()) {
		p, ok := c.Packages[r.Name]
		_, pins := s.pinsFrom(r.Inv.Ecosystem)
		switch {
		case r.Err != nil, !pins:
			ps = append(ps, cannotPin(name, r))
		case !ok || p.Request != r.Inv.Request() || p.Runner != r.Inv.Runner:
			ps = append(ps, PinProblem{
				Message: fmt.Sprintf("its MCP server %s (%s) fetches %s through a package runner, and gemkit has not pinned it for what the manifest asks now, so gemkit mcp does not start it", r.Name, r.Line, r.Inv.Request()),
				Fix:     "`gemkit extensions sandbox " + name + "` installs it once, at an exact version, for you to agree to"})
		case !pinnedTreeExists(p):
			// Removed by hand, or by a cleaner of caches: gemkit mcp's
			// start would fail on the missing program, its fix unsaid.
			ps = append(ps, PinProblem{
				Message: fmt.Sprintf("the package pinned for its MCP server %s (%s %s) is no longer in %s, so gemkit mcp cannot start it", r.Name, p.Package, p.Version, p.Tree),
				Fix:     "`gemkit extensions sandbox " + name + "` pins it again, for you to agree to"})
			continue
		}
		if err := extmcp.PinnedTreeChanged(s.Store, name, p); err != nil {
			ps = append(ps, PinProblem{
				Message: fmt.Sprintf("the package pinned for its MCP server %s (%s %s) is not as you agreed to it: %v, so gemkit mcp does not start it", r.Name, p.Package, p.Version, err),
				Fix:     "`gemkit extensions sandbox " + name + "` installs it again from the registry and pins the new tree, for you to agree to"})
		}
	}
	return ps
}

// pinnedTreeExists reports whether something is at the path of a pin's
// tree (a folder, or what replaced it).
func pinnedTreeExists(p extension.Pin) bool {
	_, err := os.Lstat(p.Tree)
	return err == nil
}

// treeThere reports whether a pinned tree is still where it was put.
func treeThere(dir string) bool {
	fi, err := os.Lstat(dir)
	return err == nil && fi.IsDir()
}

// pinnedProgramThere reports whether the program a pin runs is still in
// its tree (a regular file, as the install left it), looked at through
// the tree's Root: npm wrote the tree from what the registry sent.
func pinnedProgramThere(p extension.Pin) bool {
	if !treeThere(p.Tree) || p.Program == "" {
		return false
	}
	root, err := fsutil.OpenRoot(p.Tree)
	if err != nil {
		return false
	}
	defer root.Close()
	fi, err := root.Lstat(p.Program)
	return err == nil && fi.Mode().IsRegular()
}

// cannotPin says why the server r of the extension name, whose line
// cannot be pinned or whose registry gemkit pins nothing of, is not
// started by gemkit mcp.
func cannotPin(name string, r RunnerServer) PinProblem {
	if r.Err != nil {
		return PinProblem{
			Message: fmt.Sprintf("its MCP server %s (%s): %v, so gemkit mcp does not start it", r.Name, r.Line, r.Err),
			Fix:     "the extension's author can start it with a package gemkit can pin (npx -y PACKAGE), or give it back to Gemini CLI: `gemkit extensions sandbox " + name + " --off`"}
	}
	return PinProblem{
		Message: fmt.Sprintf("its MCP server %s: %v", r.Name, noEcosystem(r.Inv)),
		Fix:     "give it back to Gemini CLI: `gemkit extensions sandbox " + name + " --off`"}
}
