// Package convert recognizes one stored file in the row's output format:
// text, HTML and XML natively; PDFs through poppler with the job's OCR
// provider for pages without a text layer; images through the provider;
// office documents natively or through LibreOffice. The file type comes
// from the bytes first (a PDF named .txt is a PDF), then from the name, then
// from the declared Content-Type. Other types return an *UnsupportedError
// naming the detected type.
package convert

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"path"
	"runtime"
	"strings"

	"github.com/gabriel-vasile/mimetype"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/docjobs/docjobs/internal/convert/image"
	"github.com/docjobs/docjobs/internal/convert/office"
	"github.com/docjobs/docjobs/internal/convert/pdf"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/provider"
)

// Method names reported in Output.Model.
const (
	ModelText = "text"
	ModelHTML = "html"
	ModelXML  = "xml"
	ModelSVG  = "svg"
)

// Size limits. Text decoding is linear and cheap; HTML and XML are parsed
// into memory (an HTML tree costs several times its source), so they are
// bounded lower, and what an HTML document parses into is bounded on its
// own (maxHTMLNodes): a few bytes of markup can make a node.
const (
	maxTextBytes = 100 << 20
	maxHTMLBytes = 32 << 20
	maxXMLBytes  = 32 << 20
)

// Input is one stored file to recognize.
type Input struct {
	Name        string // file name; its extension is a hint
	ContentType string // declared type, possibly with a charset parameter
	Data        []byte
	// Mode is job.ExtractionHybrid or job.ExtractionOCRAlways. Text, HTML
	// and XML are text already, so both modes parse them the same way.
	Mode string
	// OCR is the job's recognition provider, for images and for PDF pages
	// without a usable text layer.
	OCR provider.OCR
}

// Output is the recognized text of one file.
type Output struct {
	Content string
	Format  string // job.FormatPlain, job.FormatHTML, job.FormatXML or job.FormatMarkdown
	Model   string // the method: ModelText, ModelHTML or ModelXML
	// Charset is the character encoding the source was read in
	// ("UTF-8", "windows-1252", "IBM866", …), for the row's debug fields.
	Charset string
	// Request and RawData are the provider exchanges, redacted; empty when
	// no provider was called.
	Request, RawData string
	// ProviderCalls counts the OCR provider calls made.
	ProviderCalls int
}

// UnsupportedError is returned for a file type this package does not
// convert. Type is the detected media type, without parameters.
type UnsupportedError struct {
	Type string
}

func (e *UnsupportedError) Error() string { return "unsupported file type " + e.Type }

// kind is what a document is read as.
type kind int

const (
	kindNone     kind = iota
	kindText          // plain: .txt files
	kindMarkdown      // markdown: other text, kept as it is
	kindJSON          // markdown: the JSON in a fenced block
	kindCSV           // markdown: a table
	kindTSV           // markdown: a table
	kindHTML
	kindXML
	kindSVG // markdown: the text a reader sees of the drawing
	kindPDF
	kindImage
	kindOffice
	kindBinary // anything sniffing recognized that is not one of the above
	kindUnknown
)

// Config bounds recognition of one file, per format.
type Config struct {
	PDF    pdf.Config
	Office office.Config
	// Image bounds each image file. Its Decodes bounds the image pages
	// decoded at once across all the files being converted, and should be
	// the one the vision adapters fit pages within too (slots.Config's
	// ImageDecodes): decoding is CPU work, and a page may take up to
	// Image.MaxDecodedBytes (256 MiB) decoded, so sixteen at once would
	// need gigabytes. Without one, the Converter makes its own of
	// ImageDecodes places.
	Image image.Config
	// ImageDecodes is the number of places of the bound New makes when
	// Image.Decodes is nil (default: the CPU count).
	ImageDecodes int
}

// Converter recognizes files; it is safe for concurrent use.
type Converter struct {
	cfg Config
	// pageDecoded, when set (by tests), is told of each image page
	// decoded, by its 0-based index.
	pageDecoded func(i int)
	// htmlNodeLimit replaces maxHTMLNodes when set (by tests).
	htmlNodeLimit int
}

// htmlLimit is the most nodes an HTML document may parse into.
func (c *Converter) htmlLimit() int {
	if c.htmlNodeLimit > 0 {
		return c.htmlNodeLimit
	}
	return maxHTMLNodes
}

// New returns a Converter. Unless cfg bounds them, its poppler processes
// and image decodes are bounded by the CPU count across all the files it
// converts at once.
func New(cfg Config) *Converter {
	if cfg.PDF.Processes == nil {
		cfg.PDF.Processes = pdf.NewProcesses(runtime.NumCPU())
	}
	if cfg.ImageDecodes <= 0 {
		cfg.ImageDecodes = runtime.NumCPU()
	}
	if cfg.Image.Decodes == nil {
		cfg.Image.Decodes = semaphore.NewWeighted(int64(cfg.ImageDecodes))
	}
	return &Converter{cfg: cfg}
}

