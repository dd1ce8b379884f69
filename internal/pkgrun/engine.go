package pkgrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/gemkit/gemkit/internal/runnerline"
)

// The version pinned is the one the person's npx would run on the node
// that will start the server. npx resolves a bare name as the range *
// (npm-package-arg), and npm-pick-manifest picks for a range the
// version the latest tag names only when its engines fit the node that
// runs npm (process.version; npm's own version for engines.npm), and
// otherwise the newest version of the range that is neither deprecated
// nor of an engine that does not fit (its sort: not avoided, not
// restricted, not staged, not deprecated and engine ok, engine ok, not
// deprecated, then semver); a tag or an exact version is taken as it is,
// whatever its engines. npm runs in the install's sandbox with that
// node (the first on the person's PATH, found as the server's
// interpreter is: progsearch.Look), and is asked for the package as
// the line names it, so that its own rule picks. What gemkit adds are
// the words: which version, and why not the newest.

// Engine is what the runtime made of the pick: the node that ran npm,
// which starts the server, and the engines that did not fit it.
type Engine struct {
	// Node is the node's version ("20.20.2").
	Node string
	// Needs are the engines of the version pinned that the node or npm
	// does not satisfy ("node >=99"): npx would run it all the same.
	Needs []string
	// Latest is the version the registry's latest tag names, when npm
	// picked another for a line that asks for the newest or a range it
	// is in; LatestNeeds are its engines that did not fit, the reason,
	// or LatestDeprecated it.
	Latest           string
	LatestNeeds      []string
	LatestDeprecated bool
}

// Choice says why the version pinned was chosen, when it is not simply
// what the line asked for: "the newest that runs on Node 20.20.2;
// 3.26.0 needs node >=22".
func (e Engine) Choice() string {
	switch {
	case e.Latest == "":
		return ""
	case len(e.LatestNeeds) > 0:
		return fmt.Sprintf("the newest that runs on Node %s; %s, the latest, needs %s", e.Node, e.Latest, strings.Join(e.LatestNeeds, " and "))
	case e.LatestDeprecated:
		return fmt.Sprintf("the newest not deprecated; %s, the latest, is deprecated", e.Latest)
	}
	return fmt.Sprintf("as npm picks it; %s, the latest, is not taken for another reason of npm's", e.Latest)
}

// Warning says what the person may want to change, "" for nothing: the
// newest needs another runtime, or the version pinned does not fit the
// node that starts the server. update is the command that pins again
// ("" for none to name).
func (e Engine) Warning(pkg, version, update string) string {
	switch {
	case len(e.Needs) > 0:
		return fmt.Sprintf("%s %s needs %s, and the server starts with Node %s (the first node on your PATH), as your npx would run it: it may fail; a Node that satisfies it, first on your PATH, runs it", pkg, version, strings.Join(e.Needs, " and "), e.Node)
	case e.Latest != "" && len(e.LatestNeeds) > 0:
		then := "pin again"
		if update != "" {
			then = "run `" + update + "`"
		}
		return fmt.Sprintf("the newest, %s %s, needs %s, and the server starts with Node %s (the first node on your PATH): your npx runs %s there too. To run %s, put a Node that satisfies it first on your PATH and %s", pkg, e.Latest, strings.Join(e.LatestNeeds, " and "), e.Node, version, e.Latest, then)
	}
	return ""
}

// viewed is what the registry says of the version its latest tag names
// (npm view PKG@latest version engines deprecated --json).
type viewed struct {
	Version    string          `json:"version"`
	Engines    json.RawMessage `json:"engines"`
	Deprecated json.RawMessage `json:"deprecated"`
}

