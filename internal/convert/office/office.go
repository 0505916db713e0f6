// Package office recognizes office documents: DOCX and PPTX are read
// natively from their OOXML, XLSX through excelize, and legacy formats
// (Word, Excel and PowerPoint 97–2003, OpenDocument) are converted by
// LibreOffice when it is installed and then read the same way. Every
// archive is opened behind zip-bomb limits before anything is inflated.
package office

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// Config bounds the work on one file. Zero fields take their defaults.
type Config struct {
	MaxEntries       int   // zip entries, default 10000
	MaxInflatedBytes int64 // total inflated size, default 256 MiB
	MaxRatio         int   // inflated/compressed per entry, default 200
	MaxRows          int   // per XLSX sheet, default 10000
	// MaxCells bounds the table cells of one file: all sheets of a
	// workbook, all tables of a DOCX or PPTX. Default 1000000.
	MaxCells int
	// MaxOutputBytes bounds the markdown of one file; output past it is
	// cut with a note saying so. Default 64 MiB.
	MaxOutputBytes int64
	// Soffice is the LibreOffice binary; "" looks up soffice/libreoffice on PATH.
	Soffice string
	Timeout time.Duration // per LibreOffice conversion, default 2m
	// TempDir gives the directory for what a conversion writes to disk:
	// excelize's copies of sheets past 16 MiB and LibreOffice's working
	// folder, both a user's document in plain text. A process killed
	// mid-conversion leaves them there, so serve gives a folder of its own
	// that it empties at start (DOCJOBS_DATA_DIR/tmp/<node id>). It may wait
	// until that folder is ready. nil: the system's temporary directory.
	TempDir func(context.Context) (string, error)
}

// Defaults of Config.
const (
	DefaultMaxEntries       = 10000
	DefaultMaxInflatedBytes = 256 << 20
	DefaultMaxRatio         = 200
	DefaultMaxRows          = 10000
	DefaultMaxCells         = 1000000
	DefaultMaxOutputBytes   = 64 << 20
	DefaultTimeout          = 2 * time.Minute
)

