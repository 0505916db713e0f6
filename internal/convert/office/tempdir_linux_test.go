package office

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/xuri/excelize/v2"
)

// created watches dir and returns what was created in it since.
func created(t *testing.T, dir string) func() []string {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_CREATE); err != nil {
		t.Fatal(err)
	}
	return func() []string {
		var names []string
		buf := make([]byte, 64<<10)
		for {
			n, err := syscall.Read(fd, buf)
			if n <= 0 || err != nil {
				return names
			}
			for off := 0; off+syscall.SizeofInotifyEvent <= n; {
				ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(ev.Len)]
				names = append(names, strings.TrimRight(string(name), "\x00"))
				off += syscall.SizeofInotifyEvent + int(ev.Len)
			}
		}
	}
}

// bigSheetWorkbook is a workbook whose sheet's XML is past xmlPartInMemory,
// which excelize copies to a file: its first cell says marker.
func bigSheetWorkbook(t *testing.T, marker string) []byte {
	t.Helper()
	small := workbook(t, func(f *excelize.File, s string) { set(t, f, s, "A1", marker) })
	var sb strings.Builder
	sb.WriteString(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` +
		`<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>`)
	fmt.Fprintf(&sb, `<row r="1"><c r="A1" t="inlineStr"><is><t>%s</t></is></c></row>`, marker)
	// Random text: it compresses too little for the zip-bomb ratio.
	noise := make([]byte, 96<<10)
	for r := 2; sb.Len() <= xmlPartInMemory+1<<20; r++ {
		rand.Read(noise)
		fmt.Fprintf(&sb, `<row r="%d"><c r="A%d" t="inlineStr"><is><t>%s</t></is></c></row>`, r, r, base64.StdEncoding.EncodeToString(noise))
	}
	sb.WriteString(`</sheetData></worksheet>`)
	// rewriteZip, but the 17 MB part deflated by Huffman coding alone: at
	// the default level deflating it was seconds of CPU under -race, and
	// the part is deflated all the same (random text compresses little
	// either way).
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(w, flate.HuffmanOnly)
	})
	const sheet = "xl/worksheets/sheet1.xml"
	var parts [][2]string
	for _, p := range partsOf(t, small) {
		if p[0] != sheet {
			parts = append(parts, p)
		}
	}
	for _, p := range append(parts, [2]string{sheet, sb.String()}) {
		w, err := zw.Create(p[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, p[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A sheet past 16 MiB is copied to disk by excelize, in plain text: the
// copy goes to the directory Config.TempDir gives (serve's own, emptied at
// start), never to the system's, where a crash would leave it for good.
func TestABigSheetIsCopiedToTheGivenTempDir(t *testing.T) {
	system, own := t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", system)
	inSystem, inOwn := created(t, system), created(t, own)
	data := bigSheetWorkbook(t, "marker cell")
	cfg := Config{TempDir: func(context.Context) (string, error) { return own, nil }}
	md, _ := markdown(t, cfg, XLSX, data)
	if !strings.Contains(md, "marker cell") {
		t.Fatalf("the big sheet's first cell is missing: %.200q", md)
	}
	if got := inSystem(); len(got) != 0 {
		t.Errorf("the conversion created %q in the system's temporary directory; want nothing", got)
	}
	got := inOwn()
	if len(got) == 0 || !strings.HasPrefix(got[0], "excelize-") {
		t.Errorf("the conversion created %q in the given directory; want excelize's copy of the sheet", got)
	}
}
