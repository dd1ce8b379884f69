package publishedplugins

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/claudetest"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// twinMarket is gemkit's directory marketplace, which holds each
// switched plugin's twin (docs/claude-code-plugins.md).
const twinMarket = "gemkit-sandbox"

// switchOn switches the installed plugin p to gemkit's sandbox with
// `gemkit plugins sandbox`, as its user, and checks that it is: gemkit's
// doctor finds it as switched, and Claude Code lists the twin's server
// connected in place of the plugin's own.
func (s *session) switchOn(t *testing.T, p *plugin) {
	t.Helper()
	gemkit := s.gemkit(t)
	out, err := s.commandOf(t, gemkit, "plugins", "sandbox", p.id()).CombinedOutput()
	if err != nil {
		t.Fatalf("gemkit plugins sandbox %s: %v\n%s", p.id(), err, out)
	}
	if out, err := s.commandOf(t, gemkit, "plugins", "doctor").CombinedOutput(); err != nil || !strings.Contains(string(out), "ok: "+p.id()+" runs in gemkit's sandbox") {
		t.Errorf("gemkit plugins doctor: %v\n%s", err, out)
	}
	tools := s.twinTools(t, p)
	s.mu.Lock()
	s.tools = tools
	s.mu.Unlock()
	if len(tools) == 0 {
		return
	}
	out, err = s.command(t, "mcp", "list").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "plugin:"+p.name+":sandbox") || !strings.Contains(string(out), "Connected") {
		t.Errorf("claude mcp list does not connect to the twin's server: %v\n%s", err, out)
	}
	for _, sv := range p.servers() {
		if strings.Contains(string(out), "plugin:"+p.name+":"+sv+":") {
			t.Errorf("claude mcp list still starts the plugin's own server %s:\n%s", sv, out)
		}
	}
}

// gemkit is the gemkit binary the session runs: the test's build, or
// asNobody's copy of it where uid 65534 can run it.
func (s *session) gemkit(t *testing.T) string {
	t.Helper()
	if s.kit != "" {
		return s.kit
	}
	return gemkittest.Gemkit(t)
}

// servers are the names of the plugin's own servers, from its parts.
func (p *plugin) servers() []string {
	var names []string
	for _, part := range p.parts {
		if rest, ok := strings.CutPrefix(part, "server "); ok {
			name, _, _ := strings.Cut(rest, ":")
			names = append(names, name)
		}
	}
	return names
}

// twinTools maps the names of the tools the session's model calls, as
// Claude Code names them bare (mcp__plugin_<plugin>_<server>__<tool>),
// to their names once switched: the twin plugin's one server, sandbox,
// is gemkit mcp --only X --name-limit N, which names the tool X_<tool>,
// or, longer than N, cut and followed by a hash (disclosure.ExposedName's
// rule). The twin's server is asked by tools/list whether it serves
// each name.
func (s *session) twinTools(t *testing.T, p *plugin) map[string]string {
	t.Helper()
	x, limit, argv := s.twinServer(t, p)
	if argv == nil {
		return nil
	}
	names := map[string]string{}
	for _, sv := range p.servers() {
		prefix := "mcp__plugin_" + p.name + "_" + sv + "__"
		for _, a := range s.allow {
			if tool, ok := strings.CutPrefix(a, prefix); ok {
				names[a] = "mcp__plugin_" + p.name + "_sandbox__" + exposedName(x, tool, limit)
			}
		}
	}
	served := s.listTwin(t, argv)
	for bare, twin := range names {
		if !slices.Contains(served, strings.TrimPrefix(twin, "mcp__plugin_"+p.name+"_sandbox__")) {
			t.Errorf("the twin's server does not serve %s (for %s); it serves %q", twin, bare, served)
		}
	}
	return names
}

