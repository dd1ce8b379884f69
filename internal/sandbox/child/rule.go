// Package child is the sandbox child: the re-executed copy of gemkit that
// sets up Landlock, seccomp, resource limits and the network namespace's
// loopback before it execs a tool. It is its own package, importing only
// the standard library and x/sys/unix, so that its init takes over the
// process before gemkit's heavier dependencies initialize; the launcher
// in package sandbox starts it.
package child

// PathRule grants access beneath one path. Rules only ever add access;
// everything not beneath a rule is denied.
type PathRule struct {
	Path  string `json:"path"`
	Write bool   `json:"write,omitempty"` // read, write, create, remove; else read and execute
	// ListOnly grants listing directories beneath the path, not reading
	// files: the ancestors of a protected folder inside a readable scope.
	ListOnly bool   `json:"listOnly,omitempty"`
	File     bool   `json:"file,omitempty"` // the path is a single file, not a directory
	Why      string `json:"why,omitempty"`  // the reason, for describe and debugging
	// Optional rules are skipped when the path has vanished by the time
	// the sandbox is built (a sibling split out of a writable scope that
	// another program removed); skipping a rule only takes access away.
	Optional bool `json:"optional,omitempty"`
	// NoCreate, with Write, leaves the tool's own calls only the rights
	// to read beneath the path (a folder of the write scope that holds
	// protected names): the parent makes, writes, renames and removes
	// there on the tool's behalf each name that is not a protected one
	// (Spec.NotifyWrites), and the folders that existed in it when the
	// tool started keep rules of their own. The bind stays writable.
	NoCreate bool `json:"noCreate,omitempty"`
}

// Mount is one step in building the tool's view of the filesystem inside
// its mount namespace: a new root on an empty tmpfs holding only what the
// steps put there.
type Mount struct {
	Kind MountKind `json:"kind"`
	// Path is where the step acts in the tool's view; for a bind it is
	// also the source, in the old root (the same path outside), unless
	// Source names another.
	Path string `json:"path"`
	// Source is a bind's source in the old root when it is not Path: a
	// file handed to the tool at a place of its own (Policy.Handed).
	Source string `json:"source,omitempty"`
	// Target is a symlink's target.
	Target string `json:"target,omitempty"`
	// Write makes a bind writable; every other bind is read-only.
	Write bool `json:"write,omitempty"`
	// File is true when a bind's source is a single file (or device).
	File bool `json:"file,omitempty"`
	// Device keeps device nodes usable (no nodev): the few harmless
	// character devices of /dev.
	Device bool `json:"device,omitempty"`
	// Size bounds a tmpfs, in bytes.
	Size uint64 `json:"size,omitempty"`
	// Inodes bounds the number of files of a tmpfs (nr_inodes); 0: the
	// kernel's default (half the machine's pages).
	Inodes uint64 `json:"inodes,omitempty"`
	// Optional steps are skipped when the source has vanished.
	Optional bool `json:"optional,omitempty"`
	// Content is a MountFile's whole content.
	Content string `json:"content,omitempty"`
}

// MountKind says what a Mount step does.
type MountKind string

// The kinds of Mount steps.
const (
	MountBind    MountKind = "bind"    // bind Path of the old root at Path
	MountDir     MountKind = "dir"     // an empty directory (a folder on the way to a bind)
	MountSymlink MountKind = "symlink" // a symlink Path -> Target
	MountTmpfs   MountKind = "tmpfs"   // a writable tmpfs of Size bytes (the private temp dir)
	MountProc    MountKind = "proc"    // /proc of the tool's own PID namespace
	// MountPrivateDir covers the existing folder Path (reached without
	// a symlink, inside a writable bind) with a writable tmpfs of Size
	// bytes and Inodes files for the run: the place of handed files,
	// which leaves nothing in the folder beneath.
	MountPrivateDir MountKind = "privatedir"
	// MountFile puts a file of Content at Path on the new root, in place
	// of whatever an earlier step put there (a bind of the host's file,
	// a symlink): the sandbox's own resolv.conf.
	MountFile MountKind = "file"
)
