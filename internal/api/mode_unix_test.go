//go:build unix

package api

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// An upload is a document: stored on file:// storage it is the owner's
// only, even under a umask that would leave it open to everyone.
func TestAnUploadIsStoredForTheOwnerOnly(t *testing.T) {
	old := syscall.Umask(0) // the process's: this test must not run in parallel
	t.Cleanup(func() { syscall.Umask(old) })
	h := newHarness(t, Config{})
	f, _, err := h.svc.StoreUpload(as("acme"), "a.txt", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(h.bucketDir, filepath.FromSlash(f.Key)))
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("the stored upload has mode %04o, want 0600", perm)
	}
}