// exposedName is the name gemkit mcp gives the tool of the extension x
// with the name limit limit (disclosure.ExposedName's rule): x_tool,
// each character other than a letter, digit, _ or - made _; longer
// than limit, cut to limit less 9 and followed by _ and 8 hex digits
// of SHA-256 of "x\x00tool".
func exposedName(x, tool string, limit int) string {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
				return r
			}
			return '_'
		}, s)
	}
	n := clean(x) + "_" + clean(tool)
	if len(n) <= limit {
		return n
	}
	sum := sha256.Sum256([]byte(x + "\x00" + tool))
	return n[:limit-9] + "_" + hex.EncodeToString(sum[:4])
}

// twinServer reads the twin plugin's .mcp.json where Claude Code loads
// it (the folder of gemkit's directory marketplace, named in the user
// settings' extraKnownMarketplaces): its twin extension X, its name
// limit, and its command line; nil when the twin has no server.
func (s *session) twinServer(t *testing.T, p *plugin) (x string, limit int, argv []string) {
	t.Helper()
	var settings struct {
		Markets map[string]struct {
			Source struct{ Path string } `json:"source"`
		} `json:"extraKnownMarketplaces"`
	}
	readJSON(t, filepath.Join(s.cfg, "settings.json"), &settings)
	tm := settings.Markets[twinMarket].Source.Path
	var mcp struct {
		Servers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	file := filepath.Join(tm, "plugins", p.name, ".mcp.json")
	if _, err := os.Stat(file); os.IsNotExist(err) {
		return "", 0, nil
	}
	readJSON(t, file, &mcp)
	sv, ok := mcp.Servers["sandbox"]
	if !ok || len(mcp.Servers) != 1 {
		t.Fatalf("%s: %+v, want one server, sandbox", file, mcp.Servers)
	}
	for i, a := range sv.Args {
		switch {
		case a == "--only" && i+1 < len(sv.Args):
			x = sv.Args[i+1]
		case a == "--name-limit" && i+1 < len(sv.Args):
			limit, _ = strconv.Atoi(sv.Args[i+1])
		}
	}
	if x == "" || limit == 0 {
		t.Fatalf("%s: no --only X and --name-limit N in %q", file, sv.Args)
	}
	return x, limit, append([]string{sv.Command}, sv.Args...)
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// listTwin runs the twin's server command line as the session's user
// and asks it for its tools' names, as a client does: initialize, then
// tools/list, its input kept open until the answer.
func (s *session) listTwin(t *testing.T, argv []string) []string {
	t.Helper()
	cmd := s.commandOf(t, argv[0], argv[1:]...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer in.Close()
	io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n")
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m struct {
			ID     int `json:"id"`
			Result struct {
				Tools []struct{ Name string } `json:"tools"`
			} `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID != 2 {
			continue
		}
		var names []string
		for _, tl := range m.Result.Tools {
			names = append(names, tl.Name)
		}
		return names
	}
	t.Errorf("the twin's server did not answer tools/list: %v\n%s", sc.Err(), stderr.String())
	return nil
}

// tool is the name the tool bare has in this session: the twin's once
// the plugin is switched.
func (s *session) tool(bare string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.tools[bare]; ok {
		return n
	}
	return bare
}

// callTool is claudetest.CallTool of the tool bare by the name it has
// when the model is asked (the twin's once switched).
func (s *session) callTool(bare string, input map[string]any, answered, text string) func(*claudetest.Request) claudetest.Reply {
	return func(r *claudetest.Request) claudetest.Reply {
		return claudetest.CallTool(s.tool(bare), input, answered, text)(r)
	}
}

// asNobody makes the session's files uid 65534's and runs every process
// of the session as that user (setpriv), as a person without root.
func (s *session) asNobody(t *testing.T) {
	t.Helper()
	s.user = []string{gemkittest.Tool(t, "setpriv", "util-linux"), "--reuid=65534", "--regid=65534", "--clear-groups"}
	root := filepath.Dir(s.home)
	b, err := os.ReadFile(gemkittest.Gemkit(t))
	if err != nil {
		t.Fatal(err)
	}
	s.kit = filepath.Join(root, "bin", "gemkit")
	if err := os.MkdirAll(filepath.Dir(s.kit), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.kit, b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(root), root} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	err = filepath.WalkDir(root, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 65534, 65534)
	})
	if err != nil {
		t.Fatal(err)
	}
}
