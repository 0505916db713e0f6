package office

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"path"
	"strings"
)

// ratioFloor is the inflated size under which an entry's compression
// ratio is not checked: small XML parts of repeated markup legitimately
// compress several hundred times, and a small entry cannot hurt.
const ratioFloor = 1 << 20

// archive is an OOXML package opened behind the bomb limits. Nothing is
// inflated when it is opened; parts are inflated as they are read, and the
// limits are enforced on the bytes actually produced, not only on what the
// headers declare.
type archive struct {
	doc   string // "DOCX", … for messages
	zr    *zip.Reader
	parts map[string]*zip.File // by lower-cased part name, no leading "/"

	maxInflated int64
	maxRatio    int64
	inflated    int64 // bytes inflated so far, all parts together
	limitErr    error // the first limit a read ran into
}

// centralHeader starts every central-directory record.
var centralHeader = []byte("PK\x01\x02")

// openArchive checks data against cfg's limits and opens it. Every check
// that the directory alone allows happens here, before any inflation.
func openArchive(data []byte, doc string, cfg Config) (*archive, error) {
	if len(data) == 0 {
		return nil, invalidError(doc, nil, "the file is empty")
	}
	// archive/zip reads every central-directory record before returning,
	// however many the end record claims (it compares the count only
	// modulo 65536), so count the records first: each starts with this
	// signature, and any count above the limit is refused without
	// allocating a header for each.
	if n := bytes.Count(data, centralHeader); n > cfg.MaxEntries {
		return nil, bombError(doc, "it has more than %d entries", cfg.MaxEntries)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, invalidError(doc, err, "it is not a readable zip archive")
	}
	if len(zr.File) > cfg.MaxEntries {
		return nil, bombError(doc, "it has %d entries, more than the limit of %d", len(zr.File), cfg.MaxEntries)
	}
	a := &archive{
		doc: doc, zr: zr, parts: make(map[string]*zip.File, len(zr.File)),
		maxInflated: cfg.MaxInflatedBytes, maxRatio: int64(cfg.MaxRatio),
	}
	var declared uint64
	for _, f := range zr.File {
		// The declared sizes are upper bounds on what archive/zip will
		// inflate (it fails a read that overruns them), so checking them
		// refuses honest bombs before any work; reads are counted as well.
		declared += f.UncompressedSize64
		if f.UncompressedSize64 > uint64(cfg.MaxInflatedBytes) || declared > uint64(cfg.MaxInflatedBytes) {
			return nil, bombError(doc, "it would inflate to more than %s", sizeString(cfg.MaxInflatedBytes))
		}
		if f.UncompressedSize64 > ratioFloor && f.UncompressedSize64 > uint64(a.maxRatio)*f.CompressedSize64 {
			return nil, bombError(doc, "entry %q expands %d times, more than the limit of %d",
				f.Name, ratio(f.UncompressedSize64, f.CompressedSize64), a.maxRatio)
		}
		name := normPart(f.Name)
		if _, dup := a.parts[name]; !dup {
			a.parts[name] = f
		}
	}
	return a, nil
}

func ratio(inflated, compressed uint64) uint64 {
	if compressed == 0 {
		return inflated
	}
	return inflated / compressed
}

