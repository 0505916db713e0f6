package chunk

import "unicode/utf8"

// cleanJoin reports whether count(left+right) == count(left) + count(right)
// holds for o200k_base and cl100k_base because of where left ends and
// right starts. With r the first rune of right (decoded from right alone;
// an invalid byte is U+FFFD), \s the pre-tokenizers' white space
// (unicode.IsSpace, which holds '\r' and '\n') and a newline either of
// '\r' and '\n', the join is clean when either side is empty, or
//
//	A. left ends with a newline, r is not '/', and right's leading run
//	   of \s (maybe empty) holds no newline: a line or paragraph end
//	   before text, indented or not;
//	B. left's last rune is not \s and r is \s but no newline: the
//	   space before a word, where sentence and word cuts fall.
//
// p50k_base has no such rule (see Counter.additive).
//
// Why. count is the sum over pre-tokens of each pre-token's BPE count, and
// a pre-token's count depends on its bytes alone, so the equation holds
// when the pre-tokens of S = left+right are those of left followed by
// those of right. Let p = len(left).
//
//  0. Invalid bytes: bpeCounter.count first replaces each invalid byte by
//     U+FFFD, decoding in order. In A, S[p-1] is a one-byte rune; in B, r
//     is a valid rune, whose first byte is no continuation byte. Either
//     way no sequence spans p and replace(S) == replace(left) +
//     replace(right). Below, all three are valid UTF-8.
//
//  1. From p on, S is right: every matcher (nextO200K, nextCL100K and
//     the functions they call) reads only s[i:] from its start i and
//     compares offsets with len(s), without looking back (the patterns
//     have no look-behind, anchor or \b), so the pre-tokens of S from p
//     are right's, shifted by p.
//
//  2. Before p, S and left give the same pre-tokens and the last ends at
//     p: for every start i < p the matcher returns the same end on S and
//     on left. They differ only where a matcher reads S[p] (or tests
//     i+k < len(s) with i+k == p): on left it finds the end of the text,
//     on S the rune r, and it must decide alike.
//
//     In A, S[p-1] is a newline, which is neither \p{L}, \p{N}, the
//     optional prefix rune [^\r\n\p{L}\p{N}] nor punctuation
//     [^\s\p{L}\p{N}], so a matcher reaches p only by taking it:
//     - the letter alternatives (o200k's two case patterns, cl100k's
//     [^\r\n\p{L}\p{N}]?\p{L}+) and \p{N}{1,3} stop at the newline;
//     their prefix rune cannot be it (the "i+size < len(s)" test before
//     the prefix is taken differs only for i == p-1, whose rune is the
//     newline). The contraction (?i:'s|'t|'re|'ve|'m|'ll|'d), after a
//     letter run or as cl100k's first alternative, reads "'" and letters
//     only, so it fails at the newline on both.
//     - " ?[^\s\p{L}\p{N}]+" stops at the newline (its optional space is
//     tested against i+1 < len(s) only when s[i] == ' ', so i < p-1).
//     Its tail [\r\n/]* (o200k) or [\r\n]* (cl100k) may take the
//     newline and then reads r: r is neither a newline nor '/', so the
//     tail ends at p on S as at the end of left.
//     - \s*[\r\n]+ | \s+(?!\S) | \s+: a run of \s that ends before
//     p-1 ends at a rune before p-1 on both. A run that reaches p-1 holds
//     its newline; on S it may go on through right's leading \s, which
//     holds no newline, so the run's last newline is at p-1 on S as on
//     left. \s*[\r\n]+ is tried first and matches, since the run holds a
//     newline: regexp2 backs the greedy \s* off to the run's last
//     newline and [\r\n]+ takes it and no more (the rune after it, if
//     any, is no newline), so the match ends at p on both. This is the
//     step p50k_base lacks: without \s*[\r\n]+, "\n\n" alone is one
//     pre-token, but before "x" it is "\n" and "\n" (\s+(?!\S) gives
//     back the last space).
//
//     In B, left's last rune c is not \s and r is \s but not '\r' or
//     '\n', so r is no letter, mark, number, punctuation, "'" or '/'. The
//     pre-token holding c is no white-space run; it is a letter run, a
//     digit run or punctuation, and each of those, and the contraction
//     and [\r\n/]* tails after them, stops at r on S as at the end of
//     left, so it ends at p on both. A prefix rune at p-1 wants a letter
//     at p, which neither has. A pre-token ending before p-1 reads past
//     its end only for a contraction (at most 3 runes, which must be "'"
//     and letters: r fails it on S as the end of left does) or for
//     (?!\S) after white space, which reads c.
//
// Both matchers are held to tiktoken-go's regexp2 pre-tokenizer by
// FuzzCountMatchesTiktoken, and the rule itself to tiktoken-go by
// TestCleanJoinAddsCounts and FuzzCleanJoin.
//
// The rule is narrower than the truth (a join inside a run of spaces
// before a word, "a  " + " b", adds too), but the boundaries units have,
// a line or paragraph end before text and the space before a word, are
// clean by it.
func cleanJoin(left, right string) bool {
	if left == "" || right == "" {
		return true
	}
	r, _ := utf8.DecodeRuneInString(right)
	if b := left[len(left)-1]; b == '\n' || b == '\r' { // A
		if r == '/' {
			return false
		}
		for _, r := range right {
			if classOf(r)&clCRLF != 0 {
				return false
			}
			if classOf(r)&clS == 0 {
				break
			}
		}
		return true
	}
	c, _ := utf8.DecodeLastRuneInString(left)
	return classOf(c)&clS == 0 && classOf(r)&(clS|clCRLF) == clS // B
}
