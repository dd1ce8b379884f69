//go:build !unix

package cli

import "os"

// protocolStdout gives the protocol the process's standard output: what
// gemkit itself prints through os.Stdout goes to standard error instead.
func protocolStdout() (out *os.File, restore func(), err error) {
	saved := os.Stdout
	os.Stdout = os.Stderr
	return saved, func() { os.Stdout = saved }, nil
}
