package convert

import (
	"bytes"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	htmlcharset "golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
	xunicode "golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// Charset names reported in Output.Charset.
const (
	charsetUTF8    = "UTF-8"
	charsetUTF16LE = "UTF-16LE"
	charsetUTF16BE = "UTF-16BE"
)

// detectSample is how much of a document the legacy-charset detector
// scores; the winner then decodes the whole document.
const detectSample = 64 << 10

// decodeText returns data as UTF-8 and the name of the charset it was read
// in. The order is: byte-order mark; UTF-16 without a mark (recognized by
// its zero bytes); valid UTF-8; the declared charset (Content-Type or
// in-document declaration); statistical detection among common legacy
// charsets. Valid UTF-8 outranks a declaration because servers often
// declare a stale default, while legacy text with high bytes that happens
// to be valid UTF-8 practically never occurs.
func decodeText(data []byte, declared string) (string, string) {
	switch {
	case bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}):
		return toValidUTF8(data[3:]), charsetUTF8
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}):
		return decodeWith(xunicode.UTF16(xunicode.LittleEndian, xunicode.IgnoreBOM), data[2:]), charsetUTF16LE
	case bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		return decodeWith(xunicode.UTF16(xunicode.BigEndian, xunicode.IgnoreBOM), data[2:]), charsetUTF16BE
	}
	if name := guessUTF16(data); name != "" {
		order := xunicode.LittleEndian
		if name == charsetUTF16BE {
			order = xunicode.BigEndian
		}
		return decodeWith(xunicode.UTF16(order, xunicode.IgnoreBOM), data), name
	}
	if utf8.Valid(data) {
		return string(data), charsetUTF8
	}
	if declared != "" {
		if e, name := htmlcharset.Lookup(declared); e != nil && name != "utf-8" {
			return decodeWith(e, data), name
		}
	}
	c := detectLegacy(data)
	return c.decode(data), c.nameFor(data)
}

