//go:build !windows

package mod

const name = "unix"
