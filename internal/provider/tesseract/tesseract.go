// Package tesseract is the local OCR engine: it runs the tesseract command
// on one page image at a time and turns its TSV output into markdown that
// keeps the engine's paragraphs and lines. It is slot 8's offline path
// (ocr.model "tesseract" or "tesseract:<langs>") and needs no network.
//
// Each run is single-threaded (OMP_THREAD_LIMIT=1): on these machines
// Tesseract's OpenMP threads make a page take ten times longer, so
// parallelism comes from running pages side by side, which is the
// caller's business (the slot's semaphore).
package tesseract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	pageimage "github.com/docjobs/docjobs/internal/convert/image"
	"github.com/docjobs/docjobs/internal/provider"
)

// Defaults for Config's zero fields.
const (
	DefaultLangs   = "eng"
	DefaultBinary  = "tesseract"
	DefaultTimeout = 2 * time.Minute
)

// Config selects the engine and its languages.
type Config struct {
	// Langs are traineddata names joined by '+' ("eng", "deu+eng");
	// default "eng". Each must be installed.
	Langs string
	// Binary is the tesseract executable, a name looked up in PATH or a
	// path; default "tesseract".
	Binary string
	// Timeout bounds one page; default 2 minutes.
	Timeout time.Duration
	// ImageDecodes bounds the pages decoded at once across the process:
	// a page read turned is decoded here to be turned upright
	// (upright.go), and holds one of its places from before the decode
	// until the upright copy is encoded. Give the converter's
	// (pageimage.Config.Decodes), as slots does, so that one bound holds
	// for every page decoded in the process; nil: no bound (tests).
	ImageDecodes pageimage.Decodes
}

// Sentinel errors, wrapped with details.
var (
	// ErrNotInstalled: the binary is missing or does not run.
	ErrNotInstalled = errors.New("tesseract is not installed")
	// ErrLanguage: Langs is malformed or names a language that is not
	// installed.
	ErrLanguage = errors.New("tesseract language not available")
	// ErrTimeout: a page took longer than Config.Timeout. It is not a
	// provider.Error on purpose: a page the engine cannot finish in time
	// will not finish on a retry either.
	ErrTimeout = errors.New("tesseract did not finish the page in time")
	// ErrUnreadableImage: the engine could not read the image bytes.
	ErrUnreadableImage = errors.New("tesseract cannot read the image")
)

// Output bounds. A dense A4 page at 300 dpi gives some 100 KB of TSV; the
// cap on what is read only stops a runaway process. The TSV kept for the
// row's rawData is capped lower: it is for debugging, the text is in Text.
const (
	maxOutput    = 32 << 20
	maxStderr    = 16 << 10
	maxRawData   = 64 << 10
	maxLangsLen  = 200
	listLangsMax = 10 * time.Second
	// fewWords and minSparseConf decide the sparse reading (see
	// sparseArgs): a page read with fewer than fewWords words is read
	// again, and the new reading is kept when it has more words and their
	// mean confidence is at least minSparseConf. Measured on 200-dpi
	// renderings: text on a grey form button reads 89 and a page of two
	// rotated headlines 93, while a photograph reads 40 and a grey page of
	// specks 20 (docs/quality.md, "OCR_ALWAYS on text PDFs").
	fewWords      = 3
	minSparseConf = 60
	// minDPI and maxDPI are the resolutions tesseract believes
	// (kMinCredibleResolution, kMaxCredibleResolution); it guesses
	// from the text outside them, as it does with none.
	minDPI = 70
	maxDPI = 2400
)

// langsPattern is traineddata names ([a-z_]+, e.g. "chi_sim") joined by
// '+'. It keeps paths and options out of the command line.
var langsPattern = regexp.MustCompile(`^[a-z_]+(\+[a-z_]+)*$`)

// OCR runs the local tesseract. It is safe for concurrent use; each call
// starts its own process.
type OCR struct {
	binary  string // resolved path
	langs   string
	psm     string
	model   string
	timeout time.Duration
	// image bounds the decode of a page turned upright: the process's
	// decode places and the image package's limits.
	image pageimage.Config
}

var _ provider.OCR = (*OCR)(nil)

