package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"

	"github.com/docjobs/docjobs/internal/store"
)

// convertTemp is the folder conversions write their temporary files to
// (excelize's copies of big sheets, LibreOffice's working folder: a user's
// document in plain text): DOCJOBS_DATA_DIR/tmp/<node id>, 0700. A process
// killed mid-conversion leaves its files there, and the next process to
// hold that node id empties the folder before any conversion uses it.
//
// The node id is exclusive within a database, but two deployments with
// databases of their own may share a data directory (two serves started
// from one directory, sharing ./data, with different
// DOCJOBS_DATABASE_URLs) and a node id (the host name): each would empty,
// then share, the other's folder. So the folder is also locked, with a
// flock on DOCJOBS_DATA_DIR/tmp/<node id>.lock held for as long as the
// process holds the id (the kernel drops it when the process dies, kill -9
// included). A process that cannot take the lock does not work under that
// id: a configured DOCJOBS_NODE_ID refuses to start, a host-derived one
// moves on to the next (store.WorkConfig.ClaimNode). PDFs need no folder
// (poppler reads an unlinked file).
type convertTemp struct {
	dataDir string
	log     *slog.Logger
	ready   chan struct{}
	dir     string

	mu      sync.Mutex
	claimed map[string]string // node id -> its folder, locked and emptied
	failed  map[string]error  // node id -> why its folder could not be made
}

func newConvertTemp(dataDir string, log *slog.Logger) *convertTemp {
	return &convertTemp{dataDir: dataDir, log: log, ready: make(chan struct{}),
		claimed: map[string]string{}, failed: map[string]error{}}
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

// errFolderInUse is the ErrNodeHeld of a node id whose conversion folder
// another process has locked.
type errFolderInUse struct {
	node, dataDir string
}

func (e *errFolderInUse) Error() string {
	return fmt.Sprintf("the conversion folder of node id %s in DOCJOBS_DATA_DIR %s is in use by another running process (one with another database: the node id is free in this one)",
		e.node, e.dataDir)
}

func (e *errFolderInUse) Unwrap() error { return store.ErrNodeHeld }

// claim locks node's folder and empties it (store.WorkConfig.ClaimNode),
// now that this process holds node in the database: for the id it works
// under, and for a host sibling whose jobs it reclaims. A folder another
// process has locked is an errFolderInUse. A folder that cannot be made
// is no reason to stop: conversions then use the system's temporary
// directory (use says so).
func (c *convertTemp) claim(node string) (func(), error) {
	dir, unlock, err := lockTempDir(c.dataDir, node)
	c.mu.Lock()
	defer c.mu.Unlock()
	if errors.Is(err, store.ErrNodeHeld) {
		return nil, &errFolderInUse{node: node, dataDir: c.dataDir}
	}
	if err != nil {
		c.failed[node] = err
		return func() {}, nil
	}
	c.claimed[node] = dir
	return func() {
		c.mu.Lock()
		delete(c.claimed, node)
		c.mu.Unlock()
		unlock()
	}, nil
}

// use lets conversions use node's folder, claimed when Work took node.
// Without a node id, or when the folder could not be made, conversions use
// the system's temporary directory, as before, and a crash may leave files
// there.
func (c *convertTemp) use(node string) {
	c.mu.Lock()
	dir, ok := c.claimed[node]
	err := c.failed[node]
	c.mu.Unlock()
	if !ok {
		if err == nil {
			err = errors.New("no node id (DOCJOBS_NODE_ID unset and no host name) to name a folder of this process's own")
		}
		dir = os.TempDir()
		c.log.Warn("conversions write their temporary files to the system's temporary directory, which a crash may leave them in",
			"dir", dir, "err", err)
	}
	c.dir = dir
	close(c.ready)
}

// lockTempDir takes the flock of dataDir/tmp/<node>.lock without waiting
// (store.ErrNodeHeld when another open file holds it), then removes
// dataDir/tmp/<node> with whatever is in it and makes it again, empty.
// unlock gives the lock up. The lock file stays: removing it would let a
// process that opened it just before lock a file no one else sees.
func lockTempDir(dataDir, node string) (dir string, unlock func(), err error) {
	if node == "" {
		return "", nil, errors.New("no node id to name a folder")
	}
	name := url.PathEscape(node)
	if name == "." || name == ".." {
		return "", nil, fmt.Errorf("node id %q cannot name a folder", node)
	}
	root := filepath.Join(dataDir, "tmp")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", nil, fmt.Errorf("conversion folder: %w", err)
	}
	lock, err := store.LockFile(filepath.Join(root, name+".lock"))
	if errors.Is(err, store.ErrNodeHeld) {
		return "", nil, err
	}
	if err != nil {
		return "", nil, fmt.Errorf("conversion folder lock: %w", err)
	}
	unlock = func() { _ = lock.Close() } // closing the file drops the flock
	dir = filepath.Join(root, name)
	if err := os.RemoveAll(dir); err != nil {
		unlock()
		return "", nil, fmt.Errorf("empty the conversion folder: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		unlock()
		return "", nil, fmt.Errorf("conversion folder: %w", err)
	}
	return dir, unlock, nil
}
