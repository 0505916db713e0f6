// Package consensus votes the k answers a model gave for one chunk into one
// agreed JSON answer, field by field, and reports exactly where the runs
// disagreed (spec: the consensus block of llm[] rows). It is pure: the caller
// makes the calls and hands over their answers; docs/consensus.md explains
// the algorithm.
package consensus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/docjobs/docjobs/internal/fence"
)

// Caps of the report (spec: Limits, consensus disagreements kept and
// variant value length; the variant cap is ours).
const (
	MaxDisagreements = 100
	MaxVariants      = 10
	MaxValueBytes    = 512
	// MaxPathBytes cuts a fieldPath, which only absurdly long keys reach.
	MaxPathBytes = 1024
	// MaxRuns is the largest k the spec allows (CONSENSUS_MODE_FIVE_RUNS).
	MaxRuns = 5
)

// Defaults of Limits; see the field comments.
const (
	DefaultMaxAnswerBytes = 4 << 20
	DefaultMaxDepth       = 64
	DefaultMaxNodes       = 100_000
	DefaultMaxMatchCost   = 10_000_000
)

// Limits bound the work one vote may do, since the answers come from a model
// and can be inflated at will. A vote that would exceed one degrades: the row
// keeps the first votable answer, minAgreement is 0 and incomplete is true.
// Zero fields take the defaults.
type Limits struct {
	// MaxAnswerBytes bounds each votable answer's length in bytes. Longer
	// answers are still checked for being JSON (one linear scan) so they
	// count as votable, but are never turned into trees.
	MaxAnswerBytes int
	// MaxDepth bounds container nesting per answer: a bare object or array
	// is depth 1; scalars add no level.
	MaxDepth int
	// MaxNodes bounds the JSON values per answer: every object, array and
	// scalar counts once, keys do not.
	MaxNodes int
	// MaxMatchCost bounds the work of matching array elements by
	// similarity, in steps summed over the whole vote: one per index entry
	// visited, both key counts plus one per pair of objects compared, and 24
	// per similar pair kept. Realistic answers spend little (3 runs of 500
	// records that all differ: about 0.4M); arrays of look-alike objects
	// are what it stops. At the default, matching allocates at most about
	// 30 MB and takes about 50 ms.
	MaxMatchCost int64
}