func toValidUTF8(b []byte) string {
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// decodeWith decodes data, writing the text once into a buffer of its
// exact size. Decoded text can be three times its source (windows-1252's
// 0x80 is €), and the decoder's own Bytes grows its buffer by doubling
// before the string conversion copies it again: 100 MiB of 0x80, a text
// file the download limit admits, peaked at 1.2 GiB, a 100 MiB Cyrillic
// windows-1251 file at 750 MiB. A first pass that keeps nothing counts
// the decoded size; it costs a second decode, a fraction of a second for
// 100 MiB.
func decodeWith(e encoding.Encoding, data []byte) string {
	n, err := io.Copy(io.Discard, transform.NewReader(bytes.NewReader(data), e.NewDecoder()))
	if err != nil {
		// x/text decoders replace invalid input rather than fail; keep a
		// best effort if one ever does.
		return toValidUTF8(data)
	}
	var b strings.Builder
	b.Grow(int(n))
	if _, err := io.Copy(&b, transform.NewReader(bytes.NewReader(data), e.NewDecoder())); err != nil {
		return toValidUTF8(data)
	}
	// The decoders write valid UTF-8, so this keeps b's string, uncopied.
	return strings.ToValidUTF8(b.String(), "\uFFFD")
}

// guessUTF16 recognizes UTF-16 without a byte-order mark by the zero high
// bytes of its Latin characters: mostly-zero odd bytes mean little endian.
func guessUTF16(data []byte) string {
	sample := data[:min(len(data), 4096)]
	if len(sample) < 4 {
		return ""
	}
	var even, odd int
	for i, b := range sample {
		if b == 0 {
			if i%2 == 0 {
				even++
			} else {
				odd++
			}
		}
	}
	half := len(sample) / 2
	switch {
	case odd*10 > half*3 && even*20 < half:
		return charsetUTF16LE
	case even*10 > half*3 && odd*20 < half:
		return charsetUTF16BE
	}
	return ""
}

// legacyCharset is one candidate of the detector.
type legacyCharset struct {
	name   string
	decode func([]byte) string
	// latin1Name, when set, is reported instead of name for input without
	// bytes 0x80–0x9F, where windows-1252 and ISO-8859-1 agree.
	latin1Name string
}

func (c legacyCharset) nameFor(data []byte) string {
	if c.latin1Name == "" {
		return c.name
	}
	for _, b := range data {
		if b >= 0x80 && b <= 0x9F {
			return c.name
		}
	}
	return c.latin1Name
}

func charmapDecoder(m *charmap.Charmap) func([]byte) string {
	return func(b []byte) string { return decodeWith(m, b) }
}

func encodingDecoder(e encoding.Encoding) func([]byte) string {
	return func(b []byte) string { return decodeWith(e, b) }
}

// ibm500 is EBCDIC code page 500 (international Latin-1), which x/text does
// not ship: it is code page 037 with seven punctuation positions swapped.
var ibm500 = func() *[256]rune {
	var t [256]rune
	for i := range t {
		t[i] = charmap.CodePage037.DecodeByte(byte(i))
	}
	for b, r := range map[byte]rune{0x4A: '[', 0x4F: '!', 0x5A: ']', 0x5F: '^', 0xB0: '¢', 0xBA: '¬', 0xBB: '|'} {
		t[b] = r
	}
	return &t
}()

func decodeIBM500(data []byte) string {
	var sb strings.Builder
	sb.Grow(len(data))
	for _, b := range data {
		sb.WriteRune(ibm500[b])
	}
	return sb.String()
}

// legacyCharsets are the candidates, in order of preference on a tie.
var legacyCharsets = []legacyCharset{
	{name: "windows-1252", latin1Name: "ISO-8859-1", decode: charmapDecoder(charmap.Windows1252)},
	{name: "windows-1250", decode: charmapDecoder(charmap.Windows1250)},
	{name: "windows-1251", decode: charmapDecoder(charmap.Windows1251)},
	{name: "KOI8-R", decode: charmapDecoder(charmap.KOI8R)},
	{name: "IBM866", decode: charmapDecoder(charmap.CodePage866)},
	{name: "windows-1253", decode: charmapDecoder(charmap.Windows1253)},
	{name: "windows-1255", decode: charmapDecoder(charmap.Windows1255)},
	{name: "windows-1256", decode: charmapDecoder(charmap.Windows1256)},
	{name: "IBM500", decode: decodeIBM500},
	{name: "IBM037", decode: charmapDecoder(charmap.CodePage037)},
	{name: "Shift_JIS", decode: encodingDecoder(japanese.ShiftJIS)},
	{name: "EUC-JP", decode: encodingDecoder(japanese.EUCJP)},
	{name: "GB18030", decode: encodingDecoder(simplifiedchinese.GB18030)},
	{name: "Big5", decode: encodingDecoder(traditionalchinese.Big5)},
	{name: "EUC-KR", decode: encodingDecoder(korean.EUCKR)},
}

// detectLegacy picks the candidate whose decoding of a sample reads most
// like natural text.
func detectLegacy(data []byte) legacyCharset {
	sample := data[:min(len(data), detectSample)]
	best, bestScore := legacyCharsets[0], 0.0
	for i, c := range legacyCharsets {
		s := plausibility(c.decode(sample))
		if i == 0 || s > bestScore {
			best, bestScore = c, s
		}
	}
	return best
}

// script groups letters for the adjacency rules of plausibility.
type script uint8

const (
	scriptNone script = iota
	scriptLatin
	scriptCyrillic
	scriptGreek
	scriptHebrew
	scriptArabic
	scriptHan
	scriptKana
	scriptHangul
	scriptOther
)

func scriptOf(r rune) script {
	switch {
	case r < 0x80:
		if ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') {
			return scriptLatin
		}
		return scriptNone
	case !unicode.IsLetter(r):
		return scriptNone
	case unicode.Is(unicode.Latin, r):
		return scriptLatin
	case unicode.Is(unicode.Cyrillic, r):
		return scriptCyrillic
	case unicode.Is(unicode.Greek, r):
		return scriptGreek
	case unicode.Is(unicode.Hebrew, r):
		return scriptHebrew
	case unicode.Is(unicode.Arabic, r):
		return scriptArabic
	case unicode.Is(unicode.Han, r):
		return scriptHan
	case unicode.Is(unicode.Hiragana, r), unicode.Is(unicode.Katakana, r):
		return scriptKana
	case unicode.Is(unicode.Hangul, r):
		return scriptHangul
	}
	return scriptOther
}

