//go:build !linux

package procstat

// Read is ErrUnsupported here.
func Read(int) (Stat, error) { return Stat{}, ErrUnsupported }

// ReadSelf is ErrUnsupported here.
func ReadSelf() (Stat, error) { return Stat{}, ErrUnsupported }
