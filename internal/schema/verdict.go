package schema

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/docjobs/docjobs/internal/fence"
)

// Limits of a verdict (spec: schemaErrors).
const (
	MaxErrors     = 10
	MaxErrorBytes = 512
)

// MaxAnswerDepth bounds the nesting of an answer Verdict validates: a
// bare object or array is depth 1. The validator builds, for a violation
// at depth d, an error at each level above it holding its own instance
// path, so its cost grows with the square of the depth: a 20 KB answer
// nested 9,990 deep (encoding/json refuses 10,000) under a recursive
// schema took 1.3 s and 859 MiB of live heap to judge (hunt-hostile2).
// 128 is merge's bound on an answer's nesting (merge.DefaultMaxDepth;
// consensus votes on 64): no later stage reads a deeper answer.
const MaxAnswerDepth = 128

// Verdict judges a model answer against a compiled schema: whether it
// conforms, and when not, at most MaxErrors violations of at most
// MaxErrorBytes each, each naming the instance path ("at /items/3/price:
// …"), sorted by that path so the same answer always gets the same list.
// When there are more, the first MaxErrors-1 are kept and the last entry
// says how many were left out ("and 5 more violations"), so a caller can
// tell a cut list from a complete one. An answer that is not JSON is one
// violation saying so. An answer wrapped in one code fence (```json … ```)
// is judged by its inside, as merge and the consensus vote read it
// (fence.Strip): one rule for whether an answer is JSON.
//
// An answer nested deeper than MaxAnswerDepth is judged not valid without
// validating it, one violation saying so, even if it would conform.
func Verdict(s *jsonschema.Schema, answer string) (bool, []string) {
	answer = fence.Strip(answer)
	if deeperThan(answer, MaxAnswerDepth) {
		return false, []string{fmt.Sprintf("at /: the answer is nested deeper than %d levels", MaxAnswerDepth)}
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(answer))
	if err != nil {
		return false, []string{clip("at /: the answer is not valid JSON: " + firstLine(err.Error()))}
	}
	err = s.Validate(v)
	if err == nil {
		return true, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return false, []string{clip("at /: " + firstLine(err.Error()))}
	}
	leaves, total := sortedLeaves(ve, MaxErrors)
	if total == 0 {
		leaves = []string{"at /: " + ve.ErrorKind.LocalizedString(printer)}
	}
	if total > MaxErrors {
		leaves = append(leaves[:MaxErrors-1], fmt.Sprintf("and %d more violations", total-(MaxErrors-1)))
	}
	for i, l := range leaves {
		leaves[i] = clip(l)
	}
	return false, leaves
}

// deeperThan reports whether text, read as JSON, opens more than limit
// objects and arrays at once. It only counts brackets outside strings, in
// one pass without allocating: text that is not JSON is the decoder's to
// refuse.
func deeperThan(text string, limit int) bool {
	depth, inString, escaped := 0, false, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case escaped:
			escaped = false
		case inString:
			escaped = c == '\\'
			inString = c != '"'
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > limit {
				return true
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return false
}

// clip cuts s to MaxErrorBytes without splitting a UTF-8 character.
func clip(s string) string {
	if len(s) <= MaxErrorBytes {
		return s
	}
	cut := MaxErrorBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
