package jobmerge

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// randContent is a string of the characters json.Marshal escapes in its
// several ways (short escapes, \u00XX, HTML, U+2028, invalid UTF-8), of
// multi-byte characters and long runs without ASCII, so that the pieces
// appendString marshals are cut everywhere a cut can fall.
func randContent(r *rand.Rand, n int) string {
	parts := []string{"a", "\"", "\\", "\b", "\f", "\n", "\r", "\t", "\x00", "\x1f", "<", ">", "&", "\x7f",
		"é", "€", "😀", "\u2028", "\u2029", "\xff", "\xe2\x82", "\xf0\x9f", "\xc3", "{\"k\":[1]}"}
	var b strings.Builder
	for b.Len() < n {
		if r.IntN(50) == 0 { // a run without ASCII across a piece's end
			b.WriteString(strings.Repeat("é", r.IntN(3*escapePiece/2)))
			continue
		}
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}

// TestEncodeIsJSONMarshal: the stored answers are json.Marshal's bytes,
// whatever the content holds and however long it is.
func TestEncodeIsJSONMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	yes := true
	for i := range 200 {
		var answers []Answer
		for j := range r.IntN(4) {
			a := Answer{File: randContent(r, 8), Format: "json", Content: randContent(r, r.IntN(3*escapePiece)),
				DedupeRemovedContent: j, MergeIncomplete: j%2 == 1}
			if j == 1 {
				a.SchemaValid = &yes
				a.Conflicts = []Conflict{{Field: `"content":""`, Values: []string{`"content":""`}, Sources: []ChunkRef{{File: "x"}}}}
				a.IncompleteChunks = []ChunkRef{{File: `,"content":""`, ChunkIndex: 2}}
			}
			if j == 2 {
				a.Content = ""
			}
			answers = append(answers, a)
		}
		want, err := json.Marshal(answers)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encode(answers)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("case %d: encode differs from json.Marshal (%d and %d bytes)", i, len(got), len(want))
		}
		if cap(got) != len(got) {
			t.Errorf("case %d: buffer of %d bytes for %d: escapedLen is off", i, cap(got), len(got))
		}
	}
}

// TestEscapedLenIsJSONMarshals: the size encode allocates is exactly the
// length of json.Marshal's string, so the buffer never grows.
func TestEscapedLenIsJSONMarshals(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 500 {
		s := randContent(r, r.IntN(300))
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := escapedLen(s); got != len(b) {
			t.Fatalf("escapedLen(%q) = %d, json.Marshal wrote %d bytes", s, got, len(b))
		}
	}
}

// FuzzEncodeIsJSONMarshal: for any content and file name, encode writes
// json.Marshal's bytes in a buffer of exactly their size.
func FuzzEncodeIsJSONMarshal(f *testing.F) {
	f.Add("report.pdf", `{"total": 1, "note": "<b>&amp;</b> \u2028"}`, true)
	f.Add("a\x00b", "\xff\xfe invalid \xc3", false)
	f.Fuzz(func(t *testing.T, file, content string, incomplete bool) {
		answers := []Answer{{File: file, Format: "json", Content: content, MergeIncomplete: incomplete,
			IncompleteChunks: []ChunkRef{{File: file, ChunkIndex: 1}}}}
		want, err := json.Marshal(answers)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encode(answers)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("encode differs from json.Marshal:\n got %q\nwant %q", got, want)
		}
		if cap(got) != len(got) {
			t.Errorf("buffer of %d bytes for %d", cap(got), len(got))
		}
	})
}
