package openai_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/provider/openai"
)

// BenchmarkOversizedAnswer is one model-stage call answered with 60 MiB of
// content (a broken or hostile server's answer; audit-model F2), measured
// in bytes allocated per call: the SDK reads a body whole before decoding
// it, so what the call reads is what it holds. The server's body is built
// once, outside the loop.
func BenchmarkOversizedAnswer(b *testing.B) {
	body := []byte(chatCompletion(strings.Repeat("A", 60<<20), "stop"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	b.Cleanup(srv.Close)
	chat, err := openai.NewChat(openai.ChatConfig{Config: openai.Config{BaseURL: srv.URL + "/v1", Model: "gpt-4.1", Key: key, Timeout: time.Minute}})
	if err != nil {
		b.Fatal(err)
	}
	req := provider.ChatRequest{System: "Extract.", User: "Invoice 7"}
	b.ReportAllocs()
	for b.Loop() {
		// Before the answer limit the call succeeded; now it fails. Either
		// way the cost is what it read.
		_, _ = chat.Complete(context.Background(), req)
	}
}
