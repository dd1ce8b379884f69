package exthook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gemkit/gemkit/internal/hookclient"
	"github.com/gemkit/gemkit/internal/hookout"
	"github.com/gemkit/gemkit/internal/proc"
	"github.com/gemkit/gemkit/internal/sandbox"
	"golang.org/x/sys/unix"
)

// A warm sandbox is the next run of one hook, set up ahead: once a hook
// has run, `gemkit extensions hook` leaves a process of its own (the
// warm server, Serve) that sets up the hook's sandbox again (namespaces,
// root, Landlock, seccomp, cgroup, and its side of the watch: proxy,
// seccomp notifications, refusal reports) and holds it at its start
// word, then waits on a socket in gemkit's private runtime folder whose
// name is the key of everything the run depends on (Key). The next
// `gemkit extensions hook` of the same hook, extension, workspace,
// settings, environment, binary and session finds it there, passes its
// stdin, stdout and stderr over the socket, and gets the exit code back;
// the server checks the person's consent to the extension as it is then
// (the hook's Gate, as a cold run does) before the command runs, and sets
// up the next one. It ends after Idle without a run, when the session
// that ran the hook ends, or when a check fails.

// WarmIdle is how long a warm sandbox waits for a run before its server
// ends.
const WarmIdle = 60 * time.Second

// claimant is a client that claimed a warm sandbox: its connection and
// the descriptors it passed.
type claimant struct {
	conn *net.UnixConn
	// stdin is read by number, without an *os.File, whose Fd would put
	// the description it shares with Gemini CLI in blocking mode.
	stdin          int
	stdout, stderr *os.File
	closeOnce      sync.Once
}

func (c *claimant) close() {
	c.closeOnce.Do(func() {
		c.conn.Close()
		unix.Close(c.stdin)
		c.stdout.Close()
		c.stderr.Close()
	})
}

// receive reads a client's request and the three descriptors it passes,
// after checking that it runs as this user, outside any sandbox, and
// serves only the run whose identity is id (hookclient.Identity): the
// socket's name is a digest of it that anyone could match.
func receive(conn *net.UnixConn, id []byte) (*claimant, error) {
	if err := proc.SameUser(conn); err != nil {
		return nil, err
	}
	if err := unconfinedPeer(conn); err != nil {
		return nil, err
	}
	buf := make([]byte, 5+len(id))
	oob := make([]byte, unix.CmsgSpace(3*4))
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	defer conn.SetReadDeadline(time.Time{})
	n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	if oobn > 0 {
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err == nil && len(msgs) == 1 {
			fds, err = unix.ParseUnixRights(&msgs[0])
		}
		if err != nil {
			return nil, err
		}
	}
	closeFDs := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	if n < 5 || buf[0] != hookclient.Request || len(fds) != 3 {
		closeFDs()
		return nil, errors.New("not a hook's request")
	}
	// The identity's length first: a longer one than this run's is
	// another run's, and its rest is not read.
	if size := int(buf[1])<<24 | int(buf[2])<<16 | int(buf[3])<<8 | int(buf[4]); size != len(id) {
		closeFDs()
		return nil, errors.New("another run's request")
	}
	if _, err := io.ReadFull(conn, buf[n:]); err != nil {
		closeFDs()
		return nil, err
	}
	if !bytes.Equal(buf[5:], id) {
		closeFDs()
		return nil, errors.New("another run's request")
	}
	for _, fd := range fds {
		unix.CloseOnExec(fd)
	}
	return &claimant{conn: conn, stdin: fds[0],
		stdout: os.NewFile(uintptr(fds[1]), "hook-stdout"), stderr: os.NewFile(uintptr(fds[2]), "hook-stderr")}, nil
}

// unconfinedPeer refuses a peer in another mount namespace than the
// server's: every sandboxed process with its own root is, and gemkit's
// hook, started by Gemini CLI where the server's first run was, is not.
// The socket's folder is closed to sandboxed processes already (and a
// sandbox without its own root has no socket at all); this holds
// whatever a person widened. The pid is the peer's when it connected;
// one that has gone since fails the check.
func unconfinedPeer(conn *net.UnixConn) error {
	cred, err := proc.Peer(conn)
	if err != nil {
		return fmt.Errorf("the peer's credentials: %w", err)
	}
	mine, err := proc.MountNS(0)
	if err != nil {
		return err
	}
	theirs, err := proc.MountNS(cred.PID)
	if err != nil {
		return fmt.Errorf("the peer's mount namespace: %w", err)
	}
	if theirs != mine {
		return errors.New("the peer runs in another mount namespace (a sandbox)")
	}
	return nil
}

