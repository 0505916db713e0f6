package cli

// rowStatuses counts the row statuses of a job's result,
// {"result":{"ocr":[{"status":…},…],"llm":[…]}}, as the result streams
// through it on its way to stdout. By design (DESIGN §4) a job is COMPLETE
// even when some of its files or every model row FAILED, and the progress
// stream counts a FAILED row as finished: the result is the one place that
// says which rows failed, and the contract's own (spec/interface.md).
//
// It is a small JSON scanner, not a decoder, because a result can be tens
// of megabytes and its recognized text one string of them: it keeps the
// nesting and the short strings it compares, never a whole value. Input
// that is not JSON leaves the counts short, never an error: the result is
// printed as it came either way.
type rowStatuses struct {
	OCR, OCRFailed int // recognition rows, and those FAILED
	LLM, LLMFailed int // model rows, and those FAILED

	stack []scanFrame
	// deeper counts the levels opened past maxScanDepth, which are kept
	// as a number only: a row's status is four levels deep, and an answer
	// of a million brackets must not hold a million frames.
	deeper int
	// inString: inside a string; escaped: after its backslash.
	inString, escaped bool
	isKey             bool
	str               []byte // the string so far, up to maxScanString
	long              bool   // the string is longer: not one compared
}

// scanFrame is an open object or array.
type scanFrame struct {
	array     bool
	expectKey bool   // an object before its next key
	key       string // an object's current key
}

// maxScanString is the longest string compared: keys and statuses.
const maxScanString = 64

// maxScanDepth is the deepest nesting whose frames are kept.
const maxScanDepth = 32

func (r *rowStatuses) Write(p []byte) (int, error) {
	for _, b := range p {
		if r.inString {
			r.stringByte(b)
			continue
		}
		switch b {
		case '{', '[':
			if len(r.stack) >= maxScanDepth {
				r.deeper++
				continue
			}
			r.stack = append(r.stack, scanFrame{array: b == '[', expectKey: b == '{'})
		case '}', ']':
			switch {
			case r.deeper > 0:
				r.deeper--
			case len(r.stack) > 0:
				r.stack = r.stack[:len(r.stack)-1]
			}
		case ',':
			if top := r.top(); top != nil && !top.array && r.deeper == 0 {
				top.expectKey, top.key = true, ""
			}
		case ':':
			if top := r.top(); top != nil && r.deeper == 0 {
				top.expectKey = false
			}
		case '"':
			if r.deeper > 0 {
				r.inString, r.isKey = true, false
				r.str, r.long = r.str[:0], true // nothing this deep is compared
				continue
			}
			top := r.top()
			r.inString, r.isKey = true, top != nil && !top.array && top.expectKey
			r.str, r.long = r.str[:0], false
		}
	}
	return len(p), nil
}

func (r *rowStatuses) stringByte(b byte) {
	switch {
	case r.escaped:
		r.escaped = false
	case b == '\\':
		r.escaped = true
	case b == '"':
		r.inString = false
		r.endString()
		return
	}
	if len(r.str) < maxScanString {
		r.str = append(r.str, b)
	} else {
		r.long = true
	}
}

func (r *rowStatuses) endString() {
	if r.long {
		return
	}
	if r.isKey {
		r.top().key = string(r.str)
		return
	}
	// A row's status: result → ocr|llm → [ → { status.
	s := r.stack
	if len(s) != 4 || s[0].key != "result" || !s[2].array || s[3].key != "status" {
		return
	}
	failed := 0
	if string(r.str) == "JOB_OCR_STATUS_FAILED" || string(r.str) == "JOB_LLM_STATUS_FAILED" {
		failed = 1
	}
	switch s[1].key {
	case "ocr":
		r.OCR++
		r.OCRFailed += failed
	case "llm":
		r.LLM++
		r.LLMFailed += failed
	}
}

func (r *rowStatuses) top() *scanFrame {
	if len(r.stack) == 0 {
		return nil
	}
	return &r.stack[len(r.stack)-1]
}
