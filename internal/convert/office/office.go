// Package office recognizes office documents: DOCX and PPTX are read
// natively from their OOXML, XLSX through excelize, and legacy formats are
// converted by LibreOffice when it is installed. Every archive is opened
// behind zip-bomb limits.
package office

import (
	"context"
	"errors"
	"time"
)

// Config bounds the work on one file.
type Config struct {
	MaxEntries       int   // zip entries, default 10000
	MaxInflatedBytes int64 // total inflated size, default 256 MiB
	MaxRatio         int   // inflated/compressed per entry, default 200
	MaxRows          int   // per XLSX sheet, default 10000
	MaxCells         int   // per XLSX workbook, default 1000000
	// Soffice is the LibreOffice binary; "" looks up soffice/libreoffice on PATH.
	Soffice string
	Timeout time.Duration // per LibreOffice conversion, default 2m
}

// Kinds of office documents, by the media type the dispatcher sniffed.
const (
	DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
	XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	DOC  = "application/msword"
	XLS  = "application/vnd.ms-excel"
	PPT  = "application/vnd.ms-powerpoint"
)

// ErrNoLibreOffice is returned when a conversion needs LibreOffice and it is not installed.
var ErrNoLibreOffice = errors.New("this file type needs LibreOffice, which is not installed on this server")

// ErrNotImplemented marks this stub until the office converter lands.
var ErrNotImplemented = errors.New("office recognition is not implemented yet")

// Markdown converts an office document of the given kind to markdown.
// Legacy kinds go through LibreOffice. model names the method ("docx",
// "pptx", "xlsx", "libreoffice+docx", …).
func Markdown(ctx context.Context, cfg Config, kind string, data []byte) (md string, model string, err error) {
	return "", "", ErrNotImplemented
}

// ToPDF renders an office document to PDF with LibreOffice, for
// EXTRACTION_MODE_OCR_ALWAYS.
func ToPDF(ctx context.Context, cfg Config, kind string, data []byte) ([]byte, error) {
	return nil, ErrNotImplemented
}
