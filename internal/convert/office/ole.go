package office

import (
	"bytes"
	"strings"

	"github.com/richardlehane/mscfb"
)

// oleMagic starts every OLE2 compound file.
var oleMagic = []byte{0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1}

func isOLE(data []byte) bool { return bytes.HasPrefix(data, oleMagic) }

// maxOLEEntries bounds the directory entries looked at; the streams that
// name a document's kind sit in the root storage, near the front.
const maxOLEEntries = 4096

// oleExt decides what an OLE2 compound file holds from its stream names:
// Word ("WordDocument"), Excel ("Workbook", or "Book" before Excel 97),
// PowerPoint ("PowerPoint Document"), or an encrypted OOXML package
// ("EncryptionInfo" with "EncryptedPackage"). It returns the extension to
// hand LibreOffice.
func oleExt(kind string, data []byte) (ext string, err error) {
	defer func() {
		// mscfb parses untrusted sectors; a panic there fails the file only.
		if p := recover(); p != nil {
			ext, err = "", invalidError(docName(kind), nil, "its OLE structure is corrupt")
		}
	}()
	r, err := mscfb.New(bytes.NewReader(data))
	if err != nil {
		if kind == OLE {
			return "", invalidError("office document", err, "its OLE structure cannot be read")
		}
		return "", invalidError(docName(kind), err, "its OLE structure cannot be read")
	}
	has := map[string]bool{}
	n := 0
	for e, err := r.Next(); err == nil && n < maxOLEEntries; e, err = r.Next() {
		n++
		if len(e.Path) == 0 { // streams of the root storage only
			has[strings.ToLower(e.Name)] = true
		}
	}
	switch {
	case has["encryptedpackage"] || has["encryptioninfo"]:
		return "", &docError{class: ErrEncrypted, msg: "the document is password-protected; docjobs cannot read encrypted files"}
	case has["worddocument"]:
		return "doc", nil
	case has["workbook"] || has["book"]:
		return "xls", nil
	case has["powerpoint document"]:
		return "ppt", nil
	}
	if kind == OLE {
		return "", unsupportedError("unsupported file type %s (an OLE compound file that is not a Word, Excel or PowerPoint document)", OLE)
	}
	return "", invalidError(docName(kind), nil, "it has no %s content stream", docName(kind))
}