// New checks that the engine runs and that every language is installed
// (one `tesseract --list-langs`), and returns an OCR for them.
func New(cfg Config) (*OCR, error) {
	model := "tesseract"
	if cfg.Langs != "" {
		model += ":" + cfg.Langs
	} else {
		cfg.Langs = DefaultLangs
	}
	if cfg.Binary == "" {
		cfg.Binary = DefaultBinary
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if len(cfg.Langs) > maxLangsLen || !langsPattern.MatchString(cfg.Langs) {
		return nil, fmt.Errorf("%w: %q is not a list of language names joined by '+' (such as \"deu+eng\")", ErrLanguage, cfg.Langs)
	}
	bin, err := exec.LookPath(cfg.Binary)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotInstalled, err)
	}
	installed, err := listLangs(bin)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, l := range strings.Split(cfg.Langs, "+") {
		if !slices.Contains(installed, l) {
			missing = append(missing, l)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: %s not installed (installed: %s)", ErrLanguage,
			strings.Join(missing, ", "), strings.Join(installed, ", "))
	}
	// Page segmentation: with the orientation model installed (Debian's
	// tesseract-ocr depends on it), mode 1 detects pages scanned sideways or
	// upside down and reads them turned; it costs a fraction of a second
	// and reads upright pages exactly as mode 3, the fully automatic
	// layout analysis without orientation detection, does.
	psm := "3"
	if slices.Contains(installed, "osd") {
		psm = "1"
	}
	return &OCR{binary: bin, langs: cfg.Langs, psm: psm, model: model, timeout: cfg.Timeout,
		image: pageimage.Config{Decodes: cfg.ImageDecodes}}, nil
}

// listLangs runs `tesseract --list-langs`: a header line, then one
// installed language per line.
func listLangs(bin string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), listLangsMax)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--list-langs")
	cmd.Env = childEnv()
	var out, stderr limitedBuffer
	out.max, stderr.max, stderr.discard = 1<<20, maxStderr, true
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%w: %s --list-langs: %v %s", ErrNotInstalled, bin, err, firstLine(stderr.String()))
	}
	var langs []string
	for _, line := range strings.Split(out.String(), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "List of available languages") {
			continue
		}
		langs = append(langs, line)
	}
	return langs, nil
}

// Model is the name rows report: "tesseract", or "tesseract:<langs>" when
// languages were chosen.
func (o *OCR) Model() string { return o.model }

// Accepts reports whether Recognize reads mime; it runs nothing.
func (o *OCR) Accepts(_ context.Context, mime string) (ok, known bool) {
	return readableMIME(mime), true
}

