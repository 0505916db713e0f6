// Package jsonnum gives JSON number literals one spelling per value, so
// that answers compare by value (1 = 1.0 = 1e0) without float rounding.
package jsonnum

import (
	"math/big"
	"strconv"
	"strings"
)

// Canonical writes a JSON number literal so that equal numbers get
// equal text however they were written: 1, 1.0, 1e0 and 10e-1 are all "1e0",
// -0 is "0". It is exact for any number of digits and any exponent.
func Canonical(lit string) string {
	return string(AppendCanonical(nil, lit))
}

// AppendCanonical appends Canonical(lit) to dst. lit must be a literal
// json.Valid accepts.
func AppendCanonical(dst []byte, lit string) []byte {
	mant, exp := lit, ""
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		mant, exp = lit[:i], lit[i+1:]
	}
	start := len(dst)
	if strings.HasPrefix(mant, "-") {
		dst = append(dst, '-')
		mant = mant[1:]
	}
	whole, frac, _ := strings.Cut(mant, ".")
	digits := len(dst)
	for _, part := range [2]string{whole, frac} {
		for i := 0; i < len(part); i++ {
			if len(dst) == digits && part[i] == '0' {
				continue // a leading zero
			}
			dst = append(dst, part[i])
		}
	}
	if len(dst) == digits {
		return append(dst[:start], '0')
	}
	zeros := 0
	for dst[len(dst)-1] == '0' {
		dst = dst[:len(dst)-1]
		zeros++
	}
	// The literal is whole.frac × 10^exp = digits × 10^(exp - len(frac)).
	dst = append(dst, 'e')
	return appendExponent(dst, exp, int64(zeros-len(frac)))
}

// appendExponent appends exp + shift in decimal; exp is a JSON exponent
// ("", "7", "+7", "-0012") of any length.
func appendExponent(dst []byte, exp string, shift int64) []byte {
	if exp == "" {
		return strconv.AppendInt(dst, shift, 10)
	}
	if len(exp) <= 18 { // fits an int64 with room for shift (answers are bytes long)
		if n, err := strconv.ParseInt(exp, 10, 64); err == nil {
			return strconv.AppendInt(dst, n+shift, 10)
		}
	}
	b, ok := new(big.Int).SetString(exp, 10)
	if !ok { // unreachable for a literal json.Valid accepted
		return append(append(dst, exp...), '?')
	}
	return b.Add(b, big.NewInt(shift)).Append(dst, 10)
}
