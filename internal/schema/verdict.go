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
func Verdict(s *jsonschema.Schema, answer string) (bool, []string) {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(fence.Strip(answer)))
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
