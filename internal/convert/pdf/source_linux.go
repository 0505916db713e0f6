package pdf

import (
	"fmt"
	"os"
)

// writeSource writes data to a temporary file that has no name: it is
// unlinked before a byte is written, and each poppler process opens it as
// /dev/fd/3, its inherited copy of our descriptor. On Linux that open is a
// fresh open of the file (its own offset), so processes reading it side by
// side do not disturb each other, and seeking works as on a named file. The
// kernel frees the bytes when the last descriptor closes, which a killed
// process's do too: a crash leaves nothing readable behind, at worst an
// empty file if it came between the create and the unlink.
func writeSource(data []byte) (*source, error) {
	f, err := os.CreateTemp("", "docjobs-pdf-*.pdf")
	if err != nil {
		return nil, fmt.Errorf("pdf: temp file: %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("pdf: temp file: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, fmt.Errorf("pdf: temp file: %w", err)
	}
	return &source{arg: "/dev/fd/3", file: f}, nil
}
