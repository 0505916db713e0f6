package provider_test

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/docjobs/docjobs/internal/provider"
)

// lowerEscapes writes the %XX escapes of s in lower case, as some
// encoders do.
func lowerEscapes(s string) string {
	return regexp.MustCompile(`%[0-9A-F]{2}`).ReplaceAllStringFunc(s, strings.ToLower)
}

// TestEverySpellingOfASecretIsRemoved: whatever way a vendor writes a key
// back (as it is, escaped for JSON or a URL, in hex, or in base64 alone or
// inside a longer base64 text at any of the three alignments), neither
// the debug fields nor the answer text keep it.
func TestEverySpellingOfASecretIsRemoved(t *testing.T) {
	const key = `sk-CANARY<NEURAL>"ECHO"+/=-P9 ü`
	b64 := func(enc *base64.Encoding, prefix, suffix string) string {
		return enc.EncodeToString([]byte(prefix + key + suffix))
	}
	jsonEsc, _ := json.Marshal(key)
	tests := []struct {
		name, spelling string
		// own is the part of spelling that only the key decides: what
		// must be gone (the rest depends on the neighbouring bytes).
		own string
	}{
		{"plain", key, key},
		{"JSON-escaped", string(jsonEsc), string(jsonEsc[1 : len(jsonEsc)-1])},
		{"query-escaped", url.QueryEscape(key), url.QueryEscape(key)},
		{"path-escaped", url.PathEscape(key), url.PathEscape(key)},
		{"query-escaped with lower-case escapes", lowerEscapes(url.QueryEscape(key)), ""},
		{"hex", hex.EncodeToString([]byte(key)), hex.EncodeToString([]byte(key))},
		{"HEX", strings.ToUpper(hex.EncodeToString([]byte(key))), strings.ToUpper(hex.EncodeToString([]byte(key)))},
	}
	for name, enc := range map[string]*base64.Encoding{"std": base64.StdEncoding, "url": base64.URLEncoding,
		"raw std": base64.RawStdEncoding, "raw url": base64.RawURLEncoding} {
		for _, prefix := range []string{"", "a", "ab"} {
			for _, suffix := range []string{"", "z", "tail"} {
				s := b64(enc, prefix, suffix)
				tests = append(tests, struct{ name, spelling, own string }{
					"base64 " + name + " after " + prefix + " before " + suffix, s, s[3 : len(s)-3]})
			}
		}
	}
	secrets := provider.NewSecrets("another-secret-of-the-job", key)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			own := tt.own
			if own == "" {
				own = tt.spelling
			}
			in := "vendor said: " + tt.spelling + " (that is all)"
			for field, got := range map[string]string{"Redact": secrets.Redact(in), "Elide": secrets.Elide(in),
				"Redact of the key alone": provider.Redact(in, key)} {
				if strings.Contains(got, own) {
					t.Errorf("%s(%q) = %q keeps %q", field, in, got, own)
				}
				if !strings.HasPrefix(got, "vendor said: ") || !strings.HasSuffix(got, " (that is all)") {
					t.Errorf("%s(%q) = %q cut the text around the key", field, in, got)
				}
			}
		})
	}
}

// TestElideChangesNothingButSecrets: recognized text and answers keep
// their base64, the masked form vendors print on purpose, and words that
// happen to spell a secret too short to be worth the name.
func TestElideChangesNothingButSecrets(t *testing.T) {
	const key = "sk-live-abcdefghijklmnop"
	tests := []struct {
		name    string
		secrets []string
		in      string
		want    string
	}{
		{"the key in an answer", []string{key}, `{"note":"key ` + key + `"}`, `{"note":"key [key elided]"}`},
		{"a base64 image in an answer stays", []string{key}, "![scan](data:image/png;base64," + b64(300) + ")",
			"![scan](data:image/png;base64," + b64(300) + ")"},
		{"the masked form vendors print stays", []string{key}, "Incorrect API key provided: sk-live-****mnop.",
			"Incorrect API key provided: sk-live-****mnop."},
		{"a one-character key does not wipe the text", []string{"a"}, "a cat and a hat", "a cat and a hat"},
		{"a seven-byte key does not cut words", []string{"invoice"}, "invoice 12", "invoice 12"},
		{"an eight-byte key is elided", []string{"invoice1"}, "invoice1 is due", "[key elided] is due"},
		{"a key given with white space around it is elided as it was sent", []string{"\t" + key + " "},
			`{"note":"key ` + key + `."}`, `{"note":"key [key elided]."}`},
		{"no secrets", nil, "text " + key, "text " + key},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := provider.NewSecrets(tt.secrets...).Elide(tt.in); got != tt.want {
				t.Errorf("Elide(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestEncodedSpellingsOfAShortKeyAreNotLookedFor: debug fields lose a
// short key as it is (as before), but its hex or base64, a few characters
// ordinary ids contain by chance, are not cut out of them.
func TestEncodedSpellingsOfAShortKeyAreNotLookedFor(t *testing.T) {
	in := `{"id":"616263","text":"abc"}` // 616263 is "abc" in hex
	if got, want := provider.Redact(in, "abc"), `{"id":"616263","text":"[key elided]"}`; got != want {
		t.Errorf("Redact = %q, want %q", got, want)
	}
}

func FuzzElide(f *testing.F) {
	f.Add("key in the clear: sk-abcdefgh", "sk-abcdefgh")
	f.Add("[key elided]", "y elided")
	f.Add(base64.StdEncoding.EncodeToString([]byte("xsk-abcdefgh")), "sk-abcdefgh")
	f.Fuzz(func(t *testing.T, text, key string) {
		got := provider.NewSecrets(key).Elide(text)
		if len(key) >= provider.MinElidedSecret && strings.Contains(got, key) {
			t.Fatalf("Elide(%q, %q) = %q keeps the key", text, key, got)
		}
		if len(key) < provider.MinElidedSecret && got != text {
			t.Fatalf("Elide(%q, %q) = %q changed the text for a short key", text, key, got)
		}
	})
}

// benchText is 1 MiB of recognized text without secrets, the common case.
func benchText() string {
	var b strings.Builder
	for b.Len() < 1<<20 {
		b.WriteString("Invoice 2024-0042, line 17: 3 × widgets at 12.50 EUR; see https://example.com/terms?x=1&y=2. ")
	}
	return b.String()
}

// The three secrets of a job, over 1 MiB of text that holds none of them.
func BenchmarkElide1MiB(b *testing.B) {
	s := provider.NewSecrets("sk-proj-0123456789abcdefghijklmnopqrstuvwxyzABCD", "CANARY-OCR-KEY-0123456789",
		"whsec_"+base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef")))
	text := benchText()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		_ = s.Elide(text)
	}
}

func BenchmarkRedact1MiB(b *testing.B) {
	s := provider.NewSecrets("sk-proj-0123456789abcdefghijklmnopqrstuvwxyzABCD", "CANARY-OCR-KEY-0123456789",
		"whsec_"+base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef")))
	text := benchText()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		_ = s.Redact(text)
	}
}

func BenchmarkRedactOneKeyBefore1MiB(b *testing.B) {
	text := benchText()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		_ = provider.Redact(text, "sk-proj-0123456789abcdefghijklmnopqrstuvwxyzABCD")
	}
}
