package fetch

import (
	"fmt"
	"os"
)

// PrivateFile is a blob.WriterOptions.BeforeWrite (and CopyOptions.BeforeCopy)
// that makes a file:// blob readable by its owner only, whatever the umask:
// stored files hold documents, and fileblob creates them 0666 less the
// umask, 0644 with the usual one. It runs on the temporary file before any
// byte is written, which is renamed into place, so no content is ever
// readable by others. Other drivers have no *os.File and are left alone.
func PrivateFile(as func(any) bool) error {
	var f *os.File
	if !as(&f) {
		return nil
	}
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("make stored file private: %w", err)
	}
	return nil
}
