//go:build !unix

package cli

import (
	"fmt"
	"os"
)

// flockFile opens path; there is no flock here, so two processes sharing a
// data directory and a node id with databases of their own are not kept
// apart.
func flockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("conversion folder lock: %w", err)
	}
	return f, nil
}
