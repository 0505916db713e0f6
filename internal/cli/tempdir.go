package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
)

// convertTemp is the folder conversions write their temporary files to
// (excelize's copies of big sheets, LibreOffice's working folder: a user's
// document in plain text): DOCJOBS_DATA_DIR/tmp/<node id>, 0700. A process
// killed mid-conversion leaves its files there, and the next process to
// hold that node id empties the folder before any conversion uses it: the
// id is exclusive, so no live process is writing there, and processes
// sharing a data directory have folders of their own. PDFs need no folder
// (poppler reads an unlinked file).
type convertTemp struct {
	ready chan struct{}
	dir   string
}

func newConvertTemp() *convertTemp {
	return &convertTemp{ready: make(chan struct{})}
}

// Dir is the folder, once the node id is held: the River client starts
// (and may start a conversion) just before Work says which id it holds.
func (c *convertTemp) Dir(ctx context.Context) (string, error) {
	select {
	case <-c.ready:
		return c.dir, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// take empties and makes node's folder, now that this process holds node,
// and lets conversions use it. Without a node id, or when the folder cannot
// be made, conversions use the system's temporary directory, as before,
// and a crash may leave files there.
func (c *convertTemp) take(dataDir, node string, log *slog.Logger) {
	dir, err := emptyTempDir(dataDir, node)
	if err != nil {
		dir = os.TempDir()
		log.Warn("conversions write their temporary files to the system's temporary directory, which a crash may leave them in",
			"dir", dir, "err", err)
	}
	c.dir = dir
	close(c.ready)
}

// emptyTempDir removes dataDir/tmp/<node> with whatever is in it and makes
// it again, empty.
func emptyTempDir(dataDir, node string) (string, error) {
	if node == "" {
		return "", errors.New("no node id (DOCJOBS_NODE_ID unset and no host name) to name a folder of this process's own")
	}
	name := url.PathEscape(node)
	if name == "." || name == ".." {
		return "", fmt.Errorf("node id %q cannot name a folder", node)
	}
	root := filepath.Join(dataDir, "tmp")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", fmt.Errorf("conversion folder: %w", err)
	}
	dir := filepath.Join(root, name)
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("empty the conversion folder: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("conversion folder: %w", err)
	}
	return dir, nil
}
