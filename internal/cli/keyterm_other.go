//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package cli

import (
	"context"
	"fmt"
	"io"
	"os"
)

// isTerminal reports whether f may be a terminal (or another device).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// readTerminalLine refuses: echo cannot be turned off here, and a key
// typed would show.
func readTerminalLine(context.Context, *os.File, io.Writer, string) ([]byte, error) {
	return nil, fmt.Errorf("%w: --key-stdin: stdin is a terminal, where the key would show as it is typed: pipe it in instead", errUsage)
}