// runClaimed sets up the hook's sandbox now, and runs its command once
// claim returns a claimant and the hook's Gate (consent) has passed. Its
// stdin, stdout and stderr are pipes of the run, copied from and to the
// claimant's descriptors from the claim on; its timeout counts from the
// claim; gemkit's answer for the run (answer) goes to the claimant's
// stdout and stderr once the command has exited. The claimant is acknowledged (and onClaim called) only while
// the run can still be its: one that comes after the sandbox failed is
// closed unacknowledged, and runs the hook itself. Once the command has
// exited and its output is copied, onEnd gets its exit code, before the
// sandbox's own clean-up; then runClaimed returns. c is nil when no one
// claimed it (claim's error is err then); otherwise the caller answers
// it, with onEnd's code unless err says the command did not run.
func (h *Hook) runClaimed(ctx context.Context, l *sandbox.Launcher, claim func(context.Context) (*claimant, error), onClaim func(), onEnd func(code int)) (res Result, c *claimant, err error) {
	pipes, err := runPipes()
	if err != nil {
		return Result{}, nil, err
	}
	defer func() {
		for _, f := range pipes {
			f.Close()
		}
	}()
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r := &claimedRun{
		h: h, claim: claim, onClaim: onClaim, onEnd: onEnd, runCtx: runCtx, cancel: cancel,
		inR: pipes[0], inW: pipes[1], outR: pipes[2], outW: pipes[3], errR: pipes[4], errW: pipes[5],
		tail:   &tailBuffer{max: 64 << 10},
		stopIn: make(chan struct{}), inDone: make(chan struct{}),
	}
	// Last deferred, first run: no claim is taken after this, and the
	// copy of stdin has ended when the caller gets the claimant.
	defer func() { c = r.finish() }()
	res, err = h.run(runCtx, l, r.inR, r.outW, r.errW, runHooks{gate: r.gate, exited: r.exited, started: func(bool) {
		// The child has its ends of the pipes.
		r.inR.Close()
		r.outW.Close()
		r.errW.Close()
	}})
	if err != nil {
		return Result{}, nil, err
	}
	if !r.copied {
		return Result{}, nil, errors.New("the hook's end was not seen")
	}
	res.Stderr = r.tail.String()
	res.TimedOut = errors.Is(context.Cause(runCtx), context.DeadlineExceeded)
	res.Dropped = r.dropped
	return res, nil, nil
}

// runPipes are the pipes of a run's stdin, stdout and stderr, each's read
// then write end; none is left open when one cannot be made.
func runPipes() (pipes [6]*os.File, err error) {
	for i := 0; i < 6; i += 2 {
		if pipes[i], pipes[i+1], err = os.Pipe(); err != nil {
			for _, f := range pipes[:i] {
				f.Close()
			}
			return [6]*os.File{}, err
		}
	}
	return pipes, nil
}

// claimedRun is one runClaimed: what its gate (the claim), its exit and
// its end share, from the sandbox's goroutines and the claimant's copies.
type claimedRun struct {
	h       *Hook
	claim   func(context.Context) (*claimant, error)
	onClaim func()
	onEnd   func(code int)
	runCtx  context.Context
	cancel  context.CancelCauseFunc

	inR, inW, outR, outW, errR, errW *os.File

	mu       sync.Mutex // guards got, finished and timer
	got      *claimant
	finished bool
	timer    *time.Timer

	tail *tailBuffer
	// What the hook writes is kept until it has ended: gemkit answers
	// Gemini CLI in its place (answer).
	out, errb hookout.Buffer
	dropped   []hookout.Drop
	copies    sync.WaitGroup
	// The copy of the claimant's stdin reads its descriptor by number:
	// it ends (stopIn, then inDone) before that descriptor is closed,
	// whose number the next sandbox's pipes may take.
	stopIn, inDone chan struct{}
	stopOnce       sync.Once
	inStarted      atomic.Bool
	ended          atomic.Bool // the command has exited
	copied         bool
}

// endIn stops the copy of the claimant's stdin and waits for it to end.
func (r *claimedRun) endIn() {
	r.stopOnce.Do(func() { close(r.stopIn) })
	if r.inStarted.Load() {
		<-r.inDone
	}
}

// waitCopies waits for the copies of the command's output. The command
// and all it started have ended (its PID namespace, or its process
// group), or never ran: the pipes end with them; a bound all the same,
// as exec.Cmd's WaitDelay.
func (r *claimedRun) waitCopies() {
	// No claim is taken from here on: the gate's copies.Add, under mu,
	// comes before this Wait or not at all (a command that ended before
	// its gate claimed a run takes none).
	r.mu.Lock()
	r.finished = true
	r.mu.Unlock()
	done := make(chan struct{})
	go func() { r.copies.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		r.outR.Close()
		r.errR.Close()
		<-done
	}
}

