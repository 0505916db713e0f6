package provider_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/docjobs/docjobs/internal/provider"
)

func b64(n int) string {
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i * 31)
	}
	return base64.StdEncoding.EncodeToString(data)
}

func TestRedact(t *testing.T) {
	const key = "sk-live-abcdefghijklmnop"
	cases := []struct {
		name    string
		in      string
		secrets []string
		want    string
	}{
		{"a data URL keeps its type and says how much was elided",
			`{"url":"data:image/jpeg;base64,` + b64(123456) + `"}`, nil,
			`{"url":"data:image/jpeg;base64,<elided 123456 bytes>"}`},
		{"a short data URL payload is elided too",
			`"data:image/png;base64,iVBORw0KGgo="`, nil,
			`"data:image/png;base64,<elided 8 bytes>"`},
		{"a PDF data URL",
			`{"document_url":"data:application/pdf;base64,` + b64(5000) + `"}`, nil,
			`{"document_url":"data:application/pdf;base64,<elided 5000 bytes>"}`},
		{"a bare base64 field (Anthropic, Gemini) is elided",
			`{"source":{"type":"base64","media_type":"image/png","data":"` + b64(3000) + `"}}`, nil,
			`{"source":{"type":"base64","media_type":"image/png","data":"<elided 3000 bytes>"}}`},
		{"short base64-looking words stay",
			`{"model":"gpt-4o","text":"Transcribe/this+page"}`, nil,
			`{"model":"gpt-4o","text":"Transcribe/this+page"}`},
		{"the key is removed",
			`{"error":"Incorrect API key provided: ` + key + `."}`, []string{key},
			`{"error":"Incorrect API key provided: [key elided]."}`},
		{"every occurrence of the key is removed",
			key + " and " + key, []string{key},
			"[key elided] and [key elided]"},
		{"the JSON-escaped spelling of a key is removed",
			`{"k":"a\u003cb\"c-secret"}`, []string{`a<b"c-secret`},
			`{"k":"[key elided]"}`},
		{"an empty secret removes nothing",
			"plain text", []string{""},
			"plain text"},
		{"a key inside a base64 run goes with the run",
			`"` + b64(300) + key + `"`, []string{key},
			`"<elided 300 bytes>[key elided]"`},
		{"text without payloads or keys is unchanged",
			"# Title\n\nSome text, with punctuation; and numbers 12345.", []string{key},
			"# Title\n\nSome text, with punctuation; and numbers 12345."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := provider.Redact(c.in, c.secrets...); got != c.want {
				t.Errorf("Redact = %.300q\nwant     %.300q", got, c.want)
			}
		})
	}
}

// A key the marker itself spells cannot survive either.
func TestRedactAdversarialKeys(t *testing.T) {
	for _, key := range []string{"key elided", "[key elided]", "elided", "d]", "<elided 3 bytes>"} {
		in := "before " + key + " after data:image/png;base64,QUJD"
		if got := provider.Redact(in, key); strings.Contains(got, key) {
			t.Errorf("key %q survives: %q", key, got)
		}
	}
}

// A short dummy key (local Tesseract needs none, yet the API requires one)
// is replaced by a marker that does not spell it, so the text around it
// still reads: the marker never holds the key, and markers never nest.
func TestRedactShortKeysReadSensibly(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		secrets []string
		want    string
	}{
		{"a one-letter key inside the usual marker gets the upper-case one",
			"tsv < image/x-portable-graymap", []string{"x", "k"},
			"tsv < image/[KEY ELIDED]-portable-graymap"},
		{"every letter the key is replaced once, with no nesting",
			"block_num text", []string{"x", "k"},
			"bloc[KEY ELIDED]_num te[KEY ELIDED]t"},
		{"a key that fits neither bracketed marker gets stars",
			"a k and a K", []string{"k", "K"},
			"a *** and a ***"},
		{"a key unrelated to the marker keeps the usual one",
			"test key", []string{"test"},
			"[key elided] key"},
		{"a key that ends where the marker starts does not take it",
			"a[b", []string{"a["},
			"<key elided>b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := provider.Redact(c.in, c.secrets...); got != c.want {
				t.Errorf("Redact = %q\nwant     %q", got, c.want)
			}
		})
	}
}

// With every marker spelled by some key, keys are removed outright, and
// still none survives.
func TestRedactWithoutAFreeMarker(t *testing.T) {
	keys := []string{"k", "K", "<", "*", "#", "~", "^", "|"}
	in := "a k, K, <b>, **, ##, ~~, ^^, || and kK"
	got := provider.Redact(in, keys...)
	for _, k := range keys {
		if strings.Contains(got, k) {
			t.Fatalf("Redact = %q keeps %q", got, k)
		}
	}
	if want := "a , , b>, , , , ,  and "; got != want {
		t.Errorf("Redact = %q, want %q", got, want)
	}
}

// Redacting a JSON document keeps it JSON: a base64 run right after an
// escape ("\n", "\/", "\u00e9") is elided without the escape's letters.
func TestRedactKeepsJSONEscapesWhole(t *testing.T) {
	for _, prefix := range []string{`line\n`, `a\/`, `caf\u00e9`, `two\\`} {
		doc := `{"content":"` + prefix + b64(300) + `"}`
		got := provider.Redact(doc, "sk-abcdefgh")
		if !json.Valid([]byte(got)) || !strings.Contains(got, "elided") {
			t.Errorf("after %q: %.80q is not JSON with the run elided", prefix, got)
		}
	}
}

func FuzzRedact(f *testing.F) {
	f.Add(`{"a":"x\n`+b64(200)+`"}`, "sk-abcdefgh")
	f.Add(`{"url":"data:image/jpeg;base64,`+b64(200)+`"}`, "sk-abcdefgh")
	f.Add(`{"data":"`+b64(500)+`"}`, "AIzaSyKEY")
	f.Add("key in the clear: sk-abcdefgh", "sk-abcdefgh")
	f.Add(strings.Repeat("A", 127)+"sk"+strings.Repeat("B", 127), "sk")
	f.Add("[key elided]", "key")
	f.Add("image/x-portable-graymap", "x")
	f.Fuzz(func(t *testing.T, text, key string) {
		got := provider.Redact(text, key)
		if key != "" && strings.Contains(got, key) {
			t.Fatalf("Redact(%q, %q) = %q keeps the key", text, key, got)
		}
		run, backslashes := 0, 0
		for i := 0; i < len(got); i++ {
			c := got[i]
			escaped := backslashes%2 == 1 // the letter of a JSON escape is no base64
			if c == '\\' {
				backslashes++
			} else {
				backslashes = 0
			}
			if escaped {
				run = 0
				continue
			}
			if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' {
				if run++; run >= provider.MinBase64Run {
					t.Fatalf("Redact(%q, %q) = %q keeps a base64 run of %d", text, key, got, run)
				}
			} else {
				run = 0
			}
		}
	})
}

// Two keys at once: neither survives, whichever marker the pair gets.
func FuzzRedactTwoKeys(f *testing.F) {
	f.Add("tsv < image/x-portable-graymap block_num text", "x", "k")
	f.Add("[key elided] [KEY ELIDED]", "k", "K")
	f.Add("aabb", "ab", "b")
	f.Fuzz(func(t *testing.T, text, k1, k2 string) {
		got := provider.Redact(text, k1, k2)
		for _, k := range []string{k1, k2} {
			if k != "" && strings.Contains(got, k) {
				t.Fatalf("Redact(%q, %q, %q) = %q keeps %q", text, k1, k2, got, k)
			}
		}
	})
}