// decodePage decodes one page of an image file, within the decode places
// (image.Config.Decodes: Page holds one while it decodes). A place is held
// for one page, not the file, so a multi-page TIFF does not keep one while
// its pages are read by the provider.
func (c *Converter) decodePage(ctx context.Context, pages *image.Pages, i int) (provider.Document, error) {
	doc, err := pages.Page(ctx, i)
	if err == nil && c.pageDecoded != nil {
		c.pageDecoded(i)
	}
	return doc, err
}

// Convert recognizes in. Errors are sentences fit for an OCR row; an
// *UnsupportedError means the type is not one docjobs reads.
func (c *Converter) Convert(ctx context.Context, in Input) (Output, error) {
	k, detected := detect(in)
	ocrAlways := in.Mode == job.ExtractionOCRAlways
	switch k {
	case kindPDF:
		res, err := pdf.Convert(ctx, c.cfg.PDF, in.Data, pdf.Options{OCRAlways: ocrAlways, Format: job.FormatHTML}, in.OCR)
		if err != nil {
			return Output{}, err
		}
		if res.ProviderCalls > 0 {
			// Provider pages are HTML read off a document the caller
			// chose: they get the same cleaning as HTML sources, so no
			// script or handler reaches whoever renders the row.
			if res.Content, _, err = convertHTML(ctx, []byte(res.Content), "utf-8", c.htmlLimit()); err != nil {
				return Output{}, err
			}
		}
		return Output{Content: res.Content, Format: job.FormatHTML, Model: res.Model,
			Request: res.Request, RawData: res.RawData, ProviderCalls: res.ProviderCalls}, nil
	case kindImage:
		pages, err := image.Open(c.cfg.Image, in.Data)
		if err != nil {
			return Output{}, err
		}
		return c.recognizePages(ctx, in.OCR, pages)
	case kindOffice:
		if ocrAlways {
			data, err := office.ToPDF(ctx, c.cfg.Office, detected, in.Data)
			if err != nil {
				return Output{}, err
			}
			res, err := pdf.Convert(ctx, c.cfg.PDF, data, pdf.Options{OCRAlways: true, Format: job.FormatMarkdown}, in.OCR)
			if err != nil {
				return Output{}, err
			}
			return Output{Content: res.Content, Format: job.FormatMarkdown, Model: "libreoffice+" + res.Model,
				Request: res.Request, RawData: res.RawData, ProviderCalls: res.ProviderCalls}, nil
		}
		md, model, err := office.Markdown(ctx, c.cfg.Office, detected, in.Data)
		if err != nil {
			return Output{}, err
		}
		return Output{Content: md, Format: job.FormatMarkdown, Model: model}, nil
	}
	return c.convertText(ctx, in, k, detected)
}

// recognizePages has the provider read the pages of an image file, as
// many at once as PDF pages are (Config.PDF.PageConcurrency), and joins
// their markdown in page order; a blank page contributes nothing. Pages
// are decoded one after another as the provider takes them, so at most
// that many decoded pages wait at once, and the first failure stops the
// pages not yet decoded. Open checked every page's header already; a page
// whose data turns out damaged fails the file after the pages before it
// were read.
func (c *Converter) recognizePages(ctx context.Context, ocr provider.OCR, pages *image.Pages) (Output, error) {
	if ocr == nil {
		return Output{}, errors.New("images need an OCR provider and the job has none usable")
	}
	limit := c.cfg.PDF.PageConcurrency
	if limit <= 0 {
		limit = pdf.DefaultPageConcurrency
	}
	recs := make([]provider.Recognition, pages.Len())
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	var decodeErr error
	for i := range pages.Len() {
		if gctx.Err() != nil {
			break
		}
		p, err := c.decodePage(gctx, pages, i)
		if err != nil {
			decodeErr = err
			break
		}
		g.Go(func() error {
			// The place may have come free only because the file failed.
			if err := gctx.Err(); err != nil {
				return err
			}
			rec, err := c.recognizeImage(gctx, ocr, p)
			if err != nil {
				if p.Page > 0 {
					return onPage(p.Page, err)
				}
				return err
			}
			recs[i] = rec
			return nil
		})
	}
	// A provider failure cancels gctx, which then fails the page being
	// decoded: the provider's error is the cause to report.
	if err := g.Wait(); err != nil {
		return Output{}, err
	}
	if decodeErr != nil {
		return Output{}, decodeErr
	}
	if err := ctx.Err(); err != nil {
		return Output{}, err
	}
	out := Output{Format: job.FormatMarkdown, ProviderCalls: pages.Len()}
	var texts, requests, raws []string
	for _, rec := range recs {
		if t := strings.TrimSpace(rec.Text); t != "" {
			texts = append(texts, t)
		}
		requests, raws = append(requests, rec.Request), append(raws, rec.RawData)
		out.Model = rec.Model
	}
	out.Content = strings.Join(texts, "\n\n")
	out.Request, out.RawData = strings.Join(requests, "\n"), strings.Join(raws, "\n")
	return out, nil
}

