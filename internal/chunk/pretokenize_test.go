package chunk

import (
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	"github.com/pkoukk/tiktoken-go"
)

// corpusDir is the shared test corpus (see its MANIFEST.md); tests that
// need it skip when it is absent.
const corpusDir = "../../../shared/corpus"

var fastEncodings = []string{EncodingO200K, EncodingCL100K}

// reference loads tiktoken-go for name once per test binary: it is the
// specification the hand-written counter must match.
var reference = struct {
	sync.Mutex
	m map[string]*tiktoken.Tiktoken
}{m: map[string]*tiktoken.Tiktoken{}}

func referenceEncoding(t testing.TB, name string) *tiktoken.Tiktoken {
	t.Helper()
	reference.Lock()
	defer reference.Unlock()
	if tk, ok := reference.m[name]; ok {
		return tk
	}
	tk, err := loadTiktoken(name)
	if err != nil {
		t.Fatal(err)
	}
	reference.m[name] = tk
	return tk
}

func fastEncoder(t testing.TB, name string) *encoder {
	t.Helper()
	enc, err := loadEncoding(name)
	if err != nil {
		t.Fatal(err)
	}
	if enc.fast == nil {
		t.Fatalf("%s is not counted by the hand-written pre-tokenizer", name)
	}
	return enc
}

// assertSameCount fails unless the counter gives tiktoken-go's count for s.
func assertSameCount(t testing.TB, name, what, s string) {
	t.Helper()
	want := len(referenceEncoding(t, name).EncodeOrdinary(s))
	if got := fastEncoder(t, name).count(s); got != want {
		t.Errorf("%s: %s: count = %d, tiktoken-go = %d (input %.200q)", name, what, got, want, s)
	}
}

// trickyInputs are the seeds of the differential fuzz target and a table
// of their own: each targets one place where a hand-written matcher could
// part from regexp2's backtracking.
var trickyInputs = []string{
	"",
	"hello world",
	"it's I'M they'LL we'Re you'VE she'D don'T 'S 'sx '",
	"HELLO's WorLD'll ǅungla'S ĲssEL",
	"中文测试，繁體中文測試。日本語のテキスト、カタカナ。한국어 텍스트입니다.",
	"e\u0301te\u0301 A\u0300\u0301b \u0301\u0301x ̈a",
	"1234567 12 3.14159 ١٢٣٤ ²³ Ⅻ",
	" \t\n\r\n  x",
	"trailing spaces   ",
	"a\u00a0b\u3000c\u2028d\u0085e\u200bf",
	"!!!\n\n??\r\n...// ///\n",
	" ...\n\n\n\t  end",
	"😀👍🏽 family 👨‍👩‍👧 flags 🇩🇪",
	"invalid \xff\xfe bytes \xe2\x82 cut \xed\xa0\x80 surrogate",
	"<|endoftext|> <|endofprompt|>",
	"\r\r\n\n \n \r x",
	"  \n  ",
	"word\n",
	"a  b   c    d",
	"K'S 'ſ 'K  'ᴸᴸ",
	"x/y/z\n/path/to/file.go\r\n//",
	"ǅ ǈǋ ᾈ ʰʱ ⁱ ǅa aǅ",
	"\u0345\u0300a\u02b0\u0300",
}

func TestCountMatchesTiktokenOnTrickyInputs(t *testing.T) {
	for _, name := range fastEncodings {
		for _, s := range trickyInputs {
			assertSameCount(t, name, "tricky input", s)
		}
	}
}

// maxFuzzInput bounds the fuzz inputs; see FuzzCountMatchesTiktoken.
const maxFuzzInput = 4096

func FuzzCountMatchesTiktoken(f *testing.F) {
	for _, s := range trickyInputs {
		f.Add(s)
	}
	for _, name := range fastEncodings {
		referenceEncoding(f, name)
		fastEncoder(f, name)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// tiktoken-go's BPE is quadratic in the length of a piece, so a
		// long input can stall the fuzzer for minutes; long inputs are
		// the corpus test's and TestLongMergeMatchesLinear's job.
		if len(s) > maxFuzzInput {
			t.Skip("longer than maxFuzzInput")
		}
		for _, name := range fastEncodings {
			assertSameCount(t, name, "fuzz input", s)
		}
	})
}

// TestLongMergeMatchesLinear checks the heap merge used for long pieces
// against the linear one that copies tiktoken-go, on pieces of every
// length up to a few hundred bytes drawn from text where merges tie.
func TestLongMergeMatchesLinear(t *testing.T) {
	ranks := fastEncoder(t, EncodingO200K).fast.ranks
	alphabets := []string{"ab", "abcdefgh", "the quick brown fox", "中文測試日本語", "\ufffd!", "aaaa"}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, alpha := range alphabets {
		runes := []rune(alpha)
		for n := 1; n <= 400; n += 7 {
			var b strings.Builder
			for b.Len() < n {
				b.WriteRune(runes[rng.IntN(len(runes))])
			}
			piece := b.String()
			if got, want := bpeMergeCountLong(piece, ranks), bpeMergeCount(piece, ranks); got != want {
				t.Errorf("bpeMergeCountLong(%q) = %d, bpeMergeCount = %d", piece, got, want)
			}
		}
	}
}

