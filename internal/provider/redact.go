package provider

import (
	"slices"
	"strconv"
	"strings"
)

// MinBase64Run is the length from which a run of base64 characters outside
// a data URL is taken for a payload and elided. Words, ids and hashes in
// a vendor exchange are far shorter; an inline image is far longer.
const MinBase64Run = 128

// pickMarker is the marker that replaces a secret of the set: the first,
// in order of preference, that no secret overlaps (see overlaps), else ""
// (secrets are then removed outright). A short dummy key such as "k"
// (local Tesseract needs none, yet the API requires one) is inside
// "[key elided]", and a marker that spells the key would be cut up by the
// next replacement ("[[ey elided]ey elided]"). No candidate has a run of
// base64 characters long enough to be part of a realistic key.
func pickMarker(secrets []string) string {
	for _, m := range [...]string{"[key elided]", "[KEY ELIDED]", "<key elided>", "***", "###", "~~~", "^^^", "|||"} {
		if !slices.ContainsFunc(secrets, func(s string) bool { return overlaps(s, m) }) {
			return m
		}
	}
	return ""
}

// overlaps reports whether secret and marker can share a character when
// the marker is placed into text: one contains the other, or one ends with
// what the other starts with. A marker no secret overlaps cannot take part
// in an occurrence of a secret, so replacing every occurrence once leaves
// none.
func overlaps(secret, marker string) bool {
	if strings.Contains(marker, secret) || strings.Contains(secret, marker) {
		return true
	}
	for n := 1; n < min(len(secret), len(marker)); n++ {
		if secret[:n] == marker[len(marker)-n:] || secret[len(secret)-n:] == marker[:n] {
			return true
		}
	}
	return false
}

// Redact makes text from a vendor exchange fit for a row's request or
// rawData field: base64 payloads are elided (data URLs keep their media
// type: "data:image/jpeg;base64,<elided 123456 bytes>"; bare runs of
// MinBase64Run or more base64 characters become "<elided N bytes>", N the
// decoded size) and every secret is removed, in each spelling NewSecrets
// lists. The result never contains a secret nor a base64 run of
// MinBase64Run characters.
func Redact(text string, secrets ...string) string {
	return NewSecrets(secrets...).Redact(text)
}

// Redact is the package's Redact with the set's secrets.
func (s Secrets) Redact(text string) string {
	// Secrets go first: a key next to a payload would otherwise be cut in
	// two by the elision and only partly found. Eliding can in theory
	// produce what a secret spells (and removing a secret can join two
	// base64 runs), so both repeat until neither finds anything; realistic
	// input settles in one round.
	for range 4 {
		next := elideBase64(s.removeSecrets(text, s.all))
		if next == text {
			return text
		}
		text = next
	}
	if containsAny(text, s.all) || longestBase64Run(text) >= MinBase64Run {
		return "[withheld: the text could not be redacted]"
	}
	return text
}

// Elide removes the set's secrets from text a vendor answered (recognized
// text, a model's answer) and changes nothing else: base64 there is the
// document's or the answer's own. Secrets shorter than MinElidedSecret are
// left, since eliding them would cut ordinary words out of the text.
func (s Secrets) Elide(text string) string {
	for range 4 {
		next := s.removeSecrets(text, s.long)
		if next == text {
			return text
		}
		text = next
	}
	// Removing one secret made another, over and over (only a crafted set
	// of keys does): remove them outright, which only shortens the text.
	for changed := true; changed; {
		changed = false
		for _, sp := range s.long {
			if strings.Contains(text, sp) {
				text, changed = strings.ReplaceAll(text, sp, ""), true
			}
		}
	}
	return text
}

