package provider

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
)

// MinElidedSecret is the length, in bytes, from which a secret is also
// looked for in its encoded spellings and removed from recognized text and
// answers. A shorter "key" is no secret worth the name, its encodings are
// a few characters that ordinary text and ids contain by chance, and
// eliding it from a transcription would cut words out of it; the debug
// fields still lose its plain and JSON-escaped spellings.
const MinElidedSecret = 8

// Secrets is a set of secrets (a job's provider keys and webhook secret)
// with every spelling a vendor may echo them in, computed once.
type Secrets struct {
	// all are the spellings removed from debug fields, longest first so
	// that a spelling containing another is replaced whole.
	all []string
	// long are the spellings of the secrets of MinElidedSecret bytes or
	// more, the ones removed from recognized text and answers.
	long []string
	// marker replaces a secret: the first of keyMarkers that no spelling
	// overlaps, so that it never spells a secret itself.
	marker string
}

// NewSecrets returns the set of secrets; empty ones are ignored. A secret
// with white space around it is also looked for without it, as a secret
// of its own: that is how it goes out (net/http trims a header value, and
// a vendor trims what it reads), and a vendor echoing it echoes that. Each is
// looked for as given and JSON-escaped; one of MinElidedSecret bytes or
// more also percent-encoded (query and path forms, upper- and lower-case
// escapes), in hex (lower and upper case) and in base64 (standard and URL
// alphabets, padded or not): for base64 the characters that depend only
// on the secret's own bytes, at each of the three alignments it can take
// inside a longer base64 text, so that a key encoded with a prefix
// (a "Basic" credential, a JSON blob) is found too.
func NewSecrets(secrets ...string) Secrets {
	var s Secrets
	for _, secret := range withTrimmed(secrets) {
		if secret == "" {
			continue
		}
		s.all = append(s.all, secret)
		if b, err := json.Marshal(secret); err == nil {
			s.all = append(s.all, string(b[1:len(b)-1]))
		}
		if len(secret) < MinElidedSecret {
			continue
		}
		sp := spellings(secret)
		s.all = append(s.all, sp...)
		s.long = append(s.long, sp...)
	}
	s.all, s.long = unique(s.all), unique(s.long)
	s.marker = pickMarker(s.all)
	return s
}

// withTrimmed is secrets followed by each one's form without surrounding
// white space, where that differs. The API takes a key with a space or tab
// around it (a header may carry both), but net/http trims a header value
// before sending it, so "sk-… " reaches the vendor as "sk-…", and its echo
// was neither found in the answer nor in the debug fields.
func withTrimmed(secrets []string) []string {
	out := slices.Clone(secrets)
	for _, secret := range secrets {
		if t := strings.TrimSpace(secret); t != secret && t != "" {
			out = append(out, t)
		}
	}
	return out
}

// Empty reports whether the set holds no secret.
func (s Secrets) Empty() bool { return len(s.all) == 0 }

// spellings are secret's spellings besides the plain one: percent-encoded,
// hex and base64.
func spellings(secret string) []string {
	out := []string{secret}
	if b, err := json.Marshal(secret); err == nil {
		out = append(out, string(b[1:len(b)-1]))
	}
	for _, esc := range []string{url.QueryEscape(secret), url.PathEscape(secret)} {
		out = append(out, esc, lowerEscapes(esc))
	}
	h := hex.EncodeToString([]byte(secret))
	out = append(out, h, strings.ToUpper(h))
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for prefix := range 3 {
			buf := make([]byte, prefix+len(secret))
			copy(buf[prefix:], secret)
			e := enc.EncodeToString(buf)
			// Character c holds bits 6c to 6c+5 of the encoded bytes:
			// keep those that hold none of the prefix's 8*prefix bits
			// and none of whatever follows the secret.
			from, to := (8*prefix+5)/6, 8*(prefix+len(secret))/6
			out = append(out, e[from:to])
		}
	}
	return out
}

// lowerEscapes writes the hex digits of esc's %XX escapes in lower case,
// as some encoders do.
func lowerEscapes(esc string) string {
	b := []byte(esc)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lowerHex(b[i+1]), lowerHex(b[i+2])
			i += 2
		}
	}
	return string(b)
}

func lowerHex(c byte) byte {
	if c >= 'A' && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

// unique sorts spellings longest first and drops repeats.
func unique(spellings []string) []string {
	slices.SortFunc(spellings, func(a, b string) int {
		if d := len(b) - len(a); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	return slices.Compact(spellings)
}
