package agentplugin

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// The server types of mcp.json (§7.2.1).
const (
	TypeStdio = "stdio"
	TypeHTTP  = "streamable-http"
	TypeSSE   = "sse"
)

// Server is one valid entry of mcp.json, as written: placeholders are
// expanded only when it is launched (Expand), with the plugin's root
// and data folder.
type Server struct {
	Type string
	// Command is a bare program name or a plugin-relative path ("./…");
	// Args, Env and Cwd are as written (Cwd "" for the plugin root).
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string
	// URL and Headers are a remote server's, never expanded.
	URL     string
	Headers map[string]string
}

// Stdio reports whether the server is one gemkit starts.
func (s Server) Stdio() bool { return s.Type == TypeStdio }

// serverFields are the fields of each server variant, a closed set
// each (§7.2.1).
var serverFields = map[string]map[string]bool{
	TypeStdio: {"type": true, "command": true, "args": true, "env": true, "cwd": true},
	TypeHTTP:  {"type": true, "url": true, "headers": true},
	TypeSSE:   {"type": true, "url": true, "headers": true},
}

// readMCP reads mcp.json into p.Servers, and returns its bytes (nil
// when none could be read). Whatever is wrong with the file leaves the
// plugin without MCP servers (§6.2, §7.2.2(2)), and with an entry only
// that entry is skipped (§7.2.2(3)); each with a note.
func (p *Plugin) readMCP(root *fsutil.Root) []byte {
	if _, err := root.Lstat(MCPFile); errors.Is(err, fs.ErrNotExist) {
		return nil // §6.2: absent is no error
	}
	off := func(why string) {
		p.note(MCPFile, "", why+": the plugin's MCP servers are not loaded", "correct mcp.json as said; the plugin's skills load meanwhile")
	}
	data, err := root.ReadFile(MCPFile, maxFile)
	switch {
	case errors.Is(err, fsutil.ErrOutside):
		off("it is a link out of the plugin's folder (§4.1)")
		return nil
	case errors.Is(err, fsutil.ErrNotRegular):
		off("it is not a regular file (§6.2)")
		return nil
	case err != nil:
		off(err.Error())
		return nil
	}
	v, err := agentread.ParseJSONUnique(data)
	if err != nil {
		off("it is not JSON every client reads alike (" + err.Error() + ")")
		return data
	}
	if !v.IsObject() {
		off("it is a JSON " + v.Kind().String() + ", not an object")
		return data
	}
	for _, k := range v.Keys() {
		if k != "$schema" && k != "mcpServers" {
			off("it has the field " + quoteKey(k) + "; Agent Plugins 1.0.0 allows only $schema and mcpServers (§7.2.1)")
			return data
		}
	}
	schema, ok := v.Get("$schema")
	if s, isStr := schema.Str(); !ok || !isStr || s != MCPSchema {
		off(fmt.Sprintf("its $schema is not %s, the version plugin.json targets (§10.1)", MCPSchema))
		return data
	}
	servers, ok := v.Get("mcpServers")
	if !ok || !servers.IsObject() {
		off("its mcpServers is missing or not an object (§7.2.1)")
		return data
	}
	for _, name := range servers.Keys() {
		def, _ := servers.Get(name)
		s, why := checkServer(root, def)
		if why != "" {
			p.note(MCPFile, "mcpServers."+quoteKey(name), why+": this server is skipped (§7.2.2)", "correct the entry as said; the plugin's other servers and skills load meanwhile")
			continue
		}
		p.literalNotes(name, s)
		p.Servers[name] = s
	}
	return data
}