// TestCharClassesMatchRegexp2 checks classOf against regexp2 itself for
// every code point, so that no rune the fuzzer never generates can split
// differently.
func TestCharClassesMatchRegexp2(t *testing.T) {
	if testing.Short() {
		t.Skip("walks all of Unicode")
	}
	has := func(bit uint8) func(uint8) bool { return func(c uint8) bool { return c&bit != 0 } }
	classes := []struct {
		pattern string
		in      func(uint8) bool
	}{
		{`\p{L}`, has(clL)},
		{`\p{N}`, has(clN)},
		{`\s`, has(clS)},
		{`[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`, has(clUpper)},
		{`[\p{Ll}\p{Lm}\p{Lo}\p{M}]`, has(clLower)},
		{`[\r\n]`, has(clCRLF)},
		{`[^\r\n\p{L}\p{N}]`, isPrefix},
		{`[^\s\p{L}\p{N}]`, isPunct},
	}
	for _, c := range classes {
		re := regexp2.MustCompile(`^`+c.pattern+`$`, regexp2.None)
		bad := 0
		for r := rune(0); r <= unicode.MaxRune; r = nextRune(r) {
			if !utf8.ValidRune(r) {
				continue
			}
			want, err := re.MatchRunes([]rune{r})
			if err != nil {
				t.Fatal(err)
			}
			if got := c.in(classOf(r)); got != want && bad < 10 {
				bad++
				t.Errorf("%s on U+%04X: classOf says %v, regexp2 %v", c.pattern, r, got, want)
			}
		}
	}
}

// nextRune steps through every code point, or under the race detector
// through all of Latin-1 and then every 13th code point (13 is prime, so
// the sample does not line up with block boundaries).
func nextRune(r rune) rune {
	if raceEnabled && r >= 0xff {
		return r + 13
	}
	return r + 1
}

// TestContractionMatchesRegexp2 checks the case-insensitive contraction
// against regexp2 with every code point in each letter position.
func TestContractionMatchesRegexp2(t *testing.T) {
	if testing.Short() {
		t.Skip("walks all of Unicode")
	}
	re := regexp2.MustCompile(`^(?i:'s|'t|'re|'ve|'m|'ll|'d)`, regexp2.None)
	bad := 0
	check := func(s string) {
		m, err := re.FindStringMatch(s)
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		if m != nil {
			want = len(string([]rune(s)[:m.Length]))
		}
		if got := contraction(s, 0); got != want && bad < 10 {
			bad++
			t.Errorf("contraction(%q) = %d, regexp2 %d", s, got, want)
		}
	}
	for r := rune(0); r <= unicode.MaxRune; r = nextRune(r) {
		if !utf8.ValidRune(r) {
			continue
		}
		check("'" + string(r) + "x")
		check("'r" + string(r))
		check("'l" + string(r))
	}
}

// corpusPrefix is how much of each corpus file is compared; a quarter of
// it under the race detector.
const corpusPrefix = 16 << 10

// TestCountMatchesTiktokenOnCorpus compares the head of every file of the
// shared corpus (text and binary alike: binary files exercise invalid
// UTF-8) and of this package's testdata.
func TestCountMatchesTiktokenOnCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("tokenizes the whole corpus with tiktoken-go")
	}
	files := 0
	for _, dir := range []string{corpusDir, "testdata"} {
		if _, err := os.Stat(dir); err != nil {
			t.Logf("skipping %s: %v", dir, err)
			continue
		}
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files++
			// The head of each file is enough variety; tiktoken-go, the
			// reference, is quadratic on the long pieces binary files hold.
			prefix := corpusPrefix
			if raceEnabled {
				prefix /= 4
			}
			data = data[:min(len(data), prefix)]
			for _, name := range fastEncodings {
				assertSameCount(t, name, path, string(data))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("compared %d files with both encodings", files)
}

// benchmarkTexts returns an English document of ~100 KB from the corpus and
// a CJK-heavy text of similar size (the corpus has almost no CJK, so it is
// built from sentences in fixed pseudo-random order).
func benchmarkTexts(b *testing.B) map[string]string {
	b.Helper()
	en, err := os.ReadFile(filepath.Join(corpusDir, "pdf/pdfbox/cweb.pdf.txt"))
	if err != nil {
		b.Skip("corpus absent: ", err)
	}
	sentences := []string{
		"自然语言处理是人工智能的一个重要分支，", "它研究计算机与人类语言之间的相互作用。",
		"文档识别服务把扫描件转换成结构化文本，", "然后按照模型的令牌预算切分成块。",
		"東京都の天気は晴れのち曇りでしょう。", "このサービスはＰＤＦとＯＣＲに対応しています。",
		"請求書番号は２０２４－００１です。", "한국어 문서도 처리할 수 있습니다. ",
		"数据表格包含１２３４５行，", "每一行都有日期、金额和说明。\n",
		"第三章　系统设计\n\n", "（注：本文仅供参考）",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var cjk strings.Builder
	for cjk.Len() < len(en) {
		cjk.WriteString(sentences[rng.IntN(len(sentences))])
	}
	return map[string]string{"english": string(en), "cjk": cjk.String()}
}

// BenchmarkCount compares tiktoken-go (old) with the hand-written counter
// (new) on o200k_base. The new counter's piece cache is warm after the
// first iteration, as it is in the service.
func BenchmarkCount(b *testing.B) {
	texts := benchmarkTexts(b)
	for _, doc := range []string{"english", "cjk"} {
		s := texts[doc]
		tokens := len(referenceEncoding(b, EncodingO200K).EncodeOrdinary(s))
		counters := map[string]func(string) int{
			"old": func(s string) int { return len(referenceEncoding(b, EncodingO200K).EncodeOrdinary(s)) },
			"new": fastEncoder(b, EncodingO200K).count,
		}
		for _, impl := range []string{"old", "new"} {
			count := counters[impl]
			b.Run(doc+"/"+impl, func(b *testing.B) {
				b.SetBytes(int64(len(s)))
				for b.Loop() {
					if n := count(s); n != tokens {
						b.Fatalf("count = %d, want %d", n, tokens)
					}
				}
				b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			})
		}
	}
}
