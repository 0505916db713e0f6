package chunk

import "unicode/utf8"

// cleanJoin reports whether count(left+right) == count(left) + count(right)
// holds for o200k_base and cl100k_base because of where left ends and
// right starts: left is empty, right is empty, or left ends with '\n' and
// the first rune of right (decoded from right alone; an invalid byte is
// U+FFFD) is neither \s (unicode.IsSpace, which holds '\r' and '\n') nor
// '/'. p50k_base has no such rule (see Counter.additive).
//
// Why. count is the sum over pre-tokens of each pre-token's BPE count, and
// a pre-token's count depends on its bytes alone, so the equation holds
// when the pre-tokens of S = left+right are those of left followed by
// those of right. Let p = len(left), so S[p-1] == '\n'.
//
//  0. Invalid bytes: bpeCounter.count first replaces each invalid byte by
//     U+FFFD, decoding in order. S[p-1] is a one-byte rune, so decoding
//     restarts at p and replace(S) == replace(left) + replace(right): no
//     sequence spans p, in S or in either part. Below, all three are
//     valid UTF-8 and right's first rune r is the one this function
//     decodes (utf8.DecodeRuneInString gives RuneError, size 1, for an
//     invalid byte, as the replacement does).
//  1. From p on, S is right: every matcher (nextO200K, nextCL100K and
//     the functions they call) reads only s[i:] from its start i and
//     compares offsets with len(s) only, without looking back (the
//     patterns have no look-behind, anchor or \b), so the pre-tokens of S
//     from p are right's, shifted by p.
//  2. Before p, S and left give the same pre-tokens and the last ends at
//     p: for every start i < p, the matcher returns the same end on S and
//     on left. A matcher reads a rune at or past p only after consuming
//     S[p-1] == '\n' or when a bound check i+k < len(s) reaches p, and
//     '\n' is neither \p{L}, \p{N}, [^\r\n\p{L}\p{N}] (the optional
//     prefix rune) nor [^\s\p{L}\p{N}] (punctuation). Alternative by
//     alternative:
//     - the letter alternatives (o200k's two case patterns, cl100k's
//     [^\r\n\p{L}\p{N}]?\p{L}+) stop at the '\n', and their prefix rune
//     cannot be it: the "i+size < len(s)" check before the prefix is
//     taken differs between S and left only for i == p-1, where the rune
//     is '\n' and no prefix; the contraction after them, (?i:'s|...|'ll),
//     reads at most 3 runes that must be "'" and letters, so it fails at
//     the '\n' on both. cl100k's leading contraction alternative likewise.
//     - \p{N}{1,3} stops at the '\n'.
//     - " ?[^\s\p{L}\p{N}]+" stops at the '\n' (the optional space is
//     tested with i+1 < len(s) only when s[i] == ' ', i.e. i < p-1). Its
//     tail [\r\n/]* (o200k) or [\r\n]* (cl100k) may take the '\n' and
//     then reads S[p]: r is none of '\r', '\n', '/', so the tail ends at
//     p on S as it does at the end of left.
//     - The whitespace alternatives \s*[\r\n]+ | \s+(?!\S) | \s+: a run
//     of \s that ends before p-1 ends at a non-space rune before p-1 on
//     both, the same match. A run that reaches p-1 holds the '\n' and
//     ends at p on both (r is not \s; left ends there). \s*[\r\n]+ is
//     tried first and matches, since the run holds a newline; regexp2
//     backs the greedy \s* off to the last newline of the run, at p-1,
//     and [\r\n]+ takes it: the match ends at p on both. This is the
//     step p50k_base lacks: without \s*[\r\n]+, "\n\n" alone is one
//     pre-token, but before "x" it is "\n" and "\n" (\s+(?!\S) gives
//     back the last space).
//     - No alternative matching (the rune is skipped) depends only on
//     the rune at i, before p.
//
// Both matchers are held to tiktoken-go's regexp2 pre-tokenizer by
// FuzzCountMatchesTiktoken, and the rule itself by
// TestCleanJoinAddsCounts and FuzzCleanJoin, which compare against
// tiktoken-go.
//
// The rule is deliberately narrower than the truth: a newline followed by
// a Unicode space and then a letter ("\n\u3000x") also splits cleanly,
// but "\n \n" does not, and telling them apart needs the whole run.
// Chunk boundaries that matter, a line or paragraph end before text, are
// clean by the narrow rule.
func cleanJoin(left, right string) bool {
	if left == "" || right == "" {
		return true
	}
	if left[len(left)-1] != '\n' {
		return false
	}
	r, _ := utf8.DecodeRuneInString(right)
	return r != '/' && classOf(r)&clS == 0
}
