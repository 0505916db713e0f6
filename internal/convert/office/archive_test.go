package office

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
	"time"
)

// zerosChunk is the deflate encoding of 1 MiB of zeros as one non-final,
// byte-aligned block sequence. Repeating it n times inflates to n MiB:
// its back-references only ever reach zeros, so copies are independent.
func zerosChunk(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	fw, err := flate.NewWriter(&buf, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Write(make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := fw.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// finalBlock is an empty final fixed-Huffman block, ending a deflate stream.
var finalBlock = []byte{0x03, 0x00}

// bombEntry adds an entry of mib MiB of zeros, written compressed chunk
// by chunk so that the test never holds the inflated bytes; declared is
// the uncompressed size its headers state (a liar's if it differs).
func bombEntry(t testing.TB, zw *zip.Writer, name string, mib int, declared uint64) {
	t.Helper()
	chunk := zerosChunk(t)
	zero := make([]byte, 1<<20)
	crc := uint32(0)
	for range mib {
		crc = crc32.Update(crc, crc32.IEEETable, zero)
	}
	w, err := zw.CreateRaw(&zip.FileHeader{
		Name: name, Method: zip.Deflate, CRC32: crc,
		CompressedSize64:   uint64(len(chunk)*mib + len(finalBlock)),
		UncompressedSize64: declared,
	})
	if err != nil {
		t.Fatal(err)
	}
	for range mib {
		if _, err := w.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Write(finalBlock); err != nil {
		t.Fatal(err)
	}
}

// bombPackage is a package whose main part (word/document.xml,
// ppt/presentation.xml or xl/workbook.xml) is mib MiB of zeros.
func bombPackage(t testing.TB, main string, mib int, declared uint64) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, p := range [][2]string{
		{"[Content_Types].xml", `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`},
		{"_rels/.rels", `<Relationships ` + relsNS + `><Relationship Id="rId1" Type="` + relTypeBase + `officeDocument" Target="` + main + `"/></Relationships>`},
	} {
		w, _ := zw.Create(p[0])
		_, _ = w.Write([]byte(p[1]))
	}
	bombEntry(t, zw, main, mib, declared)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// manyEntries is a zip of n empty stored entries.
func manyEntries(t testing.TB, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := range n {
		if _, err := zw.CreateRaw(&zip.FileHeader{Name: fmt.Sprintf("e%d", i), Method: zip.Store}); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestHostileArchives: every hostile package fails fast with a sentence
// saying what is wrong, before inflating what it threatens.
func TestHostileArchives(t *testing.T) {
	gib := uint64(1 << 30)
	tests := []struct {
		name    string
		kind    string
		data    func(t *testing.T) []byte
		cfg     Config
		class   error
		message string
	}{
		{
			name: "one entry of 1 GiB of zeros",
			kind: DOCX, data: func(t *testing.T) []byte { return bombPackage(t, "word/document.xml", 1024, gib) },
			class: ErrZipBomb, message: "the DOCX is a zip bomb: it would inflate to more than 256 MiB",
		},
		{
			name: "the same bomb in a workbook, before excelize sees it",
			kind: XLSX, data: func(t *testing.T) []byte { return bombPackage(t, "xl/workbook.xml", 1024, gib) },
			class: ErrZipBomb, message: "the XLSX is a zip bomb: it would inflate to more than 256 MiB",
		},
		{
			name: "the same bomb in a presentation",
			kind: PPTX, data: func(t *testing.T) []byte { return bombPackage(t, "ppt/presentation.xml", 1024, gib) },
			class: ErrZipBomb, message: "the PPTX is a zip bomb: it would inflate to more than 256 MiB",
		},
		{
			name: "an entry compressed a thousandfold under the size limit",
			kind: DOCX, data: func(t *testing.T) []byte { return bombPackage(t, "word/document.xml", 16, 16<<20) },
			class: ErrZipBomb, message: `the DOCX is a zip bomb: entry "word/document.xml" expands 1`,
		},
		{
			name: "headers that understate the inflated size",
			kind: DOCX, data: func(t *testing.T) []byte { return bombPackage(t, "word/document.xml", 1024, 1000) },
			class: ErrZipBomb, message: `the DOCX is a zip bomb: entry "word/document.xml" inflates past the 1000 bytes its header declares`,
		},
		{
			name: "100000 entries",
			kind: DOCX, data: func(t *testing.T) []byte { return manyEntries(t, 100000) },
			class: ErrZipBomb, message: "the DOCX is a zip bomb: it has more than 10000 entries",
		},
		{
			name: "entries within the count limit but over a lower configured one",
			kind: PPTX, data: func(t *testing.T) []byte { return manyEntries(t, 50) },
			cfg:   Config{MaxEntries: 20},
			class: ErrZipBomb, message: "the PPTX is a zip bomb: it has more than 20 entries",
		},
		{
			name: "a total over a configured limit",
			kind: DOCX, data: func(t *testing.T) []byte { return bombPackage(t, "word/document.xml", 2, 2<<20) },
			cfg:   Config{MaxInflatedBytes: 1 << 20, MaxRatio: 10000},
			class: ErrZipBomb, message: "the DOCX is a zip bomb: it would inflate to more than 1 MiB",
		},
		{
			name: "an OpenDocument bomb, before LibreOffice sees it",
			kind: ODS, data: func(t *testing.T) []byte { return bombPackage(t, "content.xml", 1024, gib) },
			class: ErrZipBomb, message: "the ODS is a zip bomb: it would inflate to more than 256 MiB",
		},
		{
			name: "a truncated DOCX (no central directory)",
			kind: DOCX, data: func(t *testing.T) []byte { return readTestdata(t, "malformed/testWORD_truncated.docx") },
			class: ErrInvalid, message: "the file is not a valid DOCX: it is not a readable zip archive",
		},
		{
			name: "an empty zip",
			kind: DOCX, data: func(t *testing.T) []byte { return readTestdata(t, "malformed/empty.zip") },
			class: ErrInvalid, message: "the file is not a valid DOCX: it has no main document part",
		},
		{
			name: "no bytes",
			kind: XLSX, data: func(t *testing.T) []byte { return nil },
			class: ErrInvalid, message: "the file is not a valid XLSX: the file is empty",
		},
		{
			name: "a document without a body",
			kind: DOCX, data: func(t *testing.T) []byte {
				full := buildDOCX(t, docxParts{})
				return addParts(t, removePart(t, full, "word/document.xml"), [2]string{"word/document.xml", `<w:document ` + wNS + `/>`})
			},
			class: ErrInvalid, message: "the file is not a valid DOCX: part word/document.xml has no body element",
		},
		{
			name: "a main part that is not XML",
			kind: DOCX, data: func(t *testing.T) []byte { return bombPackage(t, "word/document.xml", 1, 1<<20) },
			class: ErrInvalid, message: "the file is not a valid DOCX: part word/document.xml cannot be read (XML syntax error",
		},
		{
			name: "a truncated main part",
			kind: DOCX, data: func(t *testing.T) []byte {
				full := buildDOCX(t, docxParts{body: `<w:p><w:r><w:t>text</w:t></w:r></w:p>`})
				doc := `<?xml version="1.0"?><w:document ` + wNS + `><w:body><w:p><w:r><w:t>cut he`
				return addParts(t, removePart(t, full, "word/document.xml"), [2]string{"word/document.xml", doc})
			},
			class: ErrInvalid, message: "the file is not a valid DOCX: part word/document.xml cannot be read (XML syntax error",
		},
		{
			name: "tables nested a thousand deep",
			kind: DOCX, data: func(t *testing.T) []byte {
				return buildDOCX(t, docxParts{body: strings.Repeat("<w:tbl><w:tr><w:tc>", 1000) + strings.Repeat("</w:tc></w:tr></w:tbl>", 1000)})
			},
			class: ErrInvalid, message: "the file is not a valid DOCX: its elements nest more than 256 deep",
		},
		{
			name: "groups nested a thousand deep",
			kind: PPTX, data: func(t *testing.T) []byte {
				return buildPPTX(t, []string{strings.Repeat("<p:grpSp>", 1000) + strings.Repeat("</p:grpSp>", 1000)}, nil)
			},
			class: ErrInvalid, message: "the file is not a valid PPTX: its elements nest more than 256 deep",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := tt.data(t)
			start := time.Now()
			_, _, err := Markdown(context.Background(), tt.cfg, tt.kind, data)
			elapsed := time.Since(start)
			if err == nil {
				t.Fatal("Markdown succeeded, want an error")
			}
			if !errors.Is(err, tt.class) {
				t.Errorf("error %q is not %v", err, tt.class)
			}
			if !strings.HasPrefix(err.Error(), tt.message) {
				t.Errorf("error = %q, want it to start %q", err, tt.message)
			}
			// Generous for the race detector on a loaded machine; the
			// point is seconds, not the minutes inflating would take.
			if elapsed > 5*time.Second {
				t.Errorf("took %v", elapsed)
			}
		})
	}
}

// TestToPDFChecksArchiveFirst: OCR_ALWAYS renders through LibreOffice,
// which would inflate everything; the limits apply before it runs.
func TestToPDFChecksArchiveFirst(t *testing.T) {
	_, err := ToPDF(context.Background(), Config{}, DOCX, manyEntries(t, 100000))
	if !errors.Is(err, ErrZipBomb) {
		t.Errorf("ToPDF = %v, want a zip bomb error", err)
	}
}

// TestEntryCountIsNotTakenFromTheEndRecord: the end-of-directory count can
// lie (archive/zip compares it modulo 65536); the records are counted.
func TestEntryCountIsNotTakenFromTheEndRecord(t *testing.T) {
	data := manyEntries(t, 20000)
	// Rewrite the counts of the end record (zip64 aware writers put
	// 0xffff there only past 65535, so this is the plain record).
	end := bytes.LastIndex(data, []byte("PK\x05\x06"))
	binary.LittleEndian.PutUint16(data[end+8:], 5)
	binary.LittleEndian.PutUint16(data[end+10:], 5)
	_, _, err := Markdown(context.Background(), Config{}, DOCX, data)
	if !errors.Is(err, ErrZipBomb) {
		t.Errorf("Markdown = %v, want a zip bomb error", err)
	}
}

// A damaged archive says the same in both modes: HYBRID reads it with
// Markdown and OCR_ALWAYS checks it in ToPDF, and a zip that cannot be
// read is an unknown kind of office document to both.
func TestADamagedArchiveSaysTheSameInBothModes(t *testing.T) {
	docx := readTestdata(t, "docx/TestDocument.docx")
	truncated := docx[:len(docx)/2]
	for _, kind := range []string{ZIP, DOCX} {
		t.Run(kind, func(t *testing.T) {
			_, _, hybrid := Markdown(context.Background(), Config{}, kind, truncated)
			_, ocrAlways := ToPDF(context.Background(), Config{}, kind, truncated)
			if hybrid == nil || ocrAlways == nil || hybrid.Error() != ocrAlways.Error() {
				t.Fatalf("Markdown says %v\nToPDF says    %v", hybrid, ocrAlways)
			}
			if !errors.Is(ocrAlways, ErrInvalid) || !strings.Contains(ocrAlways.Error(), "it is not a readable zip archive") {
				t.Errorf("ToPDF = %v, want ErrInvalid saying it is not a readable zip archive", ocrAlways)
			}
		})
	}
}
