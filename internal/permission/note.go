package permission

// Note says how one permission is enforced on this machine,
// for the "Enforcement on this machine" section of `describe`.
type Note struct {
	// Permission names what is enforced, e.g. "filesystem.read".
	Permission string `json:"permission"`
	// How says by what means, e.g. "Landlock: read-only access to /ws".
	How string `json:"how"`
	// Enforced is false when the machine cannot enforce it (and says so
	// in How).
	Enforced bool `json:"enforced"`
	// Refuses says that, not enforced, it makes a run refuse unless the
	// caller allows running with less confinement
	// (sandbox.Launcher.AllowUnconfined); how a person allows it is the
	// command's to add.
	Refuses bool `json:"-"`
}