// finish ends the run's claiming and copies, and returns its claimant
// (nil: none claimed it).
func (r *claimedRun) finish() *claimant {
	r.mu.Lock()
	r.finished = true
	c := r.got
	if r.timer != nil {
		r.timer.Stop()
	}
	r.mu.Unlock()
	r.endIn()
	r.waitCopies()
	return c
}

// gate waits for a claimant, takes it unless the sandbox has ended,
// starts the copies to and from it, acknowledges it, and then passes the
// hook's own Gate (consent).
func (r *claimedRun) gate(gctx context.Context) error {
	cl, err := r.claim(gctx)
	if err != nil {
		return err
	}
	r.mu.Lock()
	if r.finished {
		r.mu.Unlock()
		cl.close()
		return errors.New("the sandbox ended before the run")
	}
	r.got = cl
	r.inStarted.Store(true)
	r.copies.Add(2)
	r.timer = time.AfterFunc(r.h.timeout(), func() { r.cancel(context.DeadlineExceeded) })
	r.mu.Unlock()
	// The pipes carry nothing until the command runs, and nothing ever
	// if it does not (the child is killed): the copies start now, so
	// that the command's input is there when it starts.
	go func() { defer r.copies.Done(); _, _ = io.Copy(&r.out, r.outR) }()
	go func() { defer r.copies.Done(); _, _ = io.Copy(io.MultiWriter(&r.errb, r.tail), r.errR) }()
	go func() { defer close(r.inDone); copyIn(r.inW, cl.stdin, r.stopIn) }()
	if _, err := cl.conn.Write([]byte{hookclient.Claimed}); err != nil {
		return fmt.Errorf("the hook's gemkit process: %w", err)
	}
	if r.onClaim != nil {
		r.onClaim()
	}
	// A client that goes (Gemini CLI stopped it at its timeout) takes
	// its run with it.
	go func() {
		var b [1]byte
		_, _ = cl.conn.Read(b[:])
		if !r.ended.Load() {
			r.cancel(errors.New("the hook's gemkit process ended"))
		}
	}()
	if r.h.Gate != nil {
		return r.h.Gate(gctx)
	}
	return nil
}

// exited answers the claimant once the command has exited and its
// output is copied, and hands its exit code to onEnd.
func (r *claimedRun) exited(ps *os.ProcessState) {
	r.ended.Store(true)
	r.waitCopies()
	r.endIn()
	r.copied = true
	code := ps.ExitCode()
	if code < 0 {
		code = 1 // killed: see run
	}
	r.mu.Lock()
	cl := r.got
	r.mu.Unlock()
	timedOut := errors.Is(context.Cause(r.runCtx), context.DeadlineExceeded)
	ans := r.h.answer(Result{ExitCode: code, TimedOut: timedOut}, &r.out, &r.errb, cl.stdout, cl.stderr)
	r.dropped = ans.Dropped
	r.onEnd(ans.ExitCode)
}

// Serve serves warm runs of s.Hook on s.Listener until one of them stays
// unclaimed for s.Idle, ctx ends, or a run fails before its command
// started (a refusal: the server does not outlive what it checks). It
// sets up one sandbox ahead, and the next one once the run it was
// claimed for has been answered, or at once when another run is already
// waiting (runs side by side). Setting it up beside the run took
// processor time from the run itself (a Go process's start, the mounts):
// at load 15 to 20 on two cores, the hook's exec to its first line went
// from 6.1 to 3.5 ms at p50 once the next set-up waited for the answer.
func (s *Server) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	idle := s.Idle
	if idle <= 0 {
		idle = WarmIdle
	}
	waiting := make(chan *net.UnixConn, 16)
	// queued says a connection was queued since it was last drained.
	queued := make(chan struct{}, 1)
	go s.accept(waiting, queued)
	defer func() {
		s.Listener.Close()
		for conn := range waiting {
			conn.Close()
		}
	}()
	var runs sync.WaitGroup
	defer runs.Wait()
	var failed serveFailure
	for {
		w := warmSlot{claimed: make(chan struct{}), answered: make(chan struct{}), failed: &failed, cancel: cancel}
		w.claim = func(gctx context.Context) (*claimant, error) { return s.claim(gctx, waiting, idle) }
		ended := make(chan struct{})
		runs.Add(1)
		go func() {
			defer runs.Done()
			defer close(ended)
			s.serveRun(ctx, &w)
		}()
		select {
		case <-w.claimed:
		case <-ended:
			if err := failed.get(); err != nil {
				return err
			}
			return ctx.Err()
		}
		// The next sandbox is set up once this run is answered, or at
		// once for a run that waits already (queued after the drain is
		// seen by len, before it by queued).
		select {
		case <-queued:
		default:
		}
		if len(waiting) == 0 {
			select {
			case <-w.answered:
			case <-ended:
			case <-queued:
			case <-ctx.Done():
			}
		}
		if err := failed.get(); err != nil {
			return err
		}
	}
}

