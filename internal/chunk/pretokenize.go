package chunk

import (
	"unicode"
	"unicode/utf8"
)

// This file replaces tiktoken-go's regexp2 pre-tokenizer for o200k_base and
// cl100k_base with hand-written matchers. regexp2 is a backtracking engine
// with leftmost-first alternation, so each matcher below tries the pattern's
// alternatives in order and, inside one alternative, resolves the greedy
// quantifiers exactly as backtracking would; the comments give the
// alternative each branch implements. Character classes follow regexp2:
// \p{..} is unicode.Is on Go's tables and \s is unicode.IsSpace.
//
// o200k_base:
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// cl100k_base:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}
//	| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// Both work on valid UTF-8 only; the caller first replaces each invalid
// byte with U+FFFD, as tiktoken-go's []rune conversion does.

// Character class bits of one rune.
const (
	clL     = 1 << iota // \p{L}
	clN                 // \p{N}
	clS                 // \s
	clUpper             // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	clLower             // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
	clCRLF              // [\r\n]
)

// classOf returns the class bits of r.
func classOf(r rune) uint8 {
	if r < utf8.RuneSelf {
		switch {
		case 'a' <= r && r <= 'z':
			return clL | clLower
		case 'A' <= r && r <= 'Z':
			return clL | clUpper
		case '0' <= r && r <= '9':
			return clN
		case r == '\r' || r == '\n':
			return clS | clCRLF
		case r == ' ' || r == '\t' || r == '\v' || r == '\f':
			return clS
		}
		return 0
	}
	var c uint8
	switch {
	case unicode.IsLetter(r):
		c = clL
		switch {
		case unicode.Is(unicode.Ll, r):
			c |= clLower
		case unicode.Is(unicode.Lu, r), unicode.Is(unicode.Lt, r):
			c |= clUpper
		case unicode.Is(unicode.Lm, r), unicode.Is(unicode.Lo, r):
			c |= clUpper | clLower
		}
		return c
	case unicode.IsMark(r):
		c = clUpper | clLower
	case unicode.IsNumber(r):
		c = clN
	}
	if unicode.IsSpace(r) {
		c |= clS
	}
	return c
}

// isPrefix reports [^\r\n\p{L}\p{N}].
func isPrefix(c uint8) bool { return c&(clCRLF|clL|clN) == 0 }

// isPunct reports [^\s\p{L}\p{N}].
func isPunct(c uint8) bool { return c&(clS|clL|clN) == 0 }