// removeSecrets replaces every occurrence of each spelling, longest
// first, by the set's marker. The marker overlaps no spelling, so neither
// a marker nor the text beside one can spell a secret, and what is left
// between markers was searched already: one pass leaves no secret.
// Without a marker, removing a secret can join the text around it into
// another, so that repeats (each pass shortens the text, so it ends).
func (s Secrets) removeSecrets(text string, spellings []string) string {
	for {
		next := text
		for _, sp := range spellings {
			if strings.Contains(next, sp) {
				next = strings.ReplaceAll(next, sp, s.marker)
			}
		}
		if s.marker != "" || next == text {
			return next
		}
		text = next
	}
}

func containsAny(text string, secrets []string) bool {
	for _, s := range secrets {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}

func isBase64Char(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/'
}

// elideBase64 replaces data URL payloads (any length) and bare base64 runs
// (MinBase64Run or longer) by a marker giving the decoded size. It scans
// once; multi-megabyte request bodies are common.
func elideBase64(text string) string {
	var b strings.Builder
	last := 0 // text[last:i] is still to be copied
	for i := 0; i < len(text); {
		if !isBase64Char(text[i]) {
			i++
			continue
		}
		// The text is JSON: a letter (or "/") after an escaping backslash
		// belongs to the escape ("\n", "\u00e9"), and eliding it would
		// leave a lone backslash that breaks the document.
		if n := escapeLen(text, i); n > 0 {
			i += n
			continue
		}
		// A run of base64 characters starts at i; "=" padding may end it.
		j := i
		for j < len(text) && isBase64Char(text[j]) {
			j++
		}
		// The payload of a data URL starts after ";base64,"; the run
		// before the comma (the media type) is not elided.
		if j < len(text) && text[j] == ',' && strings.HasSuffix(text[:j], ";base64") && isDataURL(text[:j]) {
			start := j + 1
			end := start
			for end < len(text) && isBase64Char(text[end]) {
				end++
			}
			end = skipPadding(text, end)
			if end == start { // nothing (or an elision marker) follows
				i = end
				continue
			}
			b.Grow(len(text[last:start]) + 32)
			b.WriteString(text[last:start])
			writeMarker(&b, decodedLen(text[start:end]))
			last, i = end, end
			continue
		}
		end := skipPadding(text, j)
		if j-i >= MinBase64Run {
			b.WriteString(text[last:i])
			writeMarker(&b, decodedLen(text[i:end]))
			last = end
		}
		i = end
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

// escapeLen is how many bytes from i belong to a JSON escape whose
// backslash is text[i-1] (an odd run of backslashes ends there): 5 for
// \uXXXX, else 1; 0 when text[i] is not escaped.
func escapeLen(text string, i int) int {
	k := i
	for k > 0 && text[k-1] == '\\' {
		k--
	}
	if (i-k)%2 == 0 {
		return 0
	}
	if text[i] == 'u' {
		return min(5, len(text)-i)
	}
	return 1
}

// isDataURL reports whether prefix ends in "data:<media type>;base64".
func isDataURL(prefix string) bool {
	k := strings.LastIndex(prefix, "data:")
	if k < 0 {
		return false
	}
	mt := prefix[k+len("data:") : len(prefix)-len(";base64")]
	if len(mt) > 127 {
		return false
	}
	for i := 0; i < len(mt); i++ {
		c := mt[i]
		if !(isBase64Char(c) || c == '.' || c == '-' || c == '_' || c == ';' || c == '=') {
			return false
		}
	}
	return true
}

func skipPadding(text string, i int) int {
	for n := 0; n < 2 && i < len(text) && text[i] == '='; n++ {
		i++
	}
	return i
}

func decodedLen(payload string) int {
	pad := len(payload) - len(strings.TrimRight(payload, "="))
	return (len(payload) - pad) * 3 / 4
}

func writeMarker(b *strings.Builder, n int) {
	b.WriteString("<elided ")
	b.WriteString(strconv.Itoa(n))
	b.WriteString(" bytes>")
}

// longestBase64Run is the length of the longest run of base64 characters.
func longestBase64Run(text string) int {
	longest, run := 0, 0
	for i := 0; i < len(text); i++ {
		if isBase64Char(text[i]) {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}
