package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/internal/blobtest"
	"github.com/docjobs/docjobs/internal/store"
)

// slowBody sends its first piece at once and the rest only after pause,
// as a client trickling a file does.
type slowBody struct {
	pieces [][]byte
	pause  time.Duration
	sent   int // pieces begun
	rest   []byte
}

func (b *slowBody) Read(p []byte) (int, error) {
	if len(b.rest) == 0 {
		if b.sent == len(b.pieces) {
			return 0, io.EOF
		}
		if b.sent > 0 {
			time.Sleep(b.pause)
		}
		b.rest = b.pieces[b.sent]
		b.sent++
	}
	n := copy(p, b.rest)
	b.rest = b.rest[n:]
	return n, nil
}

// An upload still sending past its time limit is refused with 408
// DEADLINE_EXCEEDED, and neither its bytes nor a record stay: the sweep
// that removes unrecorded uploads an hour old relies on no upload lasting
// that long.
func TestAnUploadPastItsTimeLimitIsRefusedAndKeepsNothing(t *testing.T) {
	onEachStorage(t, func(t *testing.T, stor storage) {
		h := newHarnessWith(t, Config{}, openSQLite, stor)
		const limit = 20 * time.Millisecond
		body := &slowBody{pieces: [][]byte{[]byte(strings.Repeat("a", 4096)), []byte("b"), []byte("c")}, pause: 2 * limit}
		_, _, err := h.svc.storeUpload(as("acme"), "slow.txt", body, limit)
		var withHTTP *runtime.HTTPStatusError
		if !errors.As(err, &withHTTP) || withHTTP.HTTPStatus != http.StatusRequestTimeout ||
			status.Code(withHTTP.Err) != codes.DeadlineExceeded || !strings.Contains(withHTTP.Err.Error(), "took longer than 20ms") {
			t.Fatalf("storeUpload past its limit = %v, want 408 DEADLINE_EXCEEDED", err)
		}
		if body.sent == len(body.pieces) && len(body.rest) == 0 {
			t.Error("the whole body was read past the limit")
		}
		page, err := h.store.ListUploads(context.Background(), store.UploadListParams{AccountID: "acme"})
		if err != nil || len(page.Files) != 0 {
			t.Errorf("uploads recorded: %v, %v", page.Files, err)
		}
		for _, k := range blobtest.Keys(t, h.bucket, "") {
			t.Errorf("left in storage: %s", k)
		}

		// Within the limit, the same body is stored.
		body = &slowBody{pieces: [][]byte{[]byte(strings.Repeat("a", 4096)), []byte("b")}}
		if f, _, err := h.svc.storeUpload(as("acme"), "quick.txt", body, time.Hour); err != nil || f.Size != 4097 {
			t.Errorf("storeUpload within its limit = %+v, %v", f, err)
		}
	})
}

// emptyMessages is an upload stream whose client sends messages without
// content for ever, each one resetting the idle cut.
type emptyMessages struct {
	grpc.ClientStreamingServer[docjobsv1.UploadFileRequest, docjobsv1.UploadFileResponse]
	received int
}

func (e *emptyMessages) Recv() (*docjobsv1.UploadFileRequest, error) {
	e.received++
	time.Sleep(time.Millisecond)
	return &docjobsv1.UploadFileRequest{}, nil
}

// Messages without content do not keep a gRPC upload open past its
// deadline: the stream's reader stops at it, though no read returned.
func TestEmptyUploadMessagesDoNotOutliveTheDeadline(t *testing.T) {
	stream := &emptyMessages{}
	u := &uploadStream{stream: stream, deadline: time.Now().Add(20 * time.Millisecond)}
	done := make(chan error, 1)
	go func() {
		_, err := u.Read(make([]byte, 512))
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, errUploadTimeLimit) {
			t.Errorf("Read = %v, want the time limit", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read of a stream of empty messages is still going 10 s after its 20 ms deadline")
	}
}
