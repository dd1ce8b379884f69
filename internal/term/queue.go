package term

import (
	"slices"

	"github.com/gemkit/gemkit/companion"
)

// The queue of diffs waiting for an answer, in the order they came. The
// companion's goroutines add and close diffs (OpenDiff, CloseDiff); Run's
// goroutine shows the head and resolves it. Every method holds f.mu.

// pendingDiff is one proposed change waiting for an answer.
type pendingDiff struct {
	path string
	// content is the right side as it stands: the proposal, or the
	// person's edit of it.
	content string
	edited  bool
	// agent proposed it (companion.ProposedBy); "" when not known.
	agent string
	// version changes whenever content does, so that Run shows the diff
	// again.
	version int
}

func (f *Frontend) indexLocked(path string) int {
	return slices.IndexFunc(f.queue, func(d *pendingDiff) bool { return d.path == path })
}

// head returns the diff to ask about, its version, its place and the
// queue length, and takes the notices to print.
func (f *Frontend) head() (d *pendingDiff, version, n int, notices []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	notices, f.notices = f.notices, nil
	if len(f.queue) == 0 {
		return nil, 0, 0, notices
	}
	return f.queue[0], f.queue[0].version, len(f.queue), notices
}

// take removes d from the queue and reports whether it was still there,
// so that an answer never resolves a diff the CLI closed meanwhile.
func (f *Frontend) take(d *pendingDiff) (content string, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.Index(f.queue, d)
	if i < 0 {
		return "", false
	}
	f.queue = slices.Delete(f.queue, i, i+1)
	f.statusDirty = true
	return d.content, true
}

// snapshot returns d's right side and whether it is the person's edit, if
// d is still waiting.
func (f *Frontend) snapshot(d *pendingDiff) (content string, edited bool, version int, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Contains(f.queue, d) {
		return "", false, 0, false
	}
	return d.content, d.edited, d.version, true
}

// setEdited stores the person's edit of d, unless d was closed or replaced
// by a newer proposal while the editor ran.
func (f *Frontend) setEdited(d *pendingDiff, version int, content string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Contains(f.queue, d) || d.version != version {
		return false
	}
	if content == d.content {
		// Quit without a change (:q!): the proposal stands as it was.
		return true
	}
	d.content, d.edited = content, true
	d.version++
	return true
}

// drain empties the queue for good and returns what waited.
func (f *Frontend) drain() []*pendingDiff {
	f.mu.Lock()
	defer f.mu.Unlock()
	queue := f.queue
	f.queue = nil
	f.stopped = true
	return queue
}

// agentOf is the agent that proposed d, as it stands.
func (f *Frontend) agentOf(d *pendingDiff) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return d.agent
}

// proposerGone says why nobody will write d once accepted: the CLI that
// proposed it is no longer connected (or, when d does not name it, no
// CLI is). "" when one is, or when Options.Clients does not tell.
func (f *Frontend) proposerGone(d *pendingDiff) string {
	if f.opts.Clients == nil {
		return ""
	}
	f.mu.Lock()
	agent := d.agent
	f.mu.Unlock()
	clients := f.opts.Clients()
	if agent == "" {
		if len(clients) == 0 {
			return "no CLI is connected"
		}
		return ""
	}
	if slices.ContainsFunc(clients, func(c companion.Client) bool { return c.Agent == agent }) {
		return ""
	}
	return agent + ", which proposed it, is no longer connected"
}