// checkServer reads one entry of mcpServers, or says why it is invalid.
func checkServer(root *fsutil.Root, def agentread.Value) (Server, string) {
	if !def.IsObject() {
		return Server{}, "it is a JSON " + def.Kind().String() + ", not an object"
	}
	t, ok := def.Get("type")
	typ, isStr := t.Str()
	switch {
	case !ok:
		return Server{}, "it has no type"
	case !isStr:
		return Server{}, "its type is a JSON " + t.Kind().String() + ", not a string"
	case serverFields[typ] == nil:
		return Server{}, fmt.Sprintf("its type %s is not one Agent Plugins 1.0.0 defines (stdio, streamable-http, sse)", strconv.Quote(typ))
	}
	for _, k := range def.Keys() {
		if !serverFields[typ][k] {
			return Server{}, fmt.Sprintf("the field %s does not belong to a %s server", quoteKey(k), typ)
		}
	}
	s := Server{Type: typ}
	if typ != TypeStdio {
		return s, s.readRemote(def)
	}
	return s, s.readStdio(root, def)
}

func (s *Server) readStdio(root *fsutil.Root, def agentread.Value) string {
	c, ok := def.Get("command")
	cmd, isStr := c.Str()
	switch {
	case !ok:
		return "it has no command"
	case !isStr:
		return "its command is a JSON " + c.Kind().String() + ", not a string"
	}
	if why := commandProblem(root, cmd); why != "" {
		return "its command " + strconv.Quote(cmd) + " " + why
	}
	s.Command = cmd
	var why string
	if s.Args, why = stringList(def, "args"); why != "" {
		return why
	}
	if s.Env, why = stringMap(def, "env"); why != "" {
		return why
	}
	for k := range s.Env {
		switch {
		case k == "PLUGIN_ROOT" || k == "PLUGIN_DATA":
			return "its env sets " + k + ", which the client alone sets (§9.2)"
		case k == "" || strings.ContainsAny(k, "=\x00"):
			return "its env has the name " + strconv.Quote(k) + ", which no environment variable can have"
		}
	}
	if cw, ok := def.Get("cwd"); ok {
		if s.Cwd, isStr = cw.Str(); !isStr {
			return "its cwd is a JSON " + cw.Kind().String() + ", not a string"
		}
		if why := cwdProblem(root, s.Cwd); why != "" {
			return "its cwd " + strconv.Quote(s.Cwd) + " " + why
		}
	}
	for _, a := range append(append([]string{}, s.Args...), s.Cwd) {
		if strings.ContainsRune(a, 0) {
			return "an argument or its cwd holds a NUL byte, which no program can be given"
		}
	}
	for _, v := range s.Env {
		if strings.ContainsRune(v, 0) {
			return "a value of its env holds a NUL byte, which no environment can hold"
		}
	}
	return ""
}

// commandProblem says why cmd is not a single executable token, bare
// or plugin-relative within the root (§7.2.1, §4.1), "" when it is.
func commandProblem(root *fsutil.Root, cmd string) string {
	switch {
	case cmd == "":
		return "is empty"
	case strings.ContainsAny(cmd, " \t\n\r\x00"):
		return "is not one program name: give the program alone in command, its arguments in args (§7.2.1)"
	case strings.HasPrefix(cmd, "./"):
		return relProblem(root, strings.TrimPrefix(cmd, "./"), true)
	case strings.Contains(cmd, "/") || cmd == "." || cmd == "..":
		return "is neither a bare program name nor a path starting ./ in the plugin (§7.2.1; no placeholder is expanded in command)"
	}
	return ""
}

// cwdProblem says why cwd is not one of the three forms of §7.2.1, or
// leads out of the plugin root; "" when it is fine as far as can be told
// before launch (a ${PLUGIN_DATA} one is resolved then, ResolveCwd).
func cwdProblem(root *fsutil.Root, cwd string) string {
	switch {
	case strings.HasPrefix(cwd, "./"):
		return relProblem(root, strings.TrimPrefix(cwd, "./"), false)
	case cwd == PlaceholderRoot:
		return ""
	case strings.HasPrefix(cwd, PlaceholderRoot+"/"):
		return relProblem(root, strings.TrimPrefix(cwd, PlaceholderRoot+"/"), false)
	case cwd == PlaceholderData || strings.HasPrefix(cwd, PlaceholderData+"/"):
		return ""
	}
	return "is none of ./PATH, ${PLUGIN_ROOT}[/PATH] and ${PLUGIN_DATA}[/PATH] (§7.2.1)"
}

