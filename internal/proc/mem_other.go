//go:build !linux

package proc

func readOnlyOfExecutable() ([]region, error) { return []region{}, nil }

func advise([]region) (int64, error) { return 0, nil }