// recognizeImage sends one page in a type the provider reads. Prepare
// passes WebP and GIF through, which not every vendor reads: such a page
// is re-encoded first when the provider says it does not read it, or
// after it refused the page when it could not say.
func (c *Converter) recognizeImage(ctx context.Context, ocr provider.OCR, page provider.Document) (provider.Recognition, error) {
	reencoded := false
	if ok, known := provider.Accepts(ctx, ocr, page.MIME); known && !ok {
		var err error
		if page, err = image.Reencode(ctx, c.cfg.Image, page); err != nil {
			return provider.Recognition{}, err
		}
		reencoded = true
	}
	rec, err := ocr.Recognize(ctx, page)
	if errors.Is(err, provider.ErrUnsupportedInput) && !reencoded && page.MIME != image.MIMEPNG && page.MIME != image.MIMEJPEG {
		if page, err = image.Reencode(ctx, c.cfg.Image, page); err != nil {
			return provider.Recognition{}, err
		}
		return ocr.Recognize(ctx, page)
	}
	return rec, err
}

// onPage says which page of a file err happened on, after the error
// itself: a provider's failure must read "provider error (category=…,
// status=…)" from the row's first character (the spec's form), as the PDF
// path does.
func onPage(page int, err error) error {
	return fmt.Errorf("%w on page %d", err, page)
}

// convertText reads text, HTML and XML, which need no provider. Only .txt
// files are plain (the spec's table); other text is markdown: markdown and
// other text as it is, JSON in a fenced block, CSV and TSV as a table.
func (c *Converter) convertText(ctx context.Context, in Input, k kind, detected string) (Output, error) {
	if err := ctx.Err(); err != nil {
		return Output{}, err
	}
	switch k {
	case kindText, kindMarkdown, kindJSON, kindCSV, kindTSV:
		if len(in.Data) > maxTextBytes {
			return Output{}, tooLarge("text", maxTextBytes)
		}
		text, cs := decodeText(in.Data, charsetParam(in.ContentType))
		text = cleanText(text)
		out := Output{Content: text, Format: job.FormatMarkdown, Model: ModelText, Charset: cs}
		switch k {
		case kindText:
			out.Format = job.FormatPlain
		case kindJSON:
			out.Content = fenced(text, "json")
		case kindCSV, kindTSV:
			comma := '\t'
			if k == kindCSV {
				comma = office.SniffDelimiter(text)
			}
			table, err := office.CSVMarkdown(ctx, c.cfg.Office, text, comma)
			if err != nil {
				return Output{}, err
			}
			out.Content, out.Model = table, office.ModelCSV
		}
		return out, nil
	case kindHTML:
		if len(in.Data) > maxHTMLBytes {
			return Output{}, tooLarge("HTML", maxHTMLBytes)
		}
		content, cs, err := convertHTML(ctx, in.Data, charsetParam(in.ContentType), c.htmlLimit())
		if err != nil {
			return Output{}, err
		}
		return Output{Content: content, Format: job.FormatHTML, Model: ModelHTML, Charset: cs}, nil
	case kindSVG:
		if len(in.Data) > maxXMLBytes {
			return Output{}, tooLarge("SVG", maxXMLBytes)
		}
		content, cs, err := convertSVG(ctx, in.Data, charsetParam(in.ContentType), c.htmlLimit())
		if err != nil {
			return Output{}, err
		}
		return Output{Content: content, Format: job.FormatMarkdown, Model: ModelSVG, Charset: cs}, nil
	case kindXML:
		if len(in.Data) > maxXMLBytes {
			return Output{}, tooLarge("XML", maxXMLBytes)
		}
		content, cs, err := convertXML(ctx, in.Data, charsetParam(in.ContentType))
		if err != nil {
			return Output{}, err
		}
		return Output{Content: content, Format: job.FormatXML, Model: ModelXML, Charset: cs}, nil
	}
	return Output{}, &UnsupportedError{Type: detected}
}

