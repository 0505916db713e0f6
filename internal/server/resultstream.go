package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/internal/api"
)

// This file serves GET /v1/jobs/{id}/result as a stream. The gateway path
// builds the whole result, and then its JSON, in memory: twenty 99 MiB
// texts made gigabytes. Here rows are read from the store a few at a time
// (about a megabyte of text, or one larger row) and each is converted and
// written before the next, so a request holds one row, or one batch of
// small ones, at a time.
//
// The body is byte for byte what the gateway path writes (resultMarshaler):
// each row is the protojson of the same message, with the same marshal
// options, joined by the comma protojson writes in this binary (it adds a
// space after commas in some builds, so that nobody depends on its
// output), and the arrays and nulls resultMarshaler adds are added with the
// same helpers.
//
// The route is registered in the gateway's own mux, ahead of the generated
// handler (grpc-gateway tries the newest registration first), so that
// everything before the first byte is the gateway path's: bindRequest's
// authentication, route label, query checks and Docjobs-Warning, and
// writeError's answers. Once the first byte is out the status is sent: a
// row that cannot be read or converted then aborts the connection, so the
// client sees a truncated body (invalid JSON, a missing chunked
// terminator), never a complete-looking result that lacks rows. The first
// byte waits for the first row, so an error reading it is still a proper
// error answer.

// Results reads a job's result one row at a time for the account in ctx;
// *api.Service implements it. Its errors are statuses, as the service's.
type Results interface {
	JobResultRows(ctx context.Context, id string) (*docjobsv1.Job, iter.Seq2[api.ResultRow, error], error)
}

// resultRoute is the path the stream serves, as the proto binds it.
const resultRoute = "/v1/jobs/{id}/result"