// relProblem says why rel, a path in the plugin root, leads out of it,
// lexically or through a link (§4.1); file: it names a program, which
// the root itself is not.
func relProblem(root *fsutil.Root, rel string, file bool) string {
	clean := filepath.Clean(filepath.FromSlash(rel))
	switch {
	case !filepath.IsLocal(clean):
		return "leads out of the plugin's folder (§4.1)"
	case file && clean == ".":
		return "names the plugin's folder, not a program in it"
	}
	if _, err := root.Stat(clean); errors.Is(err, fsutil.ErrOutside) {
		return "leads out of the plugin's folder through a link (§4.1)"
	}
	return ""
}

func (s *Server) readRemote(def agentread.Value) string {
	u, ok := def.Get("url")
	raw, isStr := u.Str()
	switch {
	case !ok:
		return "it has no url"
	case !isStr:
		return "its url is a JSON " + u.Kind().String() + ", not a string"
	}
	if why := urlProblem(raw); why != "" {
		return "its url " + strconv.Quote(raw) + " " + why
	}
	s.URL = raw
	var why string
	if s.Headers, why = stringMap(def, "headers"); why != "" {
		return why
	}
	seen := map[string]string{}
	for k, v := range s.Headers {
		switch {
		case !headerName(k):
			return "its header name " + strconv.Quote(k) + " is not a valid HTTP header name"
		case !headerValue(v):
			return "its header " + k + " has a value that is not a valid HTTP header value"
		case seen[strings.ToLower(k)] != "":
			return "its headers give " + seen[strings.ToLower(k)] + " and " + k + ", one name in two casings (§7.2.1)"
		}
		seen[strings.ToLower(k)] = k
	}
	return ""
}

// urlProblem says why raw is not a remote server's url (§7.2.1): an
// absolute http or https URL without user information or fragment,
// https unless its host is localhost or a loopback address.
func urlProblem(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "cannot be read as a URL"
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Opaque != "":
		return "is not an absolute http or https URL"
	case u.User != nil:
		return "holds user information, which Agent Plugins 1.0.0 forbids"
	case strings.Contains(raw, "#"):
		return "holds a fragment, which Agent Plugins 1.0.0 forbids"
	case u.Scheme == "http" && !loopback(u.Hostname()):
		return "is plain http to a host that is not loopback; Agent Plugins 1.0.0 requires https there"
	}
	return ""
}

// loopback: exactly localhost, or an IP literal in a loopback range.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func stringList(def agentread.Value, key string) ([]string, string) {
	v, ok := def.Get(key)
	if !ok {
		return nil, ""
	}
	elems, isArr := v.Elems()
	if !isArr {
		return nil, "its " + key + " is a JSON " + v.Kind().String() + ", not an array of strings"
	}
	out := make([]string, 0, len(elems))
	for i, e := range elems {
		s, isStr := e.Str()
		if !isStr {
			return nil, fmt.Sprintf("its %s[%d] is a JSON %s, not a string", key, i, e.Kind())
		}
		out = append(out, s)
	}
	return out, ""
}

func stringMap(def agentread.Value, key string) (map[string]string, string) {
	v, ok := def.Get(key)
	if !ok {
		return nil, ""
	}
	if !v.IsObject() {
		return nil, "its " + key + " is a JSON " + v.Kind().String() + ", not an object of strings"
	}
	out := map[string]string{}
	for _, k := range v.Keys() {
		m, _ := v.Get(k)
		s, isStr := m.Str()
		if !isStr {
			return nil, fmt.Sprintf("its %s.%s is a JSON %s, not a string", key, quoteKey(k), m.Kind())
		}
		out[k] = s
	}
	return out, ""
}

// headerName: a field name is a token of RFC 9110 §5.1 (tchar).
func headerName(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range []byte(k) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// headerValue: a field value of RFC 9110 §5.5: visible characters,
// space and tab, no control character (CR, LF, NUL among them).
func headerValue(v string) bool {
	for _, c := range []byte(v) {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
