package chunk

import (
	"testing"
)

// referenceCount is tiktoken-go's count, the specification: the rule is
// checked against it, not only against the hand-written pre-tokenizer
// whose reasoning it relies on.
func referenceCount(t testing.TB, name, s string) int {
	t.Helper()
	return len(referenceEncoding(t, name).EncodeOrdinary(s))
}

// assertAdds fails unless count(left+right) == count(left)+count(right)
// for encoding name, by tiktoken-go and by the Counter.
func assertAdds(t testing.TB, name, left, right string) {
	t.Helper()
	whole, l, r := referenceCount(t, name, left+right), referenceCount(t, name, left), referenceCount(t, name, right)
	if whole != l+r {
		t.Errorf("%s: %q + %q joins cleanly by the rule, but counts %d whole and %d + %d apart", name, left, right, whole, l, r)
	}
	enc := fastEncoder(t, name)
	if got := enc.count(left + right); got != enc.count(left)+enc.count(right) {
		t.Errorf("%s: the Counter counts %q + %q as %d whole, %d + %d apart", name, left, right, got, enc.count(left), enc.count(right))
	}
}

// Left sides end in every way a unit can, right sides start in every way;
// every pair the rule calls clean must add.
var (
	joinLefts = []string{
		"", "\n", "a\n", "word.\n", "x \n", " \n", "\t\n", "\r\n", "\n\n", "a\r\n\r\n", "a \n \n",
		"1234\n", "12\n", "don't\n", "it'\n", "'\n", "/\n", "./\n", "a/\n", ".\n", "?!\n", ":\n",
		"日本語\n", "。\n", "\xff\n", "\xe3\x80\n", "a\xe3\n", "a\u00a0\n", "a\u3000\n", "x\u2028\n",
		"\u0085\n", "\v\n", "\f\n", "<p>\n", "</p>\n", "| a | b |\n|---|---|\n", "# h\n", "```go\n",
		"😀\n", "e\u0301\n", "ǅ\n", "ABC\n", "abc", "a.", "a ", "a\r", "\n ", "x\n\u3000",
		// Rule B: the last rune is no space.
		"word", "Word", "WORD", "don", "it'", "x'r", "x'l", "x'", "'", "12", "123", "12345", "1.5",
		"units.", "end.\"", "(a)", "a/", "a//", "a-", "日本", "。", "😀", "e\u0301", "\u0301", "ǅ", "ʰ",
		"</p>", "&amp;", "\xff", "a\xe3\x80", "a\xc2", "\n\nx", "a\u200b", "a\u00ad",
		// Rule A with old Mac line ends.
		"\r", "a\r", "a.\r", "x \r", "\r\r", "a/\r",
	}
	joinRights = []string{
		"", "x", "X", "Word", "s", "S", "t go", "re", "'s", "'S", "'ll go", "'", "1", "123456", "1.5",
		"日本", "。x", "\xff", "\x80abc", "\xbf\xbd", "\u00a0x", "\u3000x", "\u2028x", "\u0085x", "\u200bx",
		"\ufeffx", "\u00adx", "/path", "//", "\r\n", "\n", "\nx", " x", "  x", "\tx", "\vx", "\fx", ".", "...\n",
		"-", "—", "| c |", "# h", "```", "😀", "\u0301a", "ǅa", "<p>", "&amp;", "\x00", "'\n",
		// Rule B: the first rune is a space but no newline.
		" ", "   ", " 's", " 'll", " s", " re", " Item", " 12", " /", " //", " .", " \n", " \nx", " \r\n",
		"\t\n", "\u00a0\n", " \u3000x", "\u00a0 x", "  \n\n x", " \xff", " 日本", " 😀", " \u0301",
		// Rule A: indented text after a line end.
		"    Licensed", "   3. item", "\t\t1", "  \u3000x", " \u00a0 /", "  'll", "    ", "  \r\nx", "  \nx",
		"\u2028\nx", "\u0085x", " \u0085x",
	}
)

