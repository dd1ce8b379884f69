// One server of the table: started on demand, restarted once after a crash,
// stopped when idle, with the documents it has open kept in step with the disk.

package langserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"time"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/lspclient"
)

// running is one server of the table, started or not.
type running struct {
	p      *Pool
	server Server
	path   string // the command, found on PATH

	startMu sync.Mutex // held while starting
	mu      sync.Mutex
	client  *lspclient.Client
	started time.Time
	crashes int
	failed  error // after the second crash: why it is not started again
	stopped bool  // stopped on purpose (idle, Close)
	inUse   int
	idle    *time.Timer
	used    map[string]time.Time // open documents, by last use
}

// client starts the server if it is not running and marks it in use
// until done is called.
func (r *running) acquire(ctx context.Context) (*lspclient.Client, func(), error) {
	r.startMu.Lock()
	defer r.startMu.Unlock()
	r.mu.Lock()
	if r.client != nil && r.client.Err() != nil {
		// It exited and watch has not noted it yet: a question right
		// after a crash starts it again rather than ask the dead one.
		r.noteExit(r.client)
	}
	if r.failed != nil {
		err := r.failed
		r.mu.Unlock()
		return nil, nil, err
	}
	c := r.client
	if c != nil {
		r.inUse++
		if r.idle != nil {
			r.idle.Stop()
		}
		r.mu.Unlock()
		return c, r.release, nil
	}
	r.mu.Unlock()
	start := time.Now()
	c, err := lspclient.Start(ctx, lspclient.Config{
		Name: r.server.Name, Command: append([]string{r.path}, r.server.Command[1:]...), Dir: r.p.ws, Env: r.p.env,
		InitializationOptions: r.server.InitializationOptions, Settings: r.server.Settings,
		RequestTimeout: r.p.request, Logger: r.p.log, Start: r.p.sandboxStarter(r.server, r.path), NoProcessID: true,
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, err
		}
		r.crashes++
		if r.crashes >= 2 {
			r.failed = &codeintel.ServerError{Server: r.server.Name, Reason: fmt.Sprintf("it failed twice and is not started again until gemkit's language servers restart (when the last agent of this workspace goes); last: %v", err)}
			return nil, nil, r.failed
		}
		return nil, nil, &codeintel.ServerError{Server: r.server.Name, Reason: err.Error()}
	}
	r.p.log.Info("code intelligence: language server started", "server", r.server.Name, "pid", c.Pid(), "took", time.Since(start).Round(time.Millisecond))
	r.client, r.started, r.stopped = c, time.Now(), false
	r.used = map[string]time.Time{}
	r.inUse++
	go r.watch(c)
	return c, r.release, nil
}

// watch notes a server's exit: a crash is restarted at the next question,
// once; a second one leaves it failed, with why.
func (r *running) watch(c *lspclient.Client) {
	<-c.Done()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.noteExit(c)
}

// noteExit notes, once, that c's server exited; r.mu is held.
func (r *running) noteExit(c *lspclient.Client) {
	if r.client != c {
		return
	}
	r.client = nil
	if r.stopped {
		return
	}
	r.crashes++
	r.p.log.Warn("code intelligence: language server exited", "server", r.server.Name, "err", c.Err(), "crashes", r.crashes)
	if r.crashes >= 2 {
		r.failed = &codeintel.ServerError{Server: r.server.Name, Reason: fmt.Sprintf("it crashed twice and is not started again until gemkit's language servers restart (when the last agent of this workspace goes); last: %v", c.Err())}
	}
}

// exited words the error of a request to c when c's server exited under
// it: whether the next question starts it again (after a first crash)
// or not (after a second), so that a model knows whether to ask again.
func (r *running) exited(c *lspclient.Client, err error) error {
	if c.Err() == nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.noteExit(c)
	switch {
	case r.stopped:
		return err
	case r.failed != nil:
		return r.failed
	}
	const again = "; ask again: gemkit starts it again at the next question"
	if se := (*codeintel.ServerError)(nil); errors.As(err, &se) {
		return &codeintel.ServerError{Server: se.Server, Reason: se.Reason + again}
	}
	return fmt.Errorf("%w%s", err, again)
}

func (r *running) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inUse--
	if r.inUse > 0 || r.client == nil {
		return
	}
	if r.idle == nil {
		r.idle = time.AfterFunc(r.p.idle, r.stopIdle)
	} else {
		r.idle.Reset(r.p.idle)
	}
}

// stopIdle stops a server nobody asked for during the idle timeout.
func (r *running) stopIdle() {
	r.mu.Lock()
	busy := r.inUse > 0 || r.client == nil
	r.mu.Unlock()
	if busy {
		return
	}
	r.p.log.Info("code intelligence: stopping an idle language server", "server", r.server.Name, "idle", r.p.idle)
	r.stop()
}

// stop shuts the server down, if it runs.
func (r *running) stop() {
	r.startMu.Lock()
	defer r.startMu.Unlock()
	r.mu.Lock()
	c := r.client
	r.stopped = true
	if r.idle != nil {
		r.idle.Stop()
	}
	r.mu.Unlock()
	if c != nil {
		c.Shutdown(context.Background())
	}
}

// open opens (or syncs) path in c, closing the least recently used
// documents past maxOpen.
func (r *running) open(c *lspclient.Client, path string) error {
	return r.openAs(c, path, c.Open)
}

// openChanged opens path, changed on disk, in c as a change of the
// workspace (lspclient.OpenChanged): for a server that diagnoses only
// what it is sent, and offers no diagnostics on request, hearing of
// the file (workspace/didChangeWatchedFiles) is not enough for the
// other open files' diagnostics to follow it.
func (r *running) openChanged(c *lspclient.Client, path string) error {
	return r.openAs(c, path, c.OpenChanged)
}

func (r *running) openAs(c *lspclient.Client, path string, open func(path, languageID string) (int, error)) error {
	if _, err := open(path, r.server.languageID(path)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s does not exist on disk (a file must be saved before its language server can read it)", path)
		}
		return err
	}
	r.mu.Lock()
	r.used[path] = time.Now()
	var drop []string
	if len(r.used) > maxOpen {
		type u struct {
			p string
			t time.Time
		}
		var all []u
		for p, t := range r.used {
			all = append(all, u{p, t})
		}
		slices.SortFunc(all, func(a, b u) int { return a.t.Compare(b.t) })
		for _, x := range all[:len(all)-maxOpen] {
			drop = append(drop, x.p)
			delete(r.used, x.p)
		}
	}
	r.mu.Unlock()
	for _, p := range drop {
		c.Close(p)
	}
	return nil
}

// syncOpen sends again every document c has open that changed on disk
// since: a file an agent wrote is what the next answer sees.
func (r *running) syncOpen(c *lspclient.Client) {
	for _, p := range c.OpenDocs() {
		if _, err := c.Open(p, r.server.languageID(p)); err != nil {
			r.mu.Lock()
			delete(r.used, p)
			r.mu.Unlock()
		}
	}
}

// young reports whether the server started less than its Warmup ago.
func (r *running) young() bool {
	warmup, err := time.ParseDuration(r.server.Warmup)
	if err != nil || warmup <= 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.client != nil && time.Since(r.started) < warmup
}