// WithDefaults returns l with every zero or negative field set to its default.
func (l Limits) WithDefaults() Limits {
	if l.MaxAnswerBytes <= 0 {
		l.MaxAnswerBytes = DefaultMaxAnswerBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxNodes <= 0 {
		l.MaxNodes = DefaultMaxNodes
	}
	if l.MaxMatchCost <= 0 {
		l.MaxMatchCost = DefaultMaxMatchCost
	}
	return l
}

// Run is one of the k answers to a chunk.
type Run struct {
	// Answer is the model's answer text as produced. One code fence
	// around all of it (```json … ```) is read through, as merge and the
	// row's verdict read answers (fence.Strip).
	Answer string
	// Unusable is the caller's reason the run cannot vote (the call failed,
	// the answer was truncated); empty when the call succeeded in budget.
	// Whether Answer is JSON is decided here, not by the caller.
	Unusable string
}

// Result is the vote of one row. Its JSON form is the spec's consensus block;
// Agreed, Degraded and Unvotable are for the caller and are not marshalled.
type Result struct {
	// Agreed is the agreed answer, compact JSON. When no vote happened it is
	// the first votable answer, compacted.
	Agreed json.RawMessage `json:"-"`

	K           int `json:"k"`
	RunsVotable int `json:"runsVotable"`
	// MinAgreement is the lowest agreement of any field, in (0, 1]; 0 is the
	// sentinel for "no vote": fewer than two votable runs, or degraded.
	MinAgreement float64 `json:"minAgreement"`
	// Incomplete is true when RunsVotable < K or no vote happened.
	Incomplete bool `json:"incomplete"`
	// Disagreements is never nil, so it marshals as [].
	Disagreements        []Disagreement `json:"disagreements"`
	DisagreementsDropped int            `json:"disagreementsDropped"`

	// Degraded says why no vote happened; empty when it did.
	Degraded string `json:"-"`
	// Unvotable lists the runs that did not vote and why, in run order.
	Unvotable []RunError `json:"-"`
}

// Disagreement is one place where the votable runs did not all agree.
type Disagreement struct {
	// FieldPath is the dot-path of the field in the agreed answer, "" for
	// the root; see docs/consensus.md for the escaping of keys.
	FieldPath       string    `json:"fieldPath"`
	Variants        []Variant `json:"variants"`
	VariantsDropped int       `json:"variantsDropped"`
}

// Variant is one competing value of a disagreement.
type Variant struct {
	// Value is compact JSON, cut to MaxValueBytes on a character boundary.
	// A null or absent value is "null".
	Value string `json:"value"`
	// Runs is how many votable runs produced it.
	Runs int `json:"runs"`
	// Included is true when the value won and is in the agreed answer; a
	// winning null is included although its key is omitted when no run
	// behind it wrote the key.
	Included bool `json:"included"`
}

// RunError says why one run could not vote.
type RunError struct {
	Run    int // 1-based, as people count runs
	Reason string
}

func (e RunError) String() string { return fmt.Sprintf("run %d: %s", e.Run, e.Reason) }

// NoVotableRunsError is returned when not a single run can vote; the caller
// fails the row with it. Its text names every run's reason.
type NoVotableRunsError struct {
	Runs []RunError
}

func (e *NoVotableRunsError) Error() string {
	parts := make([]string, len(e.Runs))
	for i, r := range e.Runs {
		parts[i] = r.String()
	}
	return "consensus: no votable run: " + strings.Join(parts, "; ")
}

// ErrRunCount is returned for fewer than one or more than MaxRuns runs, a
// caller bug rather than a property of the answers.
var ErrRunCount = fmt.Errorf("consensus: between 1 and %d runs are needed", MaxRuns)

// Vote votes runs into one agreed answer. It fails only with ErrRunCount or,
// when no run is votable, a *NoVotableRunsError; every other outcome,
// including a degraded vote, is a Result.
func Vote(runs []Run, limits Limits) (Result, error) {
	if len(runs) < 1 || len(runs) > MaxRuns {
		return Result{}, fmt.Errorf("%w, got %d", ErrRunCount, len(runs))
	}
	limits = limits.WithDefaults()
	res := Result{K: len(runs), Disagreements: []Disagreement{}}
	runs = unfenced(runs)

	// Runs often answer word for word alike: such an answer is checked and
	// parsed once, as the earliest run that gave it.
	twin := make([]int, len(runs))
	for i, r := range runs {
		twin[i] = i
		for j := range i {
			if runs[j].Unusable == "" && runs[j].Answer == r.Answer {
				twin[i] = j
				break
			}
		}
	}
	var votable []int // run indexes, ascending
	valid := make([]bool, len(runs))
	for i, r := range runs {
		if twin[i] == i {
			valid[i] = json.Valid([]byte(r.Answer))
		} else {
			valid[i] = valid[twin[i]]
		}
		switch {
		case r.Unusable != "":
			res.Unvotable = append(res.Unvotable, RunError{Run: i + 1, Reason: r.Unusable})
		case !valid[i]:
			res.Unvotable = append(res.Unvotable, RunError{Run: i + 1, Reason: "invalid JSON (" + syntaxError(r.Answer) + ")"})
		default:
			votable = append(votable, i)
		}
	}
	res.RunsVotable = len(votable)
	res.Incomplete = len(votable) < len(runs)
	if len(votable) == 0 {
		return res, &NoVotableRunsError{Runs: res.Unvotable}
	}
	if len(votable) == 1 {
		return degrade(res, runs[votable[0]].Answer, fmt.Sprintf("only 1 of %d runs is votable", len(runs))), nil
	}

	in := newInterner()
	roots := make([]*node, len(votable))
	parsed := make(map[int]*node, len(votable)) // by twin
	for j, i := range votable {
		if len(runs[i].Answer) > limits.MaxAnswerBytes {
			return degrade(res, runs[votable[0]].Answer,
				fmt.Sprintf("run %d: answer is larger than %d bytes", i+1, limits.MaxAnswerBytes)), nil
		}
		root, ok := parsed[twin[i]]
		if !ok {
			var err error
			if root, err = parse(runs[i].Answer, limits, in); err != nil {
				return degrade(res, runs[votable[0]].Answer, fmt.Sprintf("run %d: %v", i+1, err)), nil
			}
			parsed[twin[i]] = root // trees are never changed by the vote, so twins share one
		}
		roots[j] = root
	}

	v := &voter{in: in, lim: limits, votable: len(votable), minRuns: len(votable)}
	agreed, err := v.vote(votable, roots, true)
	if err != nil {
		var lim *limitError
		if errors.As(err, &lim) {
			return degrade(res, runs[votable[0]].Answer, lim.Error()), nil
		}
		return Result{}, fmt.Errorf("consensus: %w", err)
	}
	w := writer{buf: make([]byte, 0, len(runs[votable[0]].Answer))} // about its size
	if agreed == nil {
		w.write("null") // a root won by null or absence is still an answer
	} else {
		w.out(agreed)
	}
	res.Agreed = w.buf
	res.MinAgreement = float64(v.minRuns) / float64(len(votable))
	res.Disagreements, res.DisagreementsDropped = v.report.disagreements()
	return res, nil
}

// unfenced returns a copy of runs with each answer read through one
// wrapping code fence (fence.Strip): one rule with merge and the row's
// verdict for whether an answer is JSON.
func unfenced(runs []Run) []Run {
	out := make([]Run, len(runs))
	for i, r := range runs {
		r.Answer = fence.Strip(r.Answer)
		out[i] = r
	}
	return out
}

// degrade fills res for a row without a vote: it keeps first, compacted.
func degrade(res Result, first, why string) Result {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(first)); err != nil {
		// Unreachable: first passed json.Valid. Keep the text rather than lose it.
		buf.Reset()
		buf.WriteString(first)
	}
	res.Agreed = json.RawMessage(validUTF8(buf.String()))
	res.MinAgreement = 0
	res.Incomplete = true
	res.Degraded = why
	return res
}

// syntaxError describes why text is not JSON, in one short line.
func syntaxError(text string) string {
	var v json.RawMessage
	err := json.Unmarshal([]byte(text), &v)
	var se *json.SyntaxError
	switch {
	case err == nil:
		return "not a single JSON value"
	case errors.As(err, &se):
		return fmt.Sprintf("%s at offset %d", se.Error(), se.Offset)
	default:
		return err.Error()
	}
}

// limitError is a limit an answer or the vote ran into; it degrades the vote.
type limitError struct{ msg string }

func (e *limitError) Error() string { return e.msg }
