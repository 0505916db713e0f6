package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// SecretPrefix marks a secret in the Standard Webhooks format: the rest is
// the base64 (standard alphabet, padded) of the key bytes.
const SecretPrefix = "whsec_"

// ErrInvalidSecret matches (errors.Is) the error of a secret that cannot
// key a signature.
var ErrInvalidSecret = errors.New("invalid webhook secret")

// secretError is a problem with a secret, phrased to follow a field name
// ("webhookSecret: has the whsec_ prefix but …"). It never quotes the secret.
type secretError struct{ phrase string }

func (e *secretError) Error() string        { return e.phrase }
func (e *secretError) Is(target error) bool { return target == ErrInvalidSecret }

// CheckSecret reports whether secret can sign webhooks, so a bad one can be
// refused when the job is created instead of failing every delivery. The
// error is a short phrase meant to follow a field name.
func CheckSecret(secret string) error {
	_, err := key(secret)
	return err
}

// key returns the HMAC key: the decoded base64 after the whsec_ prefix,
// else the secret's own bytes (UTF-8, as JSON delivered them).
func key(secret string) ([]byte, error) {
	if rest, ok := strings.CutPrefix(secret, SecretPrefix); ok {
		// Strict standard base64, as the reference libraries decode it:
		// accepting more would sign with a key the receiver's library
		// refuses to load.
		k, err := base64.StdEncoding.Strict().DecodeString(rest)
		if err != nil {
			return nil, &secretError{"has the " + SecretPrefix + " prefix but the rest is not valid base64"}
		}
		if len(k) == 0 {
			return nil, &secretError{"has nothing after the " + SecretPrefix + " prefix"}
		}
		return k, nil
	}
	if secret == "" {
		return nil, &secretError{"must not be empty"}
	}
	return []byte(secret), nil
}

// Sign returns the webhook-signature header value for one message: "v1,"
// and the base64 HMAC-SHA256, keyed by secret, of "{id}.{unix seconds}.{body}".
func Sign(secret, id string, ts time.Time, body []byte) (string, error) {
	k, err := key(secret)
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, k)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write(strconv.AppendInt(nil, ts.Unix(), 10))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}
