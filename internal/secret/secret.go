// Package secret seals provider keys and webhook secrets at rest with an
// AEAD (Tink, AES-256-GCM). The keyset lives in the master key file the
// operator protects (DOCJOBS_MASTER_KEY_FILE); every ciphertext is bound to
// the account, job and field it was sealed for, so a ciphertext copied to
// another job or field does not open.
package secret

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tink-crypto/tink-go/v2/aead"
	"github.com/tink-crypto/tink-go/v2/insecurecleartextkeyset"
	"github.com/tink-crypto/tink-go/v2/keyset"
	"github.com/tink-crypto/tink-go/v2/tink"
)

// ErrOpen is returned by (*Sealer).Open when a ciphertext does not open:
// it was tampered with, sealed under another keyset, or sealed for another
// account, job or field.
var ErrOpen = errors.New("secret: ciphertext does not open for this account, job and field")

// adVersion prefixes the associated data so its layout can change later
// without ambiguity.
const adVersion = "docjobs-secret-v1"

// maxKeysetBytes bounds how much of the master key file is read; a real
// keyset with a handful of rotated keys is a few hundred bytes.
const maxKeysetBytes = 1 << 20

// Sealer seals and opens secrets with the keyset of one master key file.
// It is safe for concurrent use.
type Sealer struct {
	aead tink.AEAD
}

// Open loads the keyset at path. When the file does not exist it creates a
// new AES-256-GCM keyset there with mode 0600 (and the directory with mode
// 0700 when missing). An existing file that group or others can read is
// refused rather than silently tightened: the key may already have leaked,
// and that is for the operator to judge.
func Open(path string) (*Sealer, error) {
	if path == "" {
		return nil, errors.New("secret: master key file path is empty")
	}
	h, err := load(path)
	if errors.Is(err, fs.ErrNotExist) {
		h, err = create(path)
	}
	if err != nil {
		return nil, err
	}
	a, err := aead.New(h)
	if err != nil {
		return nil, fmt.Errorf("secret: master key file %s does not hold an AEAD keyset: %w", path, err)
	}
	return &Sealer{aead: a}, nil
}

func load(path string) (*keyset.Handle, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // fs.ErrNotExist is handled by the caller
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("secret: stat master key file: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("secret: master key file %s is not a regular file", path)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("secret: master key file %s has mode %04o; it must not be accessible to group or others (run: chmod 600 %s)", path, perm, path)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, maxKeysetBytes+1)); err != nil {
		return nil, fmt.Errorf("secret: read master key file: %w", err)
	}
	if buf.Len() > maxKeysetBytes {
		return nil, fmt.Errorf("secret: master key file %s is larger than %d bytes; it is not a keyset", path, maxKeysetBytes)
	}
	h, err := insecurecleartextkeyset.Read(keyset.NewBinaryReader(&buf))
	if err != nil {
		return nil, fmt.Errorf("secret: master key file %s is not a valid Tink binary keyset: %w", path, err)
	}
	return h, nil
}

// create writes a fresh keyset next to path and links it into place, so two
// processes starting at once (api and worker roles) end up sharing one
// keyset: the loser of the link race reads the winner's file.
func create(path string) (*keyset.Handle, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("secret: create directory of master key file: %w", err)
	}
	h, err := keyset.NewHandle(aead.AES256GCMKeyTemplate())
	if err != nil {
		return nil, fmt.Errorf("secret: generate keyset: %w", err)
	}
	var buf bytes.Buffer
	if err := insecurecleartextkeyset.Write(h, keyset.NewBinaryWriter(&buf)); err != nil {
		return nil, fmt.Errorf("secret: serialize keyset: %w", err)
	}

	tmp, err := os.CreateTemp(dir, ".master-keyset-*") // CreateTemp uses mode 0600
	if err != nil {
		return nil, fmt.Errorf("secret: create master key file: %w", err)
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("secret: chmod master key file: %w", err)
	}
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("secret: write master key file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("secret: sync master key file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("secret: close master key file: %w", err)
	}
	if err := os.Link(tmpName, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return load(path)
		}
		return nil, fmt.Errorf("secret: install master key file: %w", err)
	}
	syncDir(dir)
	return h, nil
}

// syncDir makes the new directory entry durable; failure only weakens crash
// safety on exotic filesystems, so it is not reported.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

// Seal encrypts plaintext for one field of one job of one account.
func (s *Sealer) Seal(plaintext []byte, account, jobID, field string) ([]byte, error) {
	ct, err := s.aead.Encrypt(plaintext, associatedData(account, jobID, field))
	if err != nil {
		return nil, fmt.Errorf("secret: seal %s: %w", field, err)
	}
	return ct, nil
}

// Open decrypts a ciphertext sealed by Seal with the same account, job and
// field; anything else returns ErrOpen.
func (s *Sealer) Open(ciphertext []byte, account, jobID, field string) ([]byte, error) {
	pt, err := s.aead.Decrypt(ciphertext, associatedData(account, jobID, field))
	if err != nil {
		// Tink's error says nothing useful to callers and nothing secret;
		// the sentinel is what they branch on.
		return nil, fmt.Errorf("%w (field %s)", ErrOpen, field)
	}
	return pt, nil
}

// associatedData encodes the binding as length-prefixed parts, so that
// ("ab","c") and ("a","bc") can never produce the same bytes.
func associatedData(account, jobID, field string) []byte {
	parts := [...]string{adVersion, account, jobID, field}
	n := 0
	for _, p := range parts {
		n += 4 + len(p)
	}
	ad := make([]byte, 0, n)
	for _, p := range parts {
		ad = binary.BigEndian.AppendUint32(ad, uint32(len(p)))
		ad = append(ad, p...)
	}
	return ad
}