func sizeString(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// normPart is a part name as the parts map keys it: OPC part names are
// case-insensitive and rooted.
func normPart(name string) string {
	name = strings.ReplaceAll(name, `\`, "/")
	return strings.ToLower(strings.TrimPrefix(name, "/"))
}

// has reports whether the package holds the part.
func (a *archive) has(name string) bool {
	_, ok := a.parts[normPart(name)]
	return ok
}

// open returns a reader of one part that counts what it inflates against
// the limits. A missing part is fs.ErrNotExist.
func (a *archive) open(name string) (io.ReadCloser, error) {
	f, ok := a.parts[normPart(name)]
	if !ok {
		return nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	}
	if a.limitErr != nil {
		return nil, a.limitErr
	}
	rc, err := f.Open()
	if err != nil {
		return nil, invalidError(a.doc, err, "part %s cannot be read", f.Name)
	}
	max := a.maxRatio * int64(f.CompressedSize64)
	if max < ratioFloor {
		max = ratioFloor
	}
	return &countingReader{a: a, rc: rc, name: f.Name, entryMax: max, declared: int64(f.UncompressedSize64)}, nil
}

// countingReader enforces the total and per-entry limits on inflated bytes.
type countingReader struct {
	a        *archive
	rc       io.ReadCloser
	name     string
	n        int64
	entryMax int64
	declared int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	if r.a.limitErr != nil {
		return 0, r.a.limitErr
	}
	n, err := r.rc.Read(p)
	r.n += int64(n)
	r.a.inflated += int64(n)
	switch {
	case r.a.inflated > r.a.maxInflated:
		r.a.limitErr = bombError(r.a.doc, "it inflates to more than %s", sizeString(r.a.maxInflated))
	case r.n > r.entryMax:
		r.a.limitErr = bombError(r.a.doc, "entry %q expands more than %d times", r.name, r.a.maxRatio)
	case errors.Is(err, zip.ErrFormat):
		// archive/zip stops an entry at the size its header declares,
		// and fails a read with ErrFormat for nothing else.
		r.a.limitErr = bombError(r.a.doc, "entry %q inflates past the %d bytes its header declares", r.name, r.declared)
	}
	if r.a.limitErr != nil {
		return 0, r.a.limitErr
	}
	return n, err
}

func (r *countingReader) Close() error { return r.rc.Close() }

// readErr is the error to report for a failed read of part: the limit it
// ran into if any, else the parse or read failure itself.
func (a *archive) readErr(part string, err error) error {
	if a.limitErr != nil {
		return a.limitErr
	}
	var de *docError
	if errors.As(err, &de) {
		return err
	}
	return invalidError(a.doc, err, "part %s cannot be read", part)
}

// rel is one package relationship.
type rel struct {
	ID, Type, Target string
	External         bool
}

// relType reports whether t is the relationship type named by suffix
// (".../officeDocument"), in the transitional or the strict namespace.
func relType(t, suffix string) bool {
	return strings.HasSuffix(t, "/"+suffix)
}

// rels reads the relationships of part ("" for the package's own), with
// targets resolved to part names. A part without relationships has none.
func (a *archive) rels(part string) (map[string]rel, []rel, error) {
	dir, base := path.Split(strings.TrimPrefix(part, "/"))
	relsName := dir + "_rels/" + base + ".rels"
	rc, err := a.open(relsName)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]rel{}, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer rc.Close()
	byID := map[string]rel{}
	var list []rel
	dec := newXMLDecoder(rc)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, a.readErr(relsName, err)
		}
		se, ok := tok.(xmlStart)
		if !ok || se.Name.Local != "Relationship" {
			continue
		}
		r := rel{ID: attr(se, "Id"), Type: attr(se, "Type"), Target: attr(se, "Target")}
		r.External = strings.EqualFold(attr(se, "TargetMode"), "External")
		if !r.External {
			r.Target = resolvePart(dir, r.Target)
		}
		if _, dup := byID[r.ID]; !dup {
			byID[r.ID] = r
			list = append(list, r)
		}
	}
	return byID, list, nil
}

// resolvePart resolves a relationship target against the source part's
// directory into a part name.
func resolvePart(dir, target string) string {
	if u, err := url.PathUnescape(target); err == nil {
		target = u
	}
	target, _, _ = strings.Cut(target, "#")
	if strings.HasPrefix(target, "/") {
		return path.Clean(target)[1:]
	}
	p := path.Join("/"+dir, target)
	return strings.TrimPrefix(p, "/")
}

// mainPart finds the package's main document part, the target of its
// officeDocument relationship.
func (a *archive) mainPart() (string, error) {
	_, list, err := a.rels("")
	if err != nil {
		return "", err
	}
	for _, r := range list {
		if relType(r.Type, "officeDocument") && !r.External && a.has(r.Target) {
			return r.Target, nil
		}
	}
	return "", invalidError(a.doc, nil, "it has no main document part")
}

// zipKind decides which OOXML kind an unrecognized zip archive is, from
// its main document part.
func zipKind(cfg Config, data []byte) (string, error) {
	a, err := openArchive(data, "office document", cfg)
	if err != nil {
		return "", err
	}
	main, err := a.mainPart()
	if err != nil {
		return "", unsupportedError("unsupported file type %s (a zip archive that is not an office document)", ZIP)
	}
	switch {
	case strings.HasPrefix(main, "word/"):
		return DOCX, nil
	case strings.HasPrefix(main, "ppt/"):
		return PPTX, nil
	case strings.HasPrefix(main, "xl/"):
		return XLSX, nil
	}
	return "", unsupportedError("unsupported file type %s (a zip archive that is not an office document)", ZIP)
}
