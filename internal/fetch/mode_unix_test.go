//go:build unix

package fetch

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"gocloud.dev/blob"

	"github.com/docjobs/docjobs/internal/config"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/outbound"
)

// withUmask sets the process umask for the test. The umask is the
// process's, so a test using it must not run in parallel.
func withUmask(t *testing.T, mask int) {
	t.Helper()
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

// wantMode fails the test unless path has permissions want.
func wantMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != want {
		t.Errorf("%s has mode %04o, want %04o", path, perm, want)
	}
}

// Stored files hold documents: on the default storage, under a umask that
// would leave them open to everyone, a download and a copy of an upload
// are the owner's only, and so are the folders made for them.
func TestStoredFilesAndTheirFoldersAreTheOwnersOnly(t *testing.T) {
	withUmask(t, 0)
	dataDir := t.TempDir()
	cfg, err := config.Load(func(k string) string {
		if k == "DOCJOBS_DATA_DIR" {
			return dataDir
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	bucket, err := blob.OpenBucket(ctx, cfg.StorageURL)
	if err != nil {
		t.Fatal(err)
	}
	defer bucket.Close()
	files := fileRecords{}
	ids := []string{"f1", "f2"}
	f, err := New(Config{PublicURL: publicURL}, Deps{
		Client: outbound.NewClient(outbound.Config{AllowPrivate: true}), Bucket: bucket, Files: files,
		NewID: func() string { id := ids[0]; ids = ids[1:]; return id },
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "downloaded") })
	res, err := f.Fetch(ctx, "acct", "job1", 0, srv.URL+"/a.txt")
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if err := f.Save(ctx, res); err != nil {
		t.Fatalf("Save: %v", err)
	}
	files["up1"] = job.File{ID: "up1", AccountID: "acct", Name: "scan.txt", Size: 5, ContentType: "text/plain", Key: "uploads/acct/up1"}
	if err := bucket.WriteAll(ctx, "uploads/acct/up1", []byte("scan!"), &blob.WriterOptions{BeforeWrite: PrivateFile}); err != nil {
		t.Fatal(err)
	}
	copied, err := f.Fetch(ctx, "acct", "job1", 1, publicURL+"/v1/files/up1")
	if err != nil {
		t.Fatalf("Fetch of the upload: %v", err)
	}

	root := BucketDir(cfg.StorageURL)
	for _, dir := range []string{root, filepath.Join(root, "jobs"), filepath.Join(root, "jobs", "job1")} {
		wantMode(t, dir, 0o700)
	}
	for _, key := range []string{res.Key, copied.Key} {
		wantMode(t, filepath.Join(root, filepath.FromSlash(key)), 0o600)
	}
}