// fenced puts text in a fenced code block of the given language, so that
// markdown readers take it as code and the chunker's markdown splitter
// cuts a long one at line ends first, where prose would be cut at
// sentences inside a line. The fence is
// longer than any run of backticks in the text, so nothing in it closes
// the block early. Blank text stays as it is.
func fenced(text, lang string) string {
	if strings.TrimSpace(text) == "" {
		return text
	}
	run, longest := 0, 0
	for i := 0; i < len(text); i++ {
		if text[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return fence + lang + "\n" + text + fence
}

// DetectType returns the media type (without parameters) sniffed from data,
// the same detection Convert starts from.
func DetectType(data []byte) string {
	return baseType(mimetype.Detect(data).String())
}

func tooLarge(what string, limit int) error {
	return fmt.Errorf("the %s document is larger than the %d MiB conversion limit", what, limit>>20)
}

// detect decides how to read in, and returns the detected type for
// messages. Sniffing separates text from binary reliably but guesses
// between text kinds (an XML file without a declaration sniffs as plain
// text), so among text kinds the name decides, then the declared type,
// then the sniffed one.
func detect(in Input) (kind, string) {
	m := mimetype.Detect(in.Data)
	detected := baseType(m.String())
	sniffed := sniffKind(m)
	hint := extKind(in.Name)
	if hint == kindNone {
		hint = mediaKind(baseType(in.ContentType))
		// The spec makes .txt plain and other text markdown. A name
		// without an extension declared text/plain (a download called
		// "notes" served as text/plain) is the one other case read as
		// plain; a .log or .yaml declared text/plain is not .txt.
		if hint == kindText && fileExt(in.Name) != "" {
			hint = kindMarkdown
		}
	}
	switch sniffed {
	case kindBinary, kindPDF, kindImage, kindOffice:
		return sniffed, detected
	case kindUnknown:
		// Text in an encoding sniffing does not see as text (EBCDIC, UTF-16
		// without a byte-order mark) is read as the name or type says, if
		// it then reads as text.
		if hint != kindNone && readsAsText(in.Data, charsetParam(in.ContentType)) {
			return hint, detected
		}
		return kindUnknown, detected
	}
	if hint != kindNone {
		return hint, detected
	}
	return sniffed, detected
}

// sniffKind maps mimetype's result onto a kind, walking up its type tree
// (application/json < text/plain, application/rss+xml < text/xml, …).
func sniffKind(m *mimetype.MIME) kind {
	if m.Is("application/octet-stream") {
		return kindUnknown
	}
	if m.Is("text/html") || m.Is("application/xhtml+xml") {
		return kindHTML
	}
	if m.Is("image/svg+xml") {
		return kindSVG
	}
	if m.Is("application/pdf") {
		return kindPDF
	}
	for _, t := range []string{"image/png", "image/jpeg", "image/tiff", "image/webp", "image/gif", "image/bmp"} {
		if m.Is(t) {
			return kindImage
		}
	}
	// A plain zip may be an OOXML file whose first entries are not the
	// ones sniffing looks at (or a truncated one): office reads it by what
	// it contains and names what it is not.
	for _, t := range append(office.Kinds(), office.ZIP) {
		if m.Is(t) {
			return kindOffice
		}
	}
	// Text without a name or type to go by is markdown, as the spec has
	// everything but .txt. Only JSON is told apart by its bytes (sniffing
	// parses it); a CSV guess is not trusted, since prose with a comma per
	// line sniffs as CSV: a table needs the name or the declared type.
	for p := m; p != nil; p = p.Parent() {
		switch {
		case p.Is("text/xml"):
			return kindXML
		case p.Is("application/json"):
			return kindJSON
		case p.Is("text/plain"):
			return kindMarkdown
		}
	}
	return kindBinary
}

// fileExt is name's extension, lower-cased, with its dot; "" for none.
func fileExt(name string) string {
	return strings.ToLower(path.Ext(path.Base(strings.ReplaceAll(name, `\`, "/"))))
}

func extKind(name string) kind {
	switch fileExt(name) {
	case ".txt":
		return kindText
	case ".md", ".markdown":
		return kindMarkdown
	case ".json":
		return kindJSON
	case ".csv":
		return kindCSV
	case ".tsv", ".tab":
		return kindTSV
	case ".html", ".htm", ".xhtml", ".shtml":
		return kindHTML
	case ".xml":
		return kindXML
	case ".svg":
		return kindSVG
	}
	return kindNone
}

func mediaKind(mt string) kind {
	switch {
	case mt == "text/plain":
		return kindText
	case mt == "text/markdown" || mt == "text/x-markdown":
		return kindMarkdown
	case mt == "text/csv" || mt == "application/csv":
		return kindCSV
	case mt == "text/tab-separated-values":
		return kindTSV
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return kindJSON
	case mt == "text/html" || mt == "application/xhtml+xml":
		return kindHTML
	case mt == "image/svg+xml":
		return kindSVG
	case mt == "text/xml" || mt == "application/xml" || strings.HasSuffix(mt, "+xml"):
		return kindXML
	}
	return kindNone
}

func baseType(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		mt, _, _ = strings.Cut(ct, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
	}
	return mt
}

func charsetParam(ct string) string {
	if _, params, err := mime.ParseMediaType(ct); err == nil {
		return params["charset"]
	}
	return ""
}
