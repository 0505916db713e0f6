package provider

import (
	"encoding/json"
	"math"
	"strconv"
)

// MaxTokenCount is the largest token count a row takes from one call's
// usage report. The largest context windows hold about ten million
// tokens, so a count past two billion (Gemini's own counts are int32) is
// not a count but a broken or hostile server's number.
const MaxTokenCount = math.MaxInt32

// Tokens is a vendor's token count as a row keeps it: clamped to
// [0, MaxTokenCount]. A caller bills and budgets from these counts, and a
// negative or absurd one is never true; every adapter reads its usage
// through this (or TokenCount).
func Tokens(n int64) int64 {
	return min(max(n, 0), MaxTokenCount)
}

// TokensOfFloat is Tokens for a count given as a JSON number that is not
// an int64 (1e300, 2^70, 4.0): clamped before it is converted, since Go's
// conversion of an out-of-range float is undefined (MinInt64 on amd64).
func TokensOfFloat(f float64) int64 {
	switch {
	case !(f > 0): // NaN too
		return 0
	case f >= MaxTokenCount:
		return MaxTokenCount
	}
	return int64(f)
}

// AddTokens adds two token counts without wrapping around: consensus adds
// every run's usage into one row.
func AddTokens(a, b int64) int64 {
	a, b = max(a, 0), max(b, 0)
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// TokenCount is a token count in a vendor's JSON answer, read leniently:
// a number (whole or not, of any size) or a string holding one, clamped
// as Tokens clamps; null or anything else is no count (0). It never fails
// the answer it is part of: the usage report is the least of an answer,
// and a count that does not fit must not throw away the answer it came
// with (which was billed).
type TokenCount int64

// UnmarshalJSON reads what it can and never returns an error.
func (c *TokenCount) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if json.Unmarshal(b, &s) != nil {
			*c = 0
			return nil
		}
		b = []byte(s)
	}
	*c = 0
	if n, err := strconv.ParseInt(string(b), 10, 64); err == nil {
		*c = TokenCount(Tokens(n))
	} else if f, err := strconv.ParseFloat(string(b), 64); err == nil || isRange(err) {
		*c = TokenCount(TokensOfFloat(f)) // ParseFloat gives ±Inf out of range
	}
	return nil
}

// isRange reports strconv's out-of-range error.
func isRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}
