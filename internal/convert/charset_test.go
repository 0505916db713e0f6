package convert

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	htmlcharset "golang.org/x/net/html/charset"
)

// encodeIn encodes UTF-8 text in the named legacy charset, for tests.
func encodeIn(t *testing.T, name, s string) []byte {
	t.Helper()
	if name == "IBM500" {
		out := make([]byte, 0, len(s))
		for _, r := range s {
			found := false
			for b, br := range ibm500 {
				if br == r {
					out, found = append(out, byte(b)), true
					break
				}
			}
			if !found {
				t.Fatalf("%q has no IBM500 byte", r)
			}
		}
		return out
	}
	e, _ := htmlcharset.Lookup(name)
	if e == nil {
		t.Fatalf("no encoder for %s", name)
	}
	b, err := e.NewEncoder().Bytes([]byte(s))
	if err != nil {
		t.Fatalf("encode %s: %v", name, err)
	}
	return b
}

func TestDecodeTextDetectsLegacyCharsets(t *testing.T) {
	tests := []struct {
		charset string // as encoded
		want    string // as detected
		text    string
	}{
		{"windows-1252", "windows-1252", "Le cœur déçu mais l’âme plutôt naïve, Louÿs rêva de crapaüter en canoë au-delà des îles, près du mälström où brûlent les novæ."},
		{"windows-1252", "ISO-8859-1", "Falsches Üben von Xylophonmusik quält jeden größeren Zwerg. Él está aquí, señor."},
		{"windows-1250", "windows-1250", "Zażółć gęślą jaźń. Pchnąć w tę łódź jeża lub ośm skrzyń fig. Pójdźże, kiń tę chmurność w głąb flaszy!"},
		{"windows-1251", "windows-1251", "Съешь же ещё этих мягких французских булок, да выпей чаю. В чащах юга жил бы цитрус? Да, но фальшивый экземпляр!"},
		{"koi8-r", "KOI8-R", "Съешь же ещё этих мягких французских булок, да выпей чаю. В чащах юга жил бы цитрус? Да, но фальшивый экземпляр!"},
		{"ibm866", "IBM866", "Съешь же ещё этих мягких французских булок, да выпей чаю. В чащах юга жил бы цитрус? Да, но фальшивый экземпляр!"},
		{"windows-1253", "windows-1253", "Ξεσκεπάζω την ψυχοφθόρα βδελυγμία. Τάχιστη αλώπηξ βαφής ψημένη γη, δρασκελίζει υπέρ νωθρού κυνός."},
		{"windows-1255", "windows-1255", "דג סקרן שט בים מאוכזב ולפתע מצא חברה. עטלף אבק נס דרך מזגן שהתפוצץ כי חם."},
		{"windows-1256", "windows-1256", "نص حكيم له سر قاطع وذو شأن عظيم مكتوب على ثوب أخضر ومغلف بجلد أزرق."},
		{"IBM500", "IBM500", "IBM System p Redbooks [catalog]: Workstations > IntelliStation POWER 185 Express!"},
		{"shift_jis", "Shift_JIS", "いろはにほへと ちりぬるを わかよたれそ つねならむ。日本語の文章を正しく判定できるか確認します。"},
		{"euc-jp", "EUC-JP", "いろはにほへと ちりぬるを わかよたれそ つねならむ。日本語の文章を正しく判定できるか確認します。"},
		{"gb18030", "GB18030", "我们的目标是正确识别中文文本的字符编码，这是一个简单的测试句子。今天天气很好，我们去公园散步吧。"},
		{"big5", "Big5", "我們的目標是正確識別中文文本的字元編碼，這是一個簡單的測試句子。今天天氣很好，我們去公園散步吧。"},
		{"windows-1252", "windows-1252", "Invoice total: 120 € (VAT incl.) – thank you."},
		{"windows-1252", "ISO-8859-1", "Müller GmbH, Hauptstraße 5"},
		{"windows-1251", "windows-1251", "Москва"},
		{"koi8-r", "KOI8-R", "Москва, улица Тверская"},
		{"euc-kr", "EUC-KR", "다람쥐 헌 쳇바퀴에 타고파. 한국어 문장의 문자 인코딩을 올바르게 판별합니다. 오늘은 날씨가 좋습니다."},
	}
	for _, tt := range tests {
		t.Run(tt.charset+" "+tt.text[:12], func(t *testing.T) {
			data := encodeIn(t, tt.charset, tt.text)
			got, name := decodeText(data, "")
			if name != tt.want {
				t.Errorf("charset = %s, want %s", name, tt.want)
			}
			if got != tt.text {
				t.Errorf("text = %q, want %q", got, tt.text)
			}
		})
	}
}