// exactVersion is a spec npm-package-arg reads as one version, for which
// npm picks no other and the latest says nothing.
var exactVersion = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\s*[=v]*\s*\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?\s*$`)
})

// asksLatest reports whether the line's choice may depend on the latest
// tag: a bare name, or a range (a tag other than latest is sorted out
// by engineScript, which reads the spec as npm does).
func asksLatest(inv runnerline.Invocation) bool {
	return !inv.LatestTag && (inv.Spec == "" || !exactVersion().MatchString(inv.Spec))
}

// parseViewed reads npm view's answer, nil when it says nothing usable.
func parseViewed(out []byte) *viewed {
	var v viewed
	if json.Unmarshal(bytes.TrimSpace(out), &v) != nil || len(v.Version) > 256 || !exactVersion().MatchString(v.Version) {
		return nil
	}
	return &v
}

// engineScript runs in the install's sandbox with the node that ran npm
// and npm's own modules (npm-install-checks' checkEngine, which
// npm-pick-manifest's engineOk calls; semver; npm-package-arg): it
// says the node's version, how npm reads the line's spec, and which
// engines of the version pinned and of the latest do not fit. Its
// arguments are npm's folder and a JSON object {name, spec, picked,
// latest}; what it prints is one JSON object.
const engineScript = `const path = require("path");
const [root, input] = process.argv.slice(1);
const req = (m) => require(path.join(root, "node_modules", m));
const semver = req("semver"), { checkEngine } = req("npm-install-checks"), npa = req("npm-package-arg");
const npmVersion = require(path.join(root, "package.json")).version;
const i = JSON.parse(input);
const needs = (engines) => {
  try { checkEngine({ engines }, npmVersion, process.version); return []; } catch (e) {}
  const out = [];
  for (const [k, v] of [["node", process.version], ["npm", npmVersion]]) {
    const want = engines && engines[k];
    if (typeof want === "string" && !semver.satisfies(v, want, { includePrerelease: true })) out.push(k + " " + want);
  }
  return out.length ? out : ["engines " + JSON.stringify(engines)];
};
const spec = npa.resolve(i.name, i.spec || "*");
const out = { node: process.version.replace(/^v/, ""), type: spec.type, picked: needs(i.picked) };
if (i.latest) {
  out.latest = needs(i.latest.engines);
  out.inRange = spec.type === "range" && semver.satisfies(i.latest.version, spec.fetchSpec || "*", { loose: true });
}
process.stdout.write(JSON.stringify(out));
`

// engineAnswer is what engineScript prints.
type engineAnswer struct {
	Node    string   `json:"node"`
	Type    string   `json:"type"`
	Picked  []string `json:"picked"`
	Latest  []string `json:"latest"`
	InRange bool     `json:"inRange"`
}

// engineInput is engineScript's input: the line's package and spec,
// the engines of the version pinned, and the latest as viewed.
func engineInput(inv runnerline.Invocation, picked json.RawMessage, latest *viewed) ([]byte, error) {
	in := map[string]any{"name": inv.Package, "spec": inv.Spec, "picked": rawOrNull(picked)}
	if latest != nil {
		in["latest"] = map[string]any{"version": latest.Version, "engines": rawOrNull(latest.Engines)}
	}
	return json.Marshal(in)
}

func rawOrNull(r json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(r)) == 0 {
		return json.RawMessage("null")
	}
	return r
}

// engineOf is the Engine of a pick: version is the version pinned,
// latest what the registry's latest tag names (nil when not asked), a
// what engineScript answered.
func engineOf(version string, latest *viewed, a engineAnswer) Engine {
	bound := func(needs []string) []string {
		// What the registry chose: kept short, and escaped where it
		// is printed.
		var out []string
		for _, n := range needs[:min(len(needs), 4)] {
			if len(n) > 200 {
				n = n[:200] + "…"
			}
			out = append(out, n)
		}
		return out
	}
	a.Picked, a.Latest = bound(a.Picked), bound(a.Latest)
	e := Engine{Node: a.Node, Needs: a.Picked}
	if latest == nil || latest.Version == version || a.Type != "range" || !a.InRange {
		return e
	}
	e.Latest, e.LatestNeeds = latest.Version, a.Latest
	d := strings.TrimSpace(string(latest.Deprecated))
	e.LatestDeprecated = d != "" && d != "null" && d != "false" && d != `""`
	return e
}

// maxEngineOutput bounds what npm view and engineScript print that is
// read.
const maxEngineOutput = 1 << 20

// boundedBuffer keeps the first max bytes written to it.
type boundedBuffer struct {
	mu  sync.Mutex
	b   bytes.Buffer
	max int
}

func (w *boundedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := w.max - w.b.Len(); room > 0 {
		w.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (w *boundedBuffer) Bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Clone(w.b.Bytes())
}

// viewLatest asks the registry, in the fetch's sandbox s (its
// configuration, its hosts), what its latest tag names for the
// package: nil when it cannot say. The pick stands without it.
func (in *Installer) viewLatest(ctx context.Context, tools npmTools, s npmStep, run npmRun) *viewed {
	out := &boundedBuffer{max: maxEngineOutput}
	s.args = []string{"view", run.inv.Package + "@latest", "version", "engines", "deprecated", "--json", "--no-update-notifier",
		"--loglevel=http", "--no-progress", "--prefer-online", "--color=false"}
	s.stdout = out
	s.bound = newWriteBound(in.maxBytes(), in.maxFiles(), s.dir, s.bound.cache)
	if _, err := in.runNPM(ctx, tools, s, run.prog); err != nil {
		return nil
	}
	return parseViewed(out.Bytes())
}

// engine checks, with the node that ran npm and npm's own rule
// (engineScript), the engines of the version pinned (picked, its
// package.json's) and of the latest: in a sandbox of its own, with no
// network, nothing of the person's and nothing to write. A check that
// cannot run says nothing: the pick, npm's, stands.
func (in *Installer) engine(ctx context.Context, run npmRun, version string, picked json.RawMessage) Engine {
	latest := run.latest
	if latest != nil && latest.Version == version {
		latest = nil
	}
	if latest == nil && len(bytes.TrimSpace(picked)) == 0 {
		return Engine{}
	}
	input, err := engineInput(run.inv, picked, latest)
	if err != nil {
		return Engine{}
	}
	out := &boundedBuffer{max: maxEngineOutput}
	s := npmStep{nodeArgs: []string{"-e", engineScript, run.tools.root, string(input)}, dir: run.tools.root, stdout: out,
		bound: newWriteBound(in.maxBytes(), in.maxFiles(), "", "")}
	var a engineAnswer
	if _, err := in.runNPM(ctx, run.tools, s, run.prog); err != nil || json.Unmarshal(out.Bytes(), &a) != nil || a.Node == "" {
		return Engine{}
	}
	return engineOf(version, latest, a)
}
