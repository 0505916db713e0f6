package auth

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/docjobs/docjobs/internal/job"
)

type keyTable map[string]string // hex of hash → account

func (k keyTable) AccountByKeyHash(_ context.Context, hash []byte) (string, error) {
	if a, ok := k[string(hash)]; ok {
		return a, nil
	}
	return "", job.ErrNotFound
}

func TestAuthenticateAcceptsOnlyABearerKeyItKnows(t *testing.T) {
	key := NewKey()
	a := NewAuthenticator(keyTable{string(HashKey(key)): "acme"})
	tests := []struct {
		name, header, want string
	}{
		{"bearer key", "Bearer " + key, "acme"},
		{"scheme is case-insensitive", "bearer " + key, "acme"},
		{"no header", "", ""},
		{"basic scheme", "Basic " + key, ""},
		{"unknown key", "Bearer " + NewKey(), ""},
		{"bearer without key", "Bearer ", ""},
		{"key without scheme", key, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := a.Authenticate(context.Background(), tt.header)
			if tt.want == "" {
				if !errors.Is(err, ErrUnauthenticated) {
					t.Fatalf("got %q, %v; want ErrUnauthenticated", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestNewKeysAreDistinctAndHashed(t *testing.T) {
	k1, k2 := NewKey(), NewKey()
	if k1 == k2 || !strings.HasPrefix(k1, "dj_") || len(k1) != 46 {
		t.Fatalf("keys %q %q", k1, k2)
	}
	if strings.Contains(string(HashKey(k1)), k1) || len(HashKey(k1)) != 32 {
		t.Fatal("HashKey does not hash")
	}
}

func TestParseStaticNamesTheBadEntry(t *testing.T) {
	keys, err := ParseStatic(" a:k1 , b:k2,")
	if err != nil || keys["k1"] != "a" || keys["k2"] != "b" || len(keys) != 2 {
		t.Fatalf("got %v, %v", keys, err)
	}
	for _, bad := range []string{"a", ":k", "a:", "a:k1,b"} {
		if _, err := ParseStatic(bad); err == nil || !strings.Contains(err.Error(), "DOCJOBS_API_KEYS") {
			t.Errorf("ParseStatic(%q) = %v, want an error naming DOCJOBS_API_KEYS", bad, err)
		}
	}
}

func TestParseStaticRefusesAKeyListedForTwoAccounts(t *testing.T) {
	tests := []struct {
		name, keys, wantErr string // wantErr "" accepts
	}{
		{"same key, two accounts", "a:SAMEKEY123,b:SAMEKEY123", "entry 2 gives account \"b\" the key entry 1 gives"},
		{"positions count entries, not blanks", "a:k0, ,c:SAMEKEY123,b:k2,a:SAMEKEY123", "entry 4 gives account \"a\" the key entry 2 gives"},
		{"the same entry twice is harmless", "a:SAMEKEY123,a:SAMEKEY123", ""},
		{"two keys for one account", "a:k1,a:k2", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys, err := ParseStatic(tt.keys)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseStatic(%q) = %v", tt.keys, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParseStatic(%q) = %v, %v; want an error containing %s", tt.keys, keys, err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "SAMEKEY123") {
				t.Fatalf("the error names the key: %v", err)
			}
		})
	}
}

// The Authenticator keeps no cache: a key removed from the store (apikey
// revoke) is refused at the next call, and docs promise it.
func TestAKeyRemovedFromTheLookupIsRefusedAtTheNextCall(t *testing.T) {
	key := NewKey()
	keys := keyTable{string(HashKey(key)): "acme"}
	a := NewAuthenticator(keys)
	if got, err := a.Authenticate(context.Background(), "Bearer "+key); err != nil || got != "acme" {
		t.Fatalf("before the removal: %q, %v; want acme", got, err)
	}
	delete(keys, string(HashKey(key)))
	if got, err := a.Authenticate(context.Background(), "Bearer "+key); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("after the removal: %q, %v; want ErrUnauthenticated", got, err)
	}
}

func TestKeyIDIsTheHashsFirstTwelveHexDigits(t *testing.T) {
	// SHA-256 of "abc" is ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad.
	if got := KeyID(HashKey("abc")); got != "ba7816bf8f01" {
		t.Errorf("KeyID = %q, want ba7816bf8f01", got)
	}
	if got := KeyID([]byte{0xab}); got != "ab" {
		t.Errorf("KeyID of a short hash = %q, want ab", got)
	}
}
