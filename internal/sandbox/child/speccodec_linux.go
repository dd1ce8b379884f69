package child

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The spec crosses one socket between two copies of the same binary: the
// launcher starts the child from /proc/self/exe. So its encoding needs no
// version, no names and no tolerance of unknown fields: each field in a
// fixed order, numbers as varints, strings and lists after their length,
// the flags of a value as the bits of one varint. encoding/json, which
// this replaced, built its decoder of Spec by reflection on the child's
// first and only decode: 0.4 ms of the child's CPU on the way to the
// tool's exec, and 0.2 ms of gemkit's to encode it (git show f68add0:bench/README.md,
// "the spec in binary"). TestSpecBinary fills every field of a Spec with
// random values, so a field added to Spec, PathRule or Mount and left
// out here fails it.

// MarshalBinary encodes s for the child (UnmarshalBinary).
func (s *Spec) MarshalBinary() ([]byte, error) {
	w := &specWriter{b: make([]byte, 0, 4096)}
	w.str(s.Path)
	putList(w, s.Argv, w.str)
	putList(w, s.Env, w.str)
	putList(w, s.Rules, func(r PathRule) {
		w.str(r.Path)
		w.str(r.Why)
		w.flags(r.Write, r.ListOnly, r.File, r.Optional, r.NoCreate)
	})
	w.int(s.LandlockABI)
	w.int(s.ProxyPort)
	w.int(s.ResolverPort)
	w.flags(s.NotifyConnect, s.NotifyWrites, s.NotifyRemoves, s.DenySockets, s.AllowUnix,
		s.OwnProc, s.DenySession, s.DenyMetadata, s.DenyFallocate, s.Gated)
	w.uint(s.MemoryBytes)
	w.uint(s.FileBytes)
	w.int(s.PidMax)
	putList(w, s.Mounts, func(m Mount) {
		w.str(string(m.Kind))
		w.str(m.Path)
		w.str(m.Source)
		w.str(m.Target)
		w.flags(m.Write, m.File, m.Device, m.Optional)
		w.uint(m.Size)
		w.uint(m.Inodes)
		w.str(m.Content)
	})
	w.str(s.MountBase)
	w.str(s.Dir)
	putList(w, s.Join, w.int)
	return w.b, nil
}

// UnmarshalBinary decodes what MarshalBinary encoded into s. Whatever
// does not decode, or is left over, is an error: the spec is all the
// child knows of the sandbox it must build.
func (s *Spec) UnmarshalBinary(b []byte) error {
	r := &specReader{b: b}
	*s = Spec{}
	s.Path = r.str()
	s.Argv = list(r, func(v *string) { *v = r.str() })
	s.Env = list(r, func(v *string) { *v = r.str() })
	s.Rules = list(r, func(p *PathRule) {
		p.Path = r.str()
		p.Why = r.str()
		r.flags(&p.Write, &p.ListOnly, &p.File, &p.Optional, &p.NoCreate)
	})
	s.LandlockABI = r.int()
	s.ProxyPort = r.int()
	s.ResolverPort = r.int()
	r.flags(&s.NotifyConnect, &s.NotifyWrites, &s.NotifyRemoves, &s.DenySockets, &s.AllowUnix,
		&s.OwnProc, &s.DenySession, &s.DenyMetadata, &s.DenyFallocate, &s.Gated)
	s.MemoryBytes = r.uint()
	s.FileBytes = r.uint()
	s.PidMax = r.int()
	s.Mounts = list(r, func(m *Mount) {
		m.Kind = MountKind(r.str())
		m.Path = r.str()
		m.Source = r.str()
		m.Target = r.str()
		r.flags(&m.Write, &m.File, &m.Device, &m.Optional)
		m.Size = r.uint()
		m.Inodes = r.uint()
		m.Content = r.str()
	})
	s.MountBase = r.str()
	s.Dir = r.str()
	s.Join = list(r, func(v *int) { *v = r.int() })
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%d bytes after its end", len(r.b))
	}
	if r.err != nil {
		return fmt.Errorf("the spec does not decode: %w", r.err)
	}
	return nil
}

type specWriter struct{ b []byte }

func (w *specWriter) uint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *specWriter) int(v int)     { w.b = binary.AppendVarint(w.b, int64(v)) }

func (w *specWriter) str(s string) {
	w.uint(uint64(len(s)))
	w.b = append(w.b, s...)
}

// putList writes the length of xs, then each element by put.
func putList[T any](w *specWriter, xs []T, put func(T)) {
	w.uint(uint64(len(xs)))
	for _, x := range xs {
		put(x)
	}
}

// flags writes the booleans bs as the bits of one number, the first the
// lowest.
func (w *specWriter) flags(bs ...bool) {
	var f uint64
	for i, b := range bs {
		if b {
			f |= 1 << i
		}
	}
	w.uint(f)
}

// specReader reads what specWriter wrote; its first error stops it, and
// every read after it gives the zero value.
type specReader struct {
	b   []byte
	err error
}

var errSpecShort = errors.New("it ends in the middle of a value")

func (r *specReader) uint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errSpecShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *specReader) int() int {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 || int64(int(v)) != v {
		r.err = errSpecShort
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}

// count reads the length of a list, which cannot be more than the bytes
// left (each element takes one at least): a wrong length fails here, not
// in an allocation.
func (r *specReader) count() int {
	n := r.uint()
	if r.err == nil && n > uint64(len(r.b)) {
		r.err = fmt.Errorf("a list of %d elements in %d bytes", n, len(r.b))
		return 0
	}
	return int(n)
}

func (r *specReader) str() string {
	n := r.uint()
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.b)) {
		r.err = errSpecShort
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// list reads what putList wrote, each element by get; an empty list
// is nil.
func list[T any](r *specReader, get func(*T)) []T {
	n := r.count()
	if n == 0 {
		return nil
	}
	xs := make([]T, n)
	for i := range xs {
		get(&xs[i])
	}
	return xs
}

// flags sets each of bs from the bits of one number, as specWriter.flags
// wrote them; a bit beyond them is an error.
func (r *specReader) flags(bs ...*bool) {
	f := r.uint()
	if f>>len(bs) != 0 {
		r.err = fmt.Errorf("flag bits %#x where %d are known", f, len(bs))
		return
	}
	for i, b := range bs {
		*b = f&(1<<i) != 0
	}
}