// streamResult handles GET /v1/jobs/{id}/result.
func (s *Server) streamResult(w http.ResponseWriter, r *http.Request, pathParams map[string]string) {
	ctx := r.Context()
	id := pathParams["id"]
	j, rows, err := s.deps.Results.JobResultRows(ctx, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// A result of gigabytes to a slow client takes long, so it is cut only
	// when no byte moves for IOIdleTimeout, as downloads are; it sets that
	// deadline itself, through its write buffer, which takes it over from
	// the one every answer has (writedeadline.go). Nor may its read
	// deadline end it: once it passes, the server cancels the request's
	// context, and the stream stopped after whatever rows had gone out in
	// the first 30 s.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	idle := newIdleDeadline(rc.SetWriteDeadline, s.cfg.IOIdleTimeout)
	w.Header().Set("Content-Type", s.json.ContentType(nil))
	// Rows are written in pieces of a few kilobytes each; buffered, they
	// leave in large writes instead of a system call each.
	bw := bufio.NewWriterSize(&idleWriter{w: w, idle: idle}, resultBufferBytes)
	rw, err := s.newResultWriter(bw, j)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	for row, err := range rows {
		if err == nil {
			err = rw.row(row)
		}
		if err != nil && ctx.Err() != nil {
			// The request ended (the client went away, the server is
			// stopping): nobody to answer or warn, but a body begun must
			// not end as if it were whole.
			if rw.started {
				panic(http.ErrAbortHandler)
			}
			return
		}
		if err != nil && !rw.started {
			s.writeError(w, r, err)
			return
		}
		if err != nil {
			// What was read goes out before the cut.
			if bw.Flush() == nil {
				_ = rc.Flush()
			}
			s.abortResult(ctx, id, rw, err)
		}
		if rw.writeErr != nil {
			// The client went away; there is nobody to tell.
			return
		}
	}
	rw.end()
	if rw.writeErr == nil {
		_ = bw.Flush() // an error here is the client's going away
	}
}

// resultBufferBytes is the write buffer of a result stream.
const resultBufferBytes = 64 << 10

// abortResult logs why a result stream stops after its first byte and
// drops the connection, so that the client cannot take the truncated body
// for a whole result.
func (s *Server) abortResult(ctx context.Context, jobID string, rw *resultWriter, err error) {
	s.log.LogAttrs(ctx, slog.LevelError, "result stream aborted",
		append(requestAttrs(ctx), slog.String("job_id", jobID), slog.Int64("bytes", rw.written),
			slog.String("error", err.Error()))...)
	panic(http.ErrAbortHandler)
}

// resultArrays are the arrays of a result in the order protojson writes
// them (JobResult's declaration order); ocr and llm are written even when
// empty, merged only when it has answers (resultMarshaler).
var resultArrays = [...]struct {
	name        string
	alwaysThere bool
}{{"ocr", true}, {"llm", true}, {"merged", false}}

// resultWriter writes {"result":{"job":…,"ocr":[…],"llm":[…],"merged":[…]}}
// one row at a time; rows must come in the arrays' order.
type resultWriter struct {
	w         io.Writer
	opts      protojson.MarshalOptions
	comma     []byte
	consensus bool // the job votes: rows without a vote say "consensus": null
	pending   []byte
	at        int  // index in resultArrays of the array being written
	open      bool // whether resultArrays[at] has been opened
	started   bool // whether a byte has been written
	written   int64
	writeErr  error
}

func (s *Server) newResultWriter(w io.Writer, j *docjobsv1.Job) (*resultWriter, error) {
	opts := s.json.MarshalOptions
	// protojson writes ", " or "," between members depending on the build;
	// the rows are joined the way it would join them.
	probe, err := opts.Marshal(&docjobsv1.ChunkRef{File: "f", ChunkIndex: 1})
	if err != nil {
		return nil, fmt.Errorf("result stream: %w", err)
	}
	comma := []byte(",")
	if bytes.Contains(probe, []byte(", ")) {
		comma = []byte(", ")
	}
	jobJSON, err := opts.Marshal(j)
	if err != nil {
		return nil, fmt.Errorf("result stream: job: %w", err)
	}
	rw := &resultWriter{
		w: w, opts: opts, comma: comma,
		consensus: j.GetConsensus().GetMode() != docjobsv1.ConsensusMode_CONSENSUS_MODE_UNSPECIFIED,
	}
	rw.pending = slices.Concat([]byte(`{"result":{"job":`), jobJSON)
	return rw, nil
}

// row writes one row of the result.
func (rw *resultWriter) row(r api.ResultRow) error {
	var (
		at  int
		msg proto.Message
	)
	switch {
	case r.OCR != nil:
		at, msg = 0, r.OCR
	case r.LLM != nil:
		at, msg = 1, r.LLM
	case r.Merged != nil:
		at, msg = 2, r.Merged
	default:
		return nil
	}
	if at < rw.at {
		return fmt.Errorf("result stream: a %s row after the %s array", resultArrays[at].name, resultArrays[rw.at].name)
	}
	b, err := rw.opts.Marshal(msg)
	if err != nil {
		return fmt.Errorf("result stream: %s row: %w", resultArrays[at].name, err)
	}
	if r.LLM != nil && rw.consensus && r.LLM.GetConsensus() == nil {
		if b, err = withNullConsensus(b); err != nil {
			return err
		}
	}
	for rw.at < at {
		rw.closeArray()
		rw.at, rw.open = rw.at+1, false
	}
	if rw.open {
		rw.write(rw.comma)
	} else {
		rw.write(rw.comma)
		rw.write([]byte(`"` + resultArrays[at].name + `":[`))
		rw.open = true
	}
	rw.write(b)
	return nil
}

// closeArray ends the array being written, or writes it empty when it
// must be there; an empty array follows a bare comma, as withEmptyLists
// inserts it.
func (rw *resultWriter) closeArray() {
	switch a := resultArrays[rw.at]; {
	case rw.open:
		rw.write([]byte("]"))
	case a.alwaysThere:
		rw.write([]byte(`,"` + a.name + `":[]`))
	}
}

// end closes the arrays left and the envelope.
func (rw *resultWriter) end() {
	for {
		rw.closeArray()
		if rw.at == len(resultArrays)-1 {
			break
		}
		rw.at, rw.open = rw.at+1, false
	}
	rw.write([]byte("}}"))
}

// write sends b, after the envelope's start when nothing was sent yet. A
// write error is kept; later writes do nothing.
func (rw *resultWriter) write(b []byte) {
	if rw.writeErr != nil {
		return
	}
	if !rw.started {
		rw.started = true
		pending := rw.pending
		rw.pending = nil
		rw.write(pending)
		if rw.writeErr != nil {
			return
		}
	}
	n, err := rw.w.Write(b)
	rw.written += int64(n)
	rw.writeErr = err
}
