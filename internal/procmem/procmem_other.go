//go:build !linux

package procmem

func readOnlyOfExecutable() ([]region, error) { return []region{}, nil }

func advise([]region) (int64, error) { return 0, nil }