// Recognize reads one page image. PDFs are refused with
// provider.ErrUnsupportedInput: their pages arrive rendered as images.
func (o *OCR) Recognize(ctx context.Context, doc provider.Document) (provider.Recognition, error) {
	if !readableMIME(doc.MIME) {
		return provider.Recognition{}, fmt.Errorf("tesseract reads page images, not %s: %w", doc.MIME, provider.ErrUnsupportedInput)
	}
	// Tesseract reads stdin that is not an image as a list of file names
	// to open: only bytes that start like an image may reach it.
	if !looksLikeImage(doc.Data) {
		return provider.Recognition{}, fmt.Errorf("%w: the %s document is not image data", ErrUnreadableImage, doc.MIME)
	}
	// thresholding_method=1 is leptonica's adaptive Otsu: the page is
	// binarized tile by tile instead of at one threshold for all of it,
	// so light grey or coloured print beside black text (orange item
	// names on an invoice) stays text. Measured in docs/quality.md ("Light
	// and coloured print"): the same on the test scans, better on rendered
	// PDF pages, 0-15% slower; pictures can turn into specks beside text.
	args := []string{"stdin", "stdout", "-l", o.langs, "--psm", o.psm, "-c", "thresholding_method=1", "tsv"}
	// A resolution the sender knows (a page re-encoded without its file's
	// header) is passed on: tesseract sizes its analysis and the
	// binarization's tiles by it, and, given none, guesses it from the
	// text and reads the same pixels otherwise by its guess
	// (docs/decisions.md, "Tesseract: a re-encoded page keeps its file's
	// resolution; a rendered PDF page is not given its 200 dpi").
	dpiGiven := credibleDPI(doc.DPI)
	if dpiGiven {
		args = withDPI(args, doc.DPI)
	}
	rec := provider.Recognition{
		Model:  o.model,
		Format: "markdown",
		Request: fmt.Sprintf("OMP_THREAD_LIMIT=1 tesseract %s < %s (%d bytes)",
			strings.Join(args, " "), doc.MIME, len(doc.Data)),
	}

	// One page, one time limit, a second reading included.
	runCtx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	tsv, err := o.run(ctx, runCtx, args, doc.Data)
	if err != nil {
		return provider.Recognition{}, err
	}
	// A page read turned is read again from an upright copy of the image
	// (see upright.go): tiled binarization reads a turned page otherwise,
	// and often worse, than the same page upright. Only turned pages pay
	// for it, with a second run; a page that cannot be turned here, or
	// whose second run fails, keeps its first reading, turned boxes and
	// all (uprightBoxes). Waiting for a decode place counts against the
	// page's time limit, as the runs do.
	read, readArgs := doc.Data, args // the image and arguments of the reading kept
	if t := singlePageTurn(tsv); t.quarterOrHalf() {
		rec.Request += fmt.Sprintf("; read %s, so read again from the image turned upright", t)
		up, err := uprightImage(runCtx, o.image, doc.Data, t)
		if err == nil {
			againArgs := args
			if dpi := resolution(doc.Data, t); !dpiGiven && credibleDPI(dpi) {
				againArgs = withDPI(args, dpi)
			}
			var again string
			again, err = o.run(ctx, runCtx, againArgs, up)
			if err == nil {
				tsv, read, readArgs = again, up, againArgs
				rec.Request += fmt.Sprintf(": tesseract %s < image/png (%d bytes)", strings.Join(againArgs, " "), len(up))
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return provider.Recognition{}, fmt.Errorf("tesseract: %w", ctx.Err())
			}
			rec.Request += fmt.Sprintf(": not done (%v), the first reading is kept", err)
		}
	}
	// A page with no text found, or almost none, is read once more as
	// sparse text at one threshold (sparseArgs). Only such pages pay for
	// it, and a blank one reads nothing either way.
	if words := parseTSV(tsv); len(words) < fewWords {
		sparse := sparseArgs(readArgs)
		again, err := o.run(ctx, runCtx, sparse, read)
		switch {
		case err != nil && ctx.Err() != nil:
			return provider.Recognition{}, fmt.Errorf("tesseract: %w", ctx.Err())
		case err != nil:
			rec.Request += fmt.Sprintf("; %s found, so read again as sparse text: not done (%v), the first reading is kept", countWords(len(words)), err)
		default:
			more := parseTSV(again)
			verdict := "not kept"
			if len(more) > len(words) && meanConf(more) >= minSparseConf {
				tsv, verdict = again, "kept"
			}
			rec.Request += fmt.Sprintf("; %s found, so read again as sparse text: tesseract %s: %s, mean confidence %.0f, %s",
				countWords(len(words)), strings.Join(sparse, " "), countWords(len(more)), meanConf(more), verdict)
		}
	}
	rec.Text = tsvToMarkdown(tsv)
	rec.RawData = capString(tsv, maxRawData)
	return rec, nil
}

// sparseArgs are args for a second reading of a page on which the layout
// analysis found no text, or almost none: --psm 11 finds text in any
// order without looking for blocks, and one Otsu threshold for the page
// (thresholding_method=0) keeps what tiles cut apart. Text on a grey form
// button is missed by --psm 1 either way and read by --psm 11 at one
// threshold, at confidence 96 against 38 with tiles; a page of a few
// rotated headlines loses one to --psm 1.
func sparseArgs(args []string) []string {
	out := slices.Clone(args)
	for i := 0; i+1 < len(out); i++ {
		switch {
		case out[i] == "--psm":
			out[i+1] = "11"
		case out[i] == "-c" && strings.HasPrefix(out[i+1], "thresholding_method="):
			out[i+1] = "thresholding_method=0"
		}
	}
	return out
}

func countWords(n int) string {
	if n == 1 {
		return "1 word"
	}
	return strconv.Itoa(n) + " words"
}

// meanConf is the words' mean confidence, 0 for none.
func meanConf(words []tsvWord) float64 {
	if len(words) == 0 {
		return 0
	}
	sum := 0.0
	for _, w := range words {
		sum += w.conf
	}
	return sum / float64(len(words))
}

// run runs tesseract once on image, under runCtx (the page's time limit,
// derived from the caller's ctx), and returns its TSV.
func (o *OCR) run(ctx, runCtx context.Context, args []string, image []byte) (string, error) {
	cmd := exec.CommandContext(runCtx, o.binary, args...)
	cmd.Env = childEnv()
	cmd.Stdin = bytes.NewReader(image)
	var stdout, stderr limitedBuffer
	stdout.max, stderr.max, stderr.discard = maxOutput, maxStderr, true
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 2 * time.Second // do not wait on pipes after a kill
	err := cmd.Run()
	switch {
	case ctx.Err() != nil:
		return "", fmt.Errorf("tesseract: %w", ctx.Err())
	case runCtx.Err() != nil:
		return "", fmt.Errorf("%w: the limit is %s per page", ErrTimeout, o.timeout)
	case stdout.overflow:
		return "", fmt.Errorf("tesseract wrote more than %d MiB for one page", maxOutput>>20)
	}
	// Leptonica reports images it cannot decode on stderr, and for some
	// (a truncated TIFF) tesseract still exits 0 with an empty page.
	if unreadable(stderr.String()) {
		return "", fmt.Errorf("%w: %s", ErrUnreadableImage, firstLine(stderr.String()))
	}
	if err != nil {
		return "", fmt.Errorf("tesseract failed: %v: %s", err, firstLine(stderr.String()))
	}
	return stdout.String(), nil
}

