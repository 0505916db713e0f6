package e2e

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// zipBombDOCX is a DOCX whose document part inflates to 300 MiB of zeros,
// over the inflated-size limit, from a few hundred KiB; it is built
// streaming, never held inflated. Its deflate stream is one encoding of
// 1 MiB of zeros written 300 times (as package office's tests build theirs):
// compressing the 300 MiB themselves took 20 s of CPU under -race, the
// longest part of this package's run.
func zipBombDOCX(t *testing.T) []byte {
	t.Helper()
	const mib = 300
	chunk := zerosDeflateChunk(t)
	finalBlock := []byte{0x03, 0x00} // an empty final fixed-Huffman block
	zero := make([]byte, 1<<20)
	crc := uint32(0)
	for range mib {
		crc = crc32.Update(crc, crc32.IEEETable, zero)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("[Content_Types].xml")
	if err == nil {
		_, err = io.WriteString(w, `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`)
	}
	if err == nil {
		w, err = zw.CreateRaw(&zip.FileHeader{
			Name: "word/document.xml", Method: zip.Deflate, CRC32: crc,
			CompressedSize64:   uint64(len(chunk)*mib + len(finalBlock)),
			UncompressedSize64: mib << 20,
		})
	}
	for i := 0; i < mib && err == nil; i++ {
		_, err = w.Write(chunk)
	}
	if err == nil {
		_, err = w.Write(finalBlock)
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// zerosDeflateChunk is the deflate encoding of 1 MiB of zeros as a
// byte-aligned, non-final block sequence. Repeating it n times inflates to
// n MiB: its back-references only ever reach zeros, so copies are
// independent.
func zerosDeflateChunk(t *testing.T) []byte {
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

// hugePNG is a valid PNG header announcing 50000×50000 pixels.
func hugePNG() []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], 50000)
	binary.BigEndian.PutUint32(ihdr[4:], 50000)
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	chunk := append([]byte("IHDR"), ihdr...)
	_ = binary.Write(&b, binary.BigEndian, uint32(len(ihdr)))
	b.Write(chunk)
	_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	b.WriteString("\x00\x00\x00\x00IEND\xaeB`\x82")
	return b.Bytes()
}

const billionLaughs = `<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<lolz>&lol9;</lolz>`

func TestHostileFilesFailTheirRowsQuicklyWhileTheServiceAnswers(t *testing.T) {
	t.Parallel()
	pdf, err := os.ReadFile("testdata/eu-001.pdf")
	if err != nil {
		t.Fatal(err)
	}
	src := sources(t, map[string]string{
		"bomb.docx":     string(zipBombDOCX(t)),
		"lolz.xml":      billionLaughs,
		"huge.png":      string(hugePNG()),
		"truncated.pdf": string(pdf[:len(pdf)/3]),
		"fine.txt":      txtDoc,
	})
	s := startServer(t, "")
	names := []string{"bomb.docx", "lolz.xml", "huge.png", "truncated.pdf", "fine.txt"}
	reasons := map[string]string{"bomb.docx": "zip bomb", "lolz.xml": "entities", "huge.png": "pixels", "truncated.pdf": "damaged"}
	var urls []string
	for _, n := range names {
		urls = append(urls, src+"/"+n)
	}
	start := time.Now()
	id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, createBody(urls...))["id"].(string)
	for {
		if r := s.do("GET", "/healthz", "", nil); r.status != http.StatusOK {
			t.Fatalf("/healthz answered %d while hostile files were recognized", r.status)
		}
		j := s.mustDo(http.StatusOK, "GET", "/v1/jobs/"+id, keyA, nil)
		if j["status"] == "JOB_STATUS_COMPLETE" || j["status"] == "JOB_STATUS_FAILED" {
			if j["status"] != "JOB_STATUS_COMPLETE" {
				t.Fatalf("job ended %v; one good file makes it COMPLETE", j["status"])
			}
			break
		}
		if time.Since(start) > 60*time.Second {
			t.Fatalf("hostile files not done after 60s: %v", j)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("five files, four hostile, recognized in %s", time.Since(start).Round(time.Millisecond))
	res := s.mustDo(http.StatusOK, "GET", "/v1/jobs/"+id+"/result", keyA, nil)["result"].(map[string]any)
	for i, row := range res["ocr"].([]any) {
		r := row.(map[string]any)
		want := "JOB_OCR_STATUS_FAILED"
		if names[i] == "fine.txt" {
			want = "JOB_OCR_STATUS_DONE"
		}
		if r["status"] != want {
			t.Errorf("%s: %v (%v), want %s", names[i], r["status"], r["error"], want)
		}
		if want == "JOB_OCR_STATUS_FAILED" && strings.TrimSpace(r["error"].(string)) == "" {
			t.Errorf("%s failed without saying why", names[i])
		}
		if why := reasons[names[i]]; why != "" && !strings.Contains(fmt.Sprint(r["error"]), why) {
			t.Errorf("%s failed with %q, want the reason to mention %q", names[i], r["error"], why)
		}
	}
}
