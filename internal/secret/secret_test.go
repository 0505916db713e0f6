package secret

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func openSealer(t *testing.T, path string) *Sealer {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	return s
}

func TestSealOpenRoundTrip(t *testing.T) {
	s := openSealer(t, filepath.Join(t.TempDir(), "master.keyset"))
	for _, plaintext := range [][]byte{[]byte("sk-live-0123456789"), {}, bytes.Repeat([]byte{0xff}, 4096)} {
		ct, err := s.Seal(plaintext, "acct", "job-1", "neural.apiKey")
		if err != nil {
			t.Fatalf("Seal: %v", err)
		}
		if len(plaintext) > 0 && bytes.Contains(ct, plaintext) {
			t.Fatalf("ciphertext contains the plaintext")
		}
		got, err := s.Open(ct, "acct", "job-1", "neural.apiKey")
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if !bytes.Equal(got, plaintext) {
			t.Fatalf("Open = %q, want %q", got, plaintext)
		}
	}
}

func TestOpenRefusesAnotherBinding(t *testing.T) {
	s := openSealer(t, filepath.Join(t.TempDir(), "master.keyset"))
	ct, err := s.Seal([]byte("whsec_abc"), "acct", "job-1", "webhookSecret")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name                  string
		account, jobID, field string
	}{
		{"another account", "other", "job-1", "webhookSecret"},
		{"another job", "acct", "job-2", "webhookSecret"},
		{"another field", "acct", "job-1", "neural.apiKey"},
		// Plain concatenation would make these equal to the sealed binding.
		{"boundary shifted between account and job", "acctj", "ob-1", "webhookSecret"},
		{"boundary shifted between job and field", "acct", "job-1webhook", "Secret"},
		{"empty binding", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Open(ct, tt.account, tt.jobID, tt.field)
			if !errors.Is(err, ErrOpen) {
				t.Fatalf("Open = %v, want ErrOpen", err)
			}
		})
	}
}

func TestOpenRefusesTamperedCiphertext(t *testing.T) {
	s := openSealer(t, filepath.Join(t.TempDir(), "master.keyset"))
	ct, err := s.Seal([]byte("key"), "a", "j", "f")
	if err != nil {
		t.Fatal(err)
	}
	ct[len(ct)-1] ^= 1
	if _, err := s.Open(ct, "a", "j", "f"); !errors.Is(err, ErrOpen) {
		t.Fatalf("Open(tampered) = %v, want ErrOpen", err)
	}
}

func TestKeysetFileCreatedPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "nested")
	path := filepath.Join(dir, "master.keyset")
	openSealer(t, path)

	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("keyset file mode = %04o, want 0600", perm)
	}
	dinfo, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := dinfo.Mode().Perm(); perm != 0o700 {
		t.Errorf("created directory mode = %04o, want 0700", perm)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the keyset (temporary file left behind?)", len(entries))
	}
}

func TestReopenDecryptsWithSameFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "master.keyset")
	ct, err := openSealer(t, path).Seal([]byte("sk-ant-secret"), "acct", "job", "ocr.providerKey")
	if err != nil {
		t.Fatal(err)
	}
	got, err := openSealer(t, path).Open(ct, "acct", "job", "ocr.providerKey")
	if err != nil {
		t.Fatalf("Open after reopen: %v", err)
	}
	if string(got) != "sk-ant-secret" {
		t.Fatalf("Open = %q", got)
	}
}

func TestAnotherKeysetDoesNotOpen(t *testing.T) {
	ct, err := openSealer(t, filepath.Join(t.TempDir(), "a.keyset")).Seal([]byte("k"), "a", "j", "f")
	if err != nil {
		t.Fatal(err)
	}
	other := openSealer(t, filepath.Join(t.TempDir(), "b.keyset"))
	if _, err := other.Open(ct, "a", "j", "f"); !errors.Is(err, ErrOpen) {
		t.Fatalf("Open with another keyset = %v, want ErrOpen", err)
	}
}

func TestPlaintextNeverInKeysetFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "master.keyset")
	s := openSealer(t, path)
	secret := "sk-proj-PLAINTEXT-MARKER-42"
	if _, err := s.Seal([]byte(secret), "acct", "job", "neural.apiKey"); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(secret)) {
		t.Fatal("keyset file contains the sealed plaintext")
	}
}

func TestOpenRefusesBadKeysetFiles(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, path string)
		wantErr string
	}{
		{
			name: "readable by group and others",
			setup: func(t *testing.T, path string) {
				openSealer(t, path)
				if err := os.Chmod(path, 0o644); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "must not be accessible to group or others",
		},
		{
			name: "not a keyset",
			setup: func(t *testing.T, path string) {
				if err := os.WriteFile(path, []byte("hello, not a keyset"), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "not a valid Tink binary keyset",
		},
		{
			name: "a directory",
			setup: func(t *testing.T, path string) {
				if err := os.Mkdir(path, 0o700); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "not a regular file",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "master.keyset")
			tt.setup(t, path)
			_, err := Open(path)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Open = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestAssociatedDataIsUnambiguous(t *testing.T) {
	a := associatedData("ab", "c", "d")
	b := associatedData("a", "bc", "d")
	if bytes.Equal(a, b) {
		t.Fatal("different bindings give equal associated data")
	}
}

func TestConcurrentFirstStartsShareOneKeyset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "master.keyset")
	const n = 8
	sealers := make([]*Sealer, n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			s, err := Open(path)
			sealers[i] = s
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("Open: %v", err)
		}
	}
	ct, err := sealers[0].Seal([]byte("k"), "a", "j", "f")
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range sealers {
		if _, err := s.Open(ct, "a", "j", "f"); err != nil {
			t.Fatalf("sealer %d cannot open sealer 0's ciphertext: %v", i, err)
		}
	}
}