// credibleDPI reports whether tesseract believes a resolution of dpi.
func credibleDPI(dpi int) bool { return dpi >= minDPI && dpi <= maxDPI }

// withDPI is a copy of args that tells tesseract the image's resolution.
func withDPI(args []string, dpi int) []string {
	return slices.Insert(slices.Clone(args), 2, "--dpi", strconv.Itoa(dpi))
}

// singlePageTurn is how the page of tsv lies (pageTurn); a TSV of no
// words or of several pages (a multi-page TIFF) counts as upright, since
// there is no one image to turn.
func singlePageTurn(tsv string) turn {
	words := parseTSV(tsv)
	if len(words) == 0 || words[0].page != words[len(words)-1].page {
		return upright
	}
	return pageTurn(words)
}

// readableMIME lists what leptonica in Tesseract 5 reads from memory.
func readableMIME(mime string) bool {
	switch mime {
	case "image/png", "image/jpeg", "image/tiff", "image/bmp", "image/webp", "image/gif",
		"image/x-portable-graymap", "image/x-portable-pixmap", "image/x-portable-bitmap",
		"image/x-portable-anymap", "image/jp2":
		return true
	}
	return false
}

// looksLikeImage checks the magic bytes of the formats readableMIME lists.
func looksLikeImage(b []byte) bool {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")),
		bytes.HasPrefix(b, []byte{0xFF, 0xD8, 0xFF}),
		bytes.HasPrefix(b, []byte("II*\x00")), bytes.HasPrefix(b, []byte("MM\x00*")),
		bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")),
		bytes.HasPrefix(b, []byte("BM")),
		len(b) >= 12 && string(b[0:4]) == "RIFF" && string(b[8:12]) == "WEBP",
		bytes.HasPrefix(b, []byte("\x00\x00\x00\x0cjP  \r\n\x87\n")), // JPEG 2000 (JP2)
		bytes.HasPrefix(b, []byte{0xFF, 0x4F, 0xFF, 0x51}):           // JPEG 2000 codestream
		return true
	case len(b) >= 3 && b[0] == 'P' && b[1] >= '1' && b[1] <= '6' && (b[2] == '\n' || b[2] == ' ' || b[2] == '\r' || b[2] == '\t'):
		return true // PNM
	}
	return false
}

func unreadable(stderr string) bool {
	return strings.Contains(stderr, "Error in pixRead") ||
		strings.Contains(stderr, "cannot be read") ||
		strings.Contains(stderr, "tiff stream not opened")
}

// childEnv is the process environment: the service's own may hold
// secrets, and tesseract needs none of it beyond where its data lives.
func childEnv() []string {
	env := []string{"OMP_THREAD_LIMIT=1"}
	for _, k := range []string{"PATH", "TESSDATA_PREFIX", "LD_LIBRARY_PATH"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

func firstLine(s string) string {
	for _, line := range strings.Split(s, "\n") {
		// Tesseract's notes about resolution and the like are not errors.
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "Estimating resolution") &&
			!strings.HasPrefix(line, "Warning") && !strings.HasPrefix(line, "Detected") {
			if len(line) > 200 {
				line = line[:200] + "…"
			}
			return line
		}
	}
	return ""
}

func capString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[truncated: %d of %d bytes shown]", cut, len(s))
}

// limitedBuffer keeps up to max bytes. Past that it refuses more, which
// makes a runaway child fail on a broken pipe instead of filling memory,
// or, with discard set, drops the rest (for stderr, which is only read
// for a message).
type limitedBuffer struct {
	bytes.Buffer
	max      int
	discard  bool
	overflow bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		b.overflow = true
		if b.discard {
			b.Buffer.Write(p[:max(0, b.max-b.Len())])
			return len(p), nil
		}
		return 0, errors.New("output limit reached")
	}
	return b.Buffer.Write(p)
}