// at decodes the rune at byte offset i of the valid UTF-8 string s.
func at(s string, i int) (c uint8, size int) {
	if b := s[i]; b < utf8.RuneSelf {
		return classOf(rune(b)), 1
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	return classOf(r), size
}

// runOf returns the end of the longest run of runes from i whose class
// has any bit of want.
func runOf(s string, i int, want uint8) int {
	for i < len(s) {
		c, size := at(s, i)
		if c&want == 0 {
			break
		}
		i += size
	}
	return i
}

// contraction matches (?i:'s|'t|'re|'ve|'m|'ll|'d) at i and returns its
// end, or i. regexp2 compares unicode.ToLower of the input rune with the
// pattern letter, so the same test is used here.
func contraction(s string, i int) int {
	if i >= len(s) || s[i] != '\'' {
		return i
	}
	j := i + 1
	if j >= len(s) {
		return i
	}
	r, size := utf8.DecodeRuneInString(s[j:])
	j += size
	switch unicode.ToLower(r) {
	case 's', 't', 'm', 'd':
		return j
	case 'r', 'v':
		if j < len(s) {
			r2, size2 := utf8.DecodeRuneInString(s[j:])
			if unicode.ToLower(r2) == 'e' {
				return j + size2
			}
		}
	case 'l':
		if j < len(s) {
			r2, size2 := utf8.DecodeRuneInString(s[j:])
			if unicode.ToLower(r2) == 'l' {
				return j + size2
			}
		}
	}
	return i
}

// spaceAlternatives matches \s*[\r\n]+|\s+(?!\S)|\s+ at i, whose rune is
// \s, and returns the end of the match.
func spaceAlternatives(s string, i int) int {
	lastNL, lastStart, runes := -1, i, 0
	j := i
	for j < len(s) {
		c, size := at(s, j)
		if c&clS == 0 {
			break
		}
		if c&clCRLF != 0 {
			lastNL = j
		}
		lastStart = j
		runes++
		j += size
	}
	// \s*[\r\n]+: \s* backs off to the last newline of the run, and
	// [\r\n]+ then takes only that one (a later one would be later still).
	if lastNL >= 0 {
		return lastNL + 1
	}
	// \s+(?!\S): the whole run at end of text, else all but its last rune.
	if j == len(s) {
		return j
	}
	if runes >= 2 {
		return lastStart
	}
	// \s+
	return j
}

// nextO200K returns the end of the o200k_base pre-token starting at i, or
// -1 when no alternative matches there (the rune is then skipped, as
// FindNextMatch would).
func nextO200K(s string, i int) int {
	c0, s0 := at(s, i)
	// Alternatives 1 and 2, each first with the optional prefix rune
	// taken and then without it.
	if isPrefix(c0) && i+s0 < len(s) {
		if e := o200kCaseLower(s, i+s0); e >= 0 {
			return e
		}
	}
	if e := o200kCaseLower(s, i); e >= 0 {
		return e
	}
	if isPrefix(c0) && i+s0 < len(s) {
		if e := o200kCaseUpper(s, i+s0); e >= 0 {
			return e
		}
	}
	if e := o200kCaseUpper(s, i); e >= 0 {
		return e
	}
	// \p{N}{1,3} | ?[^\s\p{L}\p{N}]+[\r\n/]* | the whitespace alternatives
	return numberPunctOrSpace(s, i, c0, s0, true)
}

// o200kCaseLower matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+
// and the optional contraction at j; -1 if it does not match.
func o200kCaseLower(s string, j int) int {
	lastLower := -1 // start of the last rune of the upper run that is also lower
	k := j
	for k < len(s) {
		c, size := at(s, k)
		if c&clUpper == 0 {
			break
		}
		if c&clLower != 0 {
			lastLower = k + size
		}
		k += size
	}
	if k < len(s) {
		if c, _ := at(s, k); c&clLower != 0 {
			return contraction(s, runOf(s, k, clLower))
		}
	}
	// The upper run backs off until the lower class can take one rune;
	// the rune after that one is not lower, so the match ends there.
	if lastLower >= 0 {
		return contraction(s, lastLower)
	}
	return -1
}

// o200kCaseUpper matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*
// and the optional contraction at j; -1 if it does not match.
func o200kCaseUpper(s string, j int) int {
	k := runOf(s, j, clUpper)
	if k == j {
		return -1
	}
	return contraction(s, runOf(s, k, clLower))
}

// digits matches \p{N}{1,3} at i, whose rune is \p{N}.
func digits(s string, i int) int {
	for n := 0; n < 3 && i < len(s); n++ {
		c, size := at(s, i)
		if c&clN == 0 {
			break
		}
		i += size
	}
	return i
}

// punct matches  ?[^\s\p{L}\p{N}]+ followed by [\r\n/]* (slash true) or
// [\r\n]* at i; -1 if it does not match.
func punct(s string, i int, c0 uint8, s0 int, slash bool) int {
	j := -1
	if s[i] == ' ' && i+1 < len(s) {
		if c1, _ := at(s, i+1); isPunct(c1) {
			j = i + 1
		}
	}
	if j < 0 {
		if !isPunct(c0) {
			return -1
		}
		j = i
	}
	for j < len(s) {
		c, size := at(s, j)
		if !isPunct(c) {
			break
		}
		j += size
	}
	for j < len(s) && (s[j] == '\r' || s[j] == '\n' || (slash && s[j] == '/')) {
		j++
	}
	return j
}

// nextCL100K is nextO200K for cl100k_base.
func nextCL100K(s string, i int) int {
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if e := contraction(s, i); e > i {
		return e
	}
	c0, s0 := at(s, i)
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if isPrefix(c0) && i+s0 < len(s) {
		if c1, s1 := at(s, i+s0); c1&clL != 0 {
			return runOf(s, i+s0+s1, clL)
		}
	}
	if c0&clL != 0 {
		return runOf(s, i+s0, clL)
	}
	// \p{N}{1,3} | ?[^\s\p{L}\p{N}]+[\r\n]* | the whitespace alternatives
	return numberPunctOrSpace(s, i, c0, s0, false)
}

// numberPunctOrSpace matches the alternatives both encodings end with:
// \p{N}{1,3}, then punctuation (see punct; slash for o200k), then the
// whitespace alternatives; -1 if none matches at i.
func numberPunctOrSpace(s string, i int, c0 uint8, s0 int, slash bool) int {
	if c0&clN != 0 {
		return digits(s, i)
	}
	if e := punct(s, i, c0, s0, slash); e >= 0 {
		return e
	}
	if c0&clS != 0 {
		return spaceAlternatives(s, i)
	}
	return -1
}
