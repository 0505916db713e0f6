// Package auth turns bearer API keys into accounts. Keys are random strings
// shown once; only their SHA-256 hashes are stored.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/docjobs/docjobs/internal/job"
)

// ErrUnauthenticated is returned for a missing, malformed or unknown key.
var ErrUnauthenticated = errors.New("missing or invalid API key")

// ErrUnavailable is returned, wrapping the cause, when the key could not be
// looked up (the store is unreachable): that says nothing of the key, so it
// must not be answered as ErrUnauthenticated, which clients take as final
// (they stop retrying; a user revokes a good key).
var ErrUnavailable = errors.New("API keys could not be checked")

// keyPrefix makes keys recognizable in secret scanners.
const keyPrefix = "dj_"

// NewKey returns a fresh API key with 256 bits of entropy.
func NewKey() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return keyPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// HashKey is the stored form of a key.
func HashKey(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
}

// KeyIDDigits is the length of a key id: the first hex digits of the
// key's hash. 48 bits tell apart the keys one service holds; an id names
// the key in lists and logs. It is not secret for a generated key (the
// hash is one-way over 256 random bits), but it confirms guesses at a weak
// one of DOCJOBS_API_KEYS, which serve warns of.
const KeyIDDigits = 12

// KeyID names a key by its stored hash without revealing the key: the
// first KeyIDDigits hex digits of the hash.
func KeyID(keyHash []byte) string {
	id := hex.EncodeToString(keyHash)
	return id[:min(len(id), KeyIDDigits)]
}

// ParseStatic parses DOCJOBS_API_KEYS: "account:key,account:key". A key
// listed for two accounts is refused: one of them would silently get the
// other's jobs. Errors name the entry by position, never the key.
func ParseStatic(s string) (map[string]string, error) {
	keys := map[string]string{} // key -> account
	first := map[string]int{}   // key -> position of its first entry
	entry := 0
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		entry++
		account, key, ok := strings.Cut(part, ":")
		if !ok || account == "" || key == "" {
			return nil, fmt.Errorf("DOCJOBS_API_KEYS: entry %d is not account:key", entry)
		}
		if prev, seen := keys[key]; seen && prev != account {
			return nil, fmt.Errorf("DOCJOBS_API_KEYS: entry %d gives account %q the key entry %d gives account %q; a key opens one account",
				entry, account, first[key], prev)
		}
		if _, seen := first[key]; !seen {
			first[key] = entry
		}
		keys[key] = account
	}
	return keys, nil
}

// KeyLookup finds the account owning a key hash. An unknown hash is an
// error wrapping job.ErrNotFound (store.ErrNotFound is the same error); any
// other error means the lookup failed.
type KeyLookup interface {
	AccountByKeyHash(ctx context.Context, keyHash []byte) (string, error)
}

// Authenticator resolves an Authorization header value to an account. It
// keeps no cache: every request asks lookup, so a key removed from the
// store (docjobs apikey revoke) is refused from the next request on, in
// every process that reads that store.
type Authenticator struct {
	lookup KeyLookup
}

// NewAuthenticator returns an Authenticator backed by lookup.
func NewAuthenticator(lookup KeyLookup) *Authenticator {
	return &Authenticator{lookup: lookup}
}

// Authenticate returns the account of "Bearer <key>"; ErrUnauthenticated
// when the header holds no bearer key or the lookup does not know it; and
// an error wrapping ErrUnavailable and the lookup's error when the lookup
// failed otherwise. Neither error carries the key.
func (a *Authenticator) Authenticate(ctx context.Context, authorization string) (string, error) {
	scheme, key, ok := strings.Cut(strings.TrimSpace(authorization), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(key) == "" {
		return "", ErrUnauthenticated
	}
	account, err := a.lookup.AccountByKeyHash(ctx, HashKey(strings.TrimSpace(key)))
	switch {
	case errors.Is(err, job.ErrNotFound):
		return "", ErrUnauthenticated
	case err != nil:
		return "", fmt.Errorf("%w: %w", ErrUnavailable, err)
	case account == "":
		return "", ErrUnauthenticated
	}
	return account, nil
}

type accountKey struct{}

// WithAccount returns ctx carrying the authenticated account.
func WithAccount(ctx context.Context, accountID string) context.Context {
	return context.WithValue(ctx, accountKey{}, accountID)
}

// Account returns the authenticated account of ctx, if any.
func Account(ctx context.Context) (string, bool) {
	a, ok := ctx.Value(accountKey{}).(string)
	return a, ok && a != ""
}