func TestCleanJoinAddsCounts(t *testing.T) {
	for _, name := range fastEncodings {
		n := 0
		for _, l := range joinLefts {
			for _, r := range joinRights {
				if cleanJoin(l, r) {
					n++
					assertAdds(t, name, l, r)
				}
			}
		}
		if n < 900 {
			t.Fatalf("%s: only %d clean pairs checked", name, n)
		}
	}
}

// Each exclusion of the rule is needed: these joins are not clean, and
// each is a case where the counts do not add for some encoding.
func TestCleanJoinRefusesJoinsThatDoNotAdd(t *testing.T) {
	tests := []struct {
		name, left, right, encoding string
	}{
		{"a newline after a newline: one pre-token whole", "\n", "\n", EncodingO200K},
		{"a space run ending in a newline", "a\n", " \nb", EncodingCL100K},
		{"a carriage return after a newline", "a\n", "\r\nb", EncodingO200K},
		{"o200k's punctuation takes a slash after its newlines", "a.\n", "/", EncodingO200K},
		{"punctuation takes the newlines after it", "a.", "\nb", EncodingCL100K},
		{"punctuation takes a carriage return after it", "x.", "\r\nb", EncodingO200K},
		{"a space run across the join", "a  ", "  b", EncodingO200K},
		{"a space run ending in a newline after a space", "a\t", " \nb", EncodingCL100K},
		{"an indented blank line after a newline", "a\n", "  \nb", EncodingO200K},
		{"a space before a word goes with the word", "a ", "b", EncodingO200K},
		{"a join between letters", "wor", "ld", EncodingCL100K},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if cleanJoin(tt.left, tt.right) {
				t.Fatalf("%q + %q is called clean", tt.left, tt.right)
			}
			whole := referenceCount(t, tt.encoding, tt.left+tt.right)
			apart := referenceCount(t, tt.encoding, tt.left) + referenceCount(t, tt.encoding, tt.right)
			if whole == apart {
				t.Fatalf("%s: %q + %q adds (%d): not an example of the need", tt.encoding, tt.left, tt.right, whole)
			}
		})
	}
}

// p50k_base lacks \s*[\r\n]+, so a join the rule calls clean need not add,
// and its Counter says its counts do not add at all.
func TestP50KIsNotAdditive(t *testing.T) {
	left, right := "a\n\n", "x"
	if !cleanJoin(left, right) {
		t.Fatal("the example is not clean by the rule")
	}
	if whole, apart := referenceCount(t, EncodingP50K, left+right), referenceCount(t, EncodingP50K, left)+referenceCount(t, EncodingP50K, right); whole == apart {
		t.Fatalf("p50k_base counts %q + %q as %d either way: not an example", left, right, whole)
	}
	for model, additive := range map[string]bool{"gpt-4o": true, "gpt-4": true, "text-davinci-003": false} {
		c, err := NewCounter(model)
		if err != nil {
			t.Fatal(err)
		}
		if c.additive() != additive {
			t.Errorf("%s (%s): additive %v, want %v", model, c.Encoding(), c.additive(), additive)
		}
	}
}

// FuzzCleanJoin holds the rule to tiktoken-go on arbitrary pairs; the
// seeds put a newline at the end of the left side so that clean pairs are
// common.
func FuzzCleanJoin(f *testing.F) {
	for _, l := range joinLefts {
		for _, r := range []string{"x", "'s", "\xff", "日本", "/", " x", " 's", "\u00a0\n", " \n"} {
			f.Add(l, r)
		}
	}
	for _, name := range fastEncodings {
		referenceEncoding(f, name)
		fastEncoder(f, name)
	}
	f.Fuzz(func(t *testing.T, left, right string) {
		if len(left)+len(right) > maxFuzzInput {
			t.Skip("longer than maxFuzzInput")
		}
		if !cleanJoin(left, right) {
			// Make it clean where it can be, so that the fuzzer's
			// mutations of both sides are checked.
			switch {
			case cleanJoin(left+"\n", right):
				left += "\n"
			case cleanJoin(left+".", " "+right):
				left, right = left+".", " "+right
			default:
				return
			}
		}
		for _, name := range fastEncodings {
			assertAdds(t, name, left, right)
		}
	})
}