// Letter frequencies tell apart decodings that all yield letters of one
// script (KOI8-R read as windows-1251, Hebrew read as Cyrillic, …): a right
// decoding is full of the script's frequent letters and nearly free of its
// rare ones.
var (
	frequentLetters = map[script]string{
		scriptCyrillic: "оеаинтсрвлкм",
		scriptGreek:    "αοειτνσςηρπκμυλ",
		scriptHebrew:   "יוהלארמתבנשעםן",
		scriptArabic:   "اليمونهربتع",
	}
	rareLetters = map[script]string{
		scriptCyrillic: "ъщэфёцЪЩЭФЁЦЂЃѓЉЊЌЋЏђљњќћџЎў",
		scriptGreek:    "ΰΐϊϋΪΫ",
	}
)

// commonPunct is non-ASCII punctuation that real text uses.
const commonPunct = "\u00a0«»“”‘’„–—…•€£¥©®°§±×·¿¡№™¦¶\u3000、。「」『』（）！？：；，．"

// plausibility scores how much s reads like natural text: letters and
// common punctuation raise it; replacement characters, control codes, rare
// symbols, letters of two scripts glued together, and case flips inside a
// word lower it. Scores are totals, so multi-byte decodings (one rune per
// two bytes) give their letters more weight.
func plausibility(s string) float64 {
	var (
		score      float64
		prev       rune
		prevScript script
		prevSymbol bool // prev is a rare non-ASCII symbol that follows a letter
	)
	for _, r := range s {
		sc := scriptOf(r)
		switch {
		case r == utf8.RuneError:
			score -= 10
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r' && r != '\f':
			score -= 10
		case r >= 0x7F && r <= 0x9F:
			score -= 10
		case r < 0x80:
			if sc == scriptLatin || ('0' <= r && r <= '9') {
				score++
			} else {
				score += 0.25
			}
		case sc == scriptHan:
			score += 1.5
		case sc == scriptKana:
			if r >= 0xFF61 && r <= 0xFF9F { // half-width katakana: rare in real text
				score--
			} else {
				score += 2
			}
		case sc == scriptHangul:
			score += 2
		case sc != scriptNone:
			score++
			if strings.ContainsRune(frequentLetters[sc], r) {
				score += 0.5
			} else if strings.ContainsRune(rareLetters[sc], r) {
				score--
			}
		case strings.ContainsRune(commonPunct, r):
			score += 0.5
		case unicode.IsSpace(r):
		default:
			score--
		}

		if sc != scriptNone && prevScript != scriptNone && sc != prevScript {
			score -= mixPenalty(prevScript, sc)
		}
		if sc == prevScript && sc != scriptNone && r >= 0x80 && unicode.IsUpper(r) && unicode.IsLower(prev) {
			score -= 2 // "пРИВЕТ": a case flip inside a word
		}
		if prevSymbol && sc != scriptNone {
			score -= 3 // "pa³stwo": a symbol inside a word is a wrong letter
		}
		prevSymbol = sc == scriptNone && r >= 0x80 && prevScript != scriptNone &&
			!unicode.IsSpace(r) && !strings.ContainsRune("’‘·-", r)
		prev, prevScript = r, sc
	}
	return score
}

// mixPenalty is the cost of two letters of different scripts side by side.
// Japanese mixes Han and kana, and CJK text embeds Latin words without
// spaces; other mixes are the mark of a wrong decoding.
func mixPenalty(a, b script) float64 {
	cjk := func(s script) bool { return s == scriptHan || s == scriptKana || s == scriptHangul }
	switch {
	case (a == scriptHan && b == scriptKana) || (a == scriptKana && b == scriptHan):
		return 0
	case (a == scriptLatin && cjk(b)) || (cjk(a) && b == scriptLatin):
		return 1
	case cjk(a) && cjk(b):
		return 3
	}
	return 5
}