func (c Config) withDefaults() Config {
	if c.MaxEntries <= 0 {
		c.MaxEntries = DefaultMaxEntries
	}
	if c.MaxInflatedBytes <= 0 {
		c.MaxInflatedBytes = DefaultMaxInflatedBytes
	}
	if c.MaxRatio <= 0 {
		c.MaxRatio = DefaultMaxRatio
	}
	if c.MaxRows <= 0 {
		c.MaxRows = DefaultMaxRows
	}
	if c.MaxCells <= 0 {
		c.MaxCells = DefaultMaxCells
	}
	if c.MaxOutputBytes <= 0 {
		c.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	return c
}

// tempDir is the directory for a conversion's files.
func (c Config) tempDir(ctx context.Context) (string, error) {
	if c.TempDir == nil {
		return os.TempDir(), nil
	}
	dir, err := c.TempDir(ctx)
	if err != nil {
		return "", fmt.Errorf("temporary directory: %w", err)
	}
	return dir, nil
}

// Kinds of office documents, by the media type the dispatcher sniffed
// (github.com/gabriel-vasile/mimetype names).
const (
	DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
	XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	DOC  = "application/msword"
	XLS  = "application/vnd.ms-excel"
	PPT  = "application/vnd.ms-powerpoint"
	ODT  = "application/vnd.oasis.opendocument.text"
	ODS  = "application/vnd.oasis.opendocument.spreadsheet"
	ODP  = "application/vnd.oasis.opendocument.presentation"
	// OLE is an OLE2 compound file mimetype could not narrow down. Most
	// .doc files sniff this way (mimetype only recognizes some Word
	// CLSIDs); so do password-protected DOCX/XLSX/PPTX, which are OLE
	// containers around the encrypted package. Markdown and ToPDF look
	// inside to decide.
	OLE = "application/x-ole-storage"
	// ZIP is a zip archive mimetype did not recognize as OOXML or
	// OpenDocument (it looks only at the first entries; a truncated DOCX
	// sniffs this way). Markdown reads it as the office document its
	// package relationships name, or fails saying it is none.
	ZIP = "application/zip"
)

// Kinds lists the media types Markdown and ToPDF accept, for the
// dispatcher's routing. They also accept ZIP, and OpenDocument templates
// (…-template) as their base kind.
func Kinds() []string {
	return []string{DOCX, PPTX, XLSX, DOC, XLS, PPT, ODT, ODS, ODP, OLE}
}

// Models reported by Markdown.
const (
	ModelDOCX = "docx"
	ModelPPTX = "pptx"
	ModelXLSX = "xlsx"
	// ModelLibreOfficePrefix prefixes the native model after a LibreOffice
	// conversion: "libreoffice+docx".
	ModelLibreOfficePrefix = "libreoffice+"
)

// ErrNoLibreOffice is returned when a conversion needs LibreOffice and it is not installed.
var ErrNoLibreOffice = errors.New("this file type needs LibreOffice, which is not installed on this server")

// errOCRAlwaysNoLibreOffice is ErrNoLibreOffice for a DOCX, PPTX or XLSX
// that ToPDF was asked to render: the file type needs nothing, the mode
// does, and the sentence says what to change.
var errOCRAlwaysNoLibreOffice = &docError{class: ErrNoLibreOffice,
	msg: "OCR_ALWAYS renders office files through LibreOffice, which is not installed on this server; use EXTRACTION_MODE_HYBRID or install libreoffice"}

// Sentinel errors callers may branch on with errors.Is. The errors
// returned carry full sentences for the row; these only classify them.
var (
	// ErrZipBomb: the archive exceeds an entry-count, size or ratio limit.
	ErrZipBomb = errors.New("zip bomb")
	// ErrInvalid: the file is not a readable document of its kind.
	ErrInvalid = errors.New("invalid office document")
	// ErrEncrypted: the document is password-protected.
	ErrEncrypted = errors.New("password-protected office document")
	// ErrUnsupported: the kind is not an office document this package reads.
	ErrUnsupported = errors.New("unsupported office document")
)

// docError is a row sentence classified by a sentinel.
type docError struct {
	class error
	msg   string
	cause error
}

func (e *docError) Error() string        { return e.msg }
func (e *docError) Is(target error) bool { return target == e.class }
func (e *docError) Unwrap() error        { return e.cause }

func bombError(doc, format string, args ...any) error {
	return &docError{class: ErrZipBomb, msg: "the " + doc + " is a zip bomb: " + fmt.Sprintf(format, args...)}
}

func invalidError(doc string, cause error, format string, args ...any) error {
	msg := "the file is not a valid " + doc + ": " + fmt.Sprintf(format, args...)
	if cause != nil {
		msg += " (" + cause.Error() + ")"
	}
	return &docError{class: ErrInvalid, msg: msg, cause: cause}
}

func unsupportedError(format string, args ...any) error {
	return &docError{class: ErrUnsupported, msg: fmt.Sprintf(format, args...)}
}

// Markdown converts an office document of the given kind to markdown.
// Legacy kinds go through LibreOffice. model names the method ("docx",
// "pptx", "xlsx", "libreoffice+docx", …).
func Markdown(ctx context.Context, cfg Config, kind string, data []byte) (md string, model string, err error) {
	cfg = cfg.withDefaults()
	if err := ctx.Err(); err != nil {
		return "", "", err
	}
	k := baseKind(kind)
	if isOLE(data) && (k == DOCX || k == PPTX || k == XLSX || k == ZIP) {
		// A password-protected OOXML file is an OLE container around the
		// encrypted package; a .doc named .docx is OLE too.
		k = OLE
	}
	switch k {
	case DOCX:
		md, err = docxMarkdown(ctx, cfg, data)
		return md, ModelDOCX, err
	case PPTX:
		md, err = pptxMarkdown(ctx, cfg, data)
		return md, ModelPPTX, err
	case XLSX:
		md, err = xlsxMarkdown(ctx, cfg, data)
		return md, ModelXLSX, err
	case ZIP:
		native, err := zipKind(cfg, data)
		if err != nil {
			return "", "", err
		}
		return Markdown(ctx, cfg, native, data)
	case DOC, XLS, PPT, ODT, ODS, ODP, OLE:
		return legacyMarkdown(ctx, cfg, k, data)
	default:
		return "", "", unsupportedError("unsupported file type %s", kind)
	}
}

// ToPDF renders an office document to PDF with LibreOffice, for
// EXTRACTION_MODE_OCR_ALWAYS. Without LibreOffice a DOCX, PPTX or XLSX
// fails saying that the mode needs it (HYBRID reads them natively); a
// legacy file says that its type does.
func ToPDF(ctx context.Context, cfg Config, kind string, data []byte) ([]byte, error) {
	cfg = cfg.withDefaults()
	k := baseKind(kind)
	if isOLE(data) && (k == DOCX || k == PPTX || k == XLSX || k == ZIP) {
		k = OLE
	}
	switch k {
	case DOCX, PPTX, XLSX, ZIP:
		// LibreOffice inflates the whole package; check it first. A zip
		// of no known kind is an "office document", as in Markdown, so
		// both modes word a damaged file alike.
		if _, err := openArchive(data, docName(k), cfg); err != nil {
			return nil, err
		}
	case ODT, ODS, ODP:
		if err := checkODF(cfg, k, data); err != nil {
			return nil, err
		}
	case DOC, XLS, PPT, OLE:
	default:
		return nil, unsupportedError("unsupported file type %s", kind)
	}
	ext, err := inputExt(cfg, k, data)
	if err != nil {
		return nil, err
	}
	bin, err := sofficePath(cfg)
	if err != nil {
		if errors.Is(err, ErrNoLibreOffice) && (ext == "docx" || ext == "pptx" || ext == "xlsx") {
			return nil, errOCRAlwaysNoLibreOffice
		}
		return nil, err
	}
	return convertWithLibreOffice(ctx, cfg, bin, data, ext, "pdf")
}

// baseKind maps parameters away and OpenDocument templates to their base kind.
func baseKind(kind string) string {
	k, _, _ := strings.Cut(kind, ";")
	k = strings.ToLower(strings.TrimSpace(k))
	k = strings.TrimPrefix(k, "application/x-vnd.oasis")
	if strings.HasPrefix(k, ".opendocument.") {
		k = "application/vnd.oasis" + k
	}
	return strings.TrimSuffix(k, "-template")
}

// docName is the short name of a kind in messages.
func docName(kind string) string {
	switch kind {
	case DOCX:
		return "DOCX"
	case PPTX:
		return "PPTX"
	case XLSX:
		return "XLSX"
	case DOC:
		return "DOC"
	case XLS:
		return "XLS"
	case PPT:
		return "PPT"
	case ODT:
		return "ODT"
	case ODS:
		return "ODS"
	case ODP:
		return "ODP"
	}
	return "office document"
}
