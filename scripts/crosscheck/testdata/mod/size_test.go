package mod

import "testing"

// A test's address fits a uintptr only on CPUs of 64 bits: its test
// binary does not build for 32 bits, which only a check of tests finds.
func TestAddress(t *testing.T) {
	var at uintptr = 0x7f0000002000
	_ = at
}
