package permission

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// ServersDir is where older versions of `gemkit mcp --http` recorded
// their ports, under the home folder their environment named; they are
// still read (RecordDirs).
func ServersDir(home string) string { return serversDir(filepath.Join(home, ide.AgentGemini.HomeDir)) }

// record is what one of gemkit's servers records while it serves: its
// port is in the file's name (<port>.<pid>), and the files that hold its
// secrets (a token file) in the body, so that they are closed to tools
// wherever the server's flags or environment put them.
type record struct {
	Secrets []string `json:"secrets,omitempty"`
}

// RecordServer records that this process serves on port, with its secrets
// in the files secrets, in the first of RecordDirs (one no environment
// moves): the sandbox proxy refuses the port to tools and the files are
// closed to them (OwnServerPort, ClosedPaths), whatever environment the
// gemkit that runs the tools has. The returned func removes the record.
func RecordServer(port int, secrets []string) (remove func(), err error) {
	return RecordServerIn(RecordDirs(Env{})[0], port, secrets)
}

// RecordServerIn is RecordServer into the folder dir, which is made
// private (0700) if it is new; one another user owns or others may enter
// is refused, since whoever can write there could hide a server.
func RecordServerIn(dir string, port int, secrets []string) (remove func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("recording the server's port: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("recording the server's port: %w", err)
	}
	if !privateToMe(fi) {
		return nil, fmt.Errorf("recording the server's port: %s must be a folder of this user's that only it may enter (chmod 700)", dir)
	}
	var abs []string
	for _, s := range secrets {
		if s == "" {
			continue
		}
		a, err := filepath.Abs(s)
		if err != nil {
			return nil, fmt.Errorf("recording the server's secret file: %w", err)
		}
		abs = append(abs, a)
	}
	body, err := json.Marshal(record{Secrets: abs})
	if err != nil {
		return nil, err
	}
	p := filepath.Join(dir, strconv.Itoa(port)+"."+strconv.Itoa(os.Getpid()))
	if err := fsutil.WriteFileAtomic(p, body, 0o600); err != nil {
		return nil, fmt.Errorf("recording the server's port: %w", err)
	}
	return func() { _ = os.Remove(p) }, nil
}

// recorded is one record found: its port and what it holds.
type recorded struct {
	port int
	record
}

// readRecords reads the records in dirs. A record is small; one that is
// not readable JSON still names its port.
func readRecords(dirs []string) []recorded {
	var out []recorded
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			portText, _, ok := strings.Cut(e.Name(), ".")
			port, err := strconv.Atoi(portText)
			if !ok || err != nil || !e.Type().IsRegular() {
				continue
			}
			r := recorded{port: port}
			if b, err := readSmall(filepath.Join(d, e.Name()), 64<<10); err == nil && len(b) > 0 {
				_ = json.Unmarshal(b, &r.record)
			}
			out = append(out, r)
		}
	}
	return out
}

// readSmall reads a regular file of at most limit bytes, without
// following a link at its name or waiting on a FIFO.
func readSmall(path string, limit int64) ([]byte, error) {
	r, err := fsutil.OpenRoot(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.ReadFile(filepath.Base(path), limit)
}

// OwnServerPort reports whether a loopback port belongs to one of the
// servers gemkit serves or runs, as their own records name them at the
// moment of asking, in every place ClosedInputs gathers: an IDE
// companion's discovery file (gemini-ide-server-<pid>-<port>.json in
// <tmp>/gemini/ide, or a legacy file holding "port"), a lock file of
// Claude Code's or Qwen Code's (<port>.lock in their ide folders), a
// record of gemkit's servers (RecordServer). Each holds or is guarded by
// a token that lets a client write files or run tools, so a tool allowed
// "localhost" must still not reach them.
func OwnServerPort(in ClosedInputs, port int) bool {
	want := strconv.Itoa(port)
	pl := in.places()
	for _, d := range pl.discovery {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if !strings.HasPrefix(name, "gemini-ide-server-") || !strings.HasSuffix(name, ".json") {
				continue
			}
			parts := strings.Split(strings.TrimSuffix(name, ".json"), "-")
			if len(parts) == 5 && parts[4] == want {
				return true
			}
			if len(parts) == 4 && legacyPort(filepath.Join(d, name)) == port {
				return true
			}
		}
	}
	for _, d := range pl.locks {
		if _, err := os.Lstat(filepath.Join(d, want+".lock")); err == nil {
			return true
		}
	}
	for _, r := range readRecords(in.recordDirs()) {
		if r.port == port {
			return true
		}
	}
	return false
}

// legacyPort reads the port of a discovery file named without one.
func legacyPort(p string) int {
	b, err := readSmall(p, 1<<20)
	if err != nil {
		return 0
	}
	var f struct {
		Port json.Number `json:"port"`
	}
	if json.Unmarshal(b, &f) != nil {
		return 0
	}
	n, _ := strconv.Atoi(f.Port.String())
	return n
}
