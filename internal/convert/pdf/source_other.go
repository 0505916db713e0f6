//go:build !linux

package pdf

import (
	"fmt"
	"os"
)

// writeSource writes data to a named temporary file, removed at close. An
// unlinked file opened as /dev/fd/3 (source_linux.go) is only relied on
// where it was verified: elsewhere /dev/fd/N may share one offset between
// the processes reading it side by side, or not exist. Here a crash leaves
// the file in the temporary directory.
func writeSource(data []byte) (*source, error) {
	f, err := os.CreateTemp("", "docjobs-pdf-*.pdf")
	if err != nil {
		return nil, fmt.Errorf("pdf: temp file: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("pdf: temp file: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return nil, fmt.Errorf("pdf: temp file: %w", err)
	}
	return &source{arg: f.Name(), name: f.Name()}, nil
}