// serveFailure is the last error that ends Serve, set from its runs.
type serveFailure struct {
	mu  sync.Mutex
	err error
}

func (f *serveFailure) set(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

func (f *serveFailure) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// warmSlot is one sandbox Serve sets up ahead: how it is claimed, and the
// signals Serve waits on to set up the next one.
type warmSlot struct {
	claim    func(context.Context) (*claimant, error)
	claimed  chan struct{} // closed once a claimant is acknowledged
	answered chan struct{} // closed once the claimant has its answer
	failed   *serveFailure
	cancel   context.CancelFunc // ends Serve
}

// accept queues the listener's connections on waiting until it closes,
// then closes waiting; a connection past the queue is closed, and its
// client runs its hook cold.
func (s *Server) accept(waiting chan<- *net.UnixConn, queued chan<- struct{}) {
	defer close(waiting)
	for {
		conn, err := s.Listener.AcceptUnix()
		if err != nil {
			return
		}
		select {
		case waiting <- conn:
			select {
			case queued <- struct{}{}:
			default:
			}
		default:
			conn.Close() // more than the queue: those run cold
		}
	}
}

// claim takes the next waiting connection whose request is for this
// server's identity, or errIdle after idle without one.
func (s *Server) claim(gctx context.Context, waiting <-chan *net.UnixConn, idle time.Duration) (*claimant, error) {
	t := time.NewTimer(idle)
	defer t.Stop()
	for {
		var conn *net.UnixConn
		select {
		case conn = <-waiting:
			if conn == nil {
				return nil, errors.New("the listener closed")
			}
		case <-t.C:
			return nil, errIdle
		case <-gctx.Done():
			return nil, gctx.Err()
		}
		cl, err := receive(conn, s.Identity)
		if err != nil {
			conn.Close()
			continue
		}
		// A run the sandbox was not set up for (the store says other
		// things of the hook now) is left unclaimed: its client runs it
		// the cold way, and this server ends.
		if s.Fresh != nil {
			if err := s.Fresh(); err != nil {
				s.Listener.Close()
				cl.close()
				return nil, fmt.Errorf("%w: %v", ErrStale, err)
			}
		}
		return cl, nil
	}
}

// serveRun runs one warm sandbox to its end and answers its claimant. A
// run that failed before its command (a refusal) is answered with why,
// and ends Serve; one no one claimed ends it unless it was idle.
func (s *Server) serveRun(ctx context.Context, w *warmSlot) {
	start := time.Now()
	var answered bool
	answer := func(cl *claimant, ans hookclient.Answer) {
		_, _ = cl.conn.Write(ans.Encode())
		cl.close()
		answered = true
		close(w.answered)
	}
	var claimed *claimant
	res, cl, err := s.Hook.runClaimed(ctx, s.Launcher, func(gctx context.Context) (*claimant, error) {
		cl, err := w.claim(gctx)
		claimed = cl
		return cl, err
	}, func() { close(w.claimed) }, func(code int) { answer(claimed, hookclient.Answer{Code: code}) })
	if cl == nil {
		if !errors.Is(err, errIdle) && ctx.Err() == nil {
			w.failed.set(err)
		}
		return
	}
	switch {
	case err != nil && !answered:
		answer(cl, hookclient.Answer{Code: 1, Refused: err.Error()})
		w.failed.set(err)
		w.cancel()
	case err == nil && s.Done != nil:
		s.Done(start, res)
	}
	if !answered {
		cl.close()
	}
}

var errIdle = errors.New("no run came")

// ErrStale is Serve's error when it ended because a run came that its
// sandbox was not set up for (Server.Fresh).
var ErrStale = errors.New("the warm sandbox is stale")

// Server is a warm server (see Serve).
type Server struct {
	Hook     *Hook
	Launcher *sandbox.Launcher
	Listener *net.UnixListener
	// Identity is the identity of the runs it serves
	// (hookclient.Identity): a client whose request names another is
	// left to run its hook itself.
	Identity []byte
	// Idle ends the server when its sandbox waited so long unclaimed; 0
	// is WarmIdle.
	Idle time.Duration
	// Fresh, when set, is asked at each claim, before the run is
	// acknowledged, whether the sandbox set up ahead is still the run's;
	// an error leaves the run to its client and ends the server.
	Fresh func() error
	// Done, when set, is called after each run that ran its command,
	// with when its claim came and how it ended (its refusals).
	Done func(start time.Time, res Result)
}