func TestDecodeTextOrder(t *testing.T) {
	tests := []struct {
		name     string
		data     []byte
		declared string
		want     string
		charset  string
	}{
		{"UTF-8 BOM stripped", []byte("\xEF\xBB\xBFhé"), "", "hé", "UTF-8"},
		{"UTF-16LE BOM", []byte("\xFF\xFEh\x00\xE9\x00"), "", "hé", "UTF-16LE"},
		{"UTF-16BE BOM", []byte("\xFE\xFF\x00h\x00\xE9"), "", "hé", "UTF-16BE"},
		{"UTF-16LE without BOM", []byte("h\x00e\x00l\x00l\x00o\x00 \x00w\x00o\x00r\x00l\x00d\x00"), "", "hello world", "UTF-16LE"},
		{"UTF-16BE without BOM", []byte("\x00h\x00e\x00l\x00l\x00o\x00 \x00w\x00o\x00r\x00l\x00d"), "", "hello world", "UTF-16BE"},
		{"valid UTF-8 outranks a stale declaration", []byte("naïve"), "iso-8859-1", "naïve", "UTF-8"},
		{"declaration used when not UTF-8", []byte("\xcf\xf0\xe8\xe2\xe5\xf2"), "windows-1251", "Привет", "windows-1251"},
		{"unknown declaration falls back to detection", []byte("caf\xe9 cr\xe8me br\xfbl\xe9e"), "x-unknown", "café crème brûlée", "ISO-8859-1"},
		{"ASCII", []byte("plain"), "", "plain", "UTF-8"},
		{"empty", nil, "", "", "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cs := decodeText(tt.data, tt.declared)
			if got != tt.want || cs != tt.charset {
				t.Errorf("decodeText = %q, %s; want %q, %s", got, cs, tt.want, tt.charset)
			}
		})
	}
}

func TestPlausibilityPrefersRightDecoding(t *testing.T) {
	right := plausibility("Привет, как дела?")
	wrong := plausibility("пРИВЕТ, КАК ДЕЛА?")
	if right <= wrong {
		t.Errorf("plausibility(right) = %v <= plausibility(case-flipped) = %v", right, wrong)
	}
	if s := plausibility(strings.Repeat("\uFFFD", 3)); s >= 0 {
		t.Errorf("plausibility(replacement characters) = %v, want negative", s)
	}
}

// TestLegacyTextIsDecodedIntoOneBufferOfItsSize: decoding allocates the
// text once, at its size, however much larger than its source it is
// (windows-1252's 0x80 is €, three bytes): the decoder's growing buffer
// and the string copy after it made 100 MiB of 0x80 peak at 1.2 GiB.
func TestLegacyTextIsDecodedIntoOneBufferOfItsSize(t *testing.T) {
	tests := []struct {
		name     string
		data     []byte
		declared string
		want     string // the first rune
	}{
		{"windows-1252 euro signs", bytes.Repeat([]byte{0x80}, 8<<20), "windows-1252", "€"},
		{"windows-1251 Cyrillic lines", bytes.Repeat([]byte("\xcf\xf0\xe8\xe2\xe5\xf2 \xec\xe8\xf0\r\n"), 1<<20), "windows-1251", "П"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			text, _ := decodeText(tt.data, tt.declared)
			runtime.ReadMemStats(&after)
			if !strings.HasPrefix(text, tt.want) {
				t.Fatalf("decoded text starts %q, want %q", text[:min(len(text), 12)], tt.want)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(len(text))*5/4 {
				t.Errorf("decoding %d MiB into %d MiB of text allocated %d MiB", len(tt.data)>>20, len(text)>>20, alloc>>20)
			}
		})
	}
}
