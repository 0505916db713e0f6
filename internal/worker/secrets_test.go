package worker

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/convert"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/provider/slots"
	"github.com/docjobs/docjobs/internal/store"
)

// plainOpener "opens" secrets stored as they are: sealing is not what
// these tests are about.
type plainOpener struct{}

func (plainOpener) Open(ciphertext []byte, _, _, _ string) ([]byte, error) { return ciphertext, nil }

// pageKeeper notes every answer the page cache keeps.
type pageKeeper struct {
	Store
	mu    sync.Mutex
	pages []string
}

func (p *pageKeeper) PutOCRPage(ctx context.Context, jobID string, fileIndex int, key string, value []byte) error {
	p.mu.Lock()
	p.pages = append(p.pages, string(value))
	p.mu.Unlock()
	return p.Store.PutOCRPage(ctx, jobID, fileIndex, key, value)
}

// echoedSpellings are the ways a vendor may echo secret: as it is,
// percent-encoded, in hex and in base64, alone and inside longer base64.
func echoedSpellings(secret string) []string {
	out := []string{secret, url.QueryEscape(secret), url.PathEscape(secret),
		hex.EncodeToString([]byte(secret)), strings.ToUpper(hex.EncodeToString([]byte(secret)))}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		out = append(out, enc.EncodeToString([]byte(secret)))
		for _, prefix := range []string{"x", "xy"} {
			out = append(out, enc.EncodeToString([]byte(prefix+secret+"tail")))
		}
	}
	return out
}

// leaked returns the spellings of secret that text still holds. Inside a
// longer base64 text only the characters away from both ends are the
// secret's own: those are what must be gone.
func leaked(text, secret string) []string {
	var found []string
	for _, sp := range echoedSpellings(secret) {
		if len(sp) > 8 && !strings.Contains(sp, secret) && strings.Trim(sp, "0123456789abcdefABCDEF") != "" {
			sp = sp[3 : len(sp)-3] // base64: drop what the neighbours change
		}
		if strings.Contains(text, sp) {
			found = append(found, sp)
		}
	}
	return found
}

// TestAVendorsEchoOfAnyOfTheJobsSecretsIsNotStoredNorPassedOn: a vendor
// answering 200 with every secret of the job (both keys, the webhook
// secret and its key) in every spelling leaves none of them in the rows'
// content, request or rawData nor in the page cache, and the OCR answer
// the model vendor is sent carries none either.
func TestAVendorsEchoOfAnyOfTheJobsSecretsIsNotStoredNorPassedOn(t *testing.T) {
	const (
		ocrKey   = "CANARY-OCR-ECHO200+/=-P9"
		modelKey = "sk-CANARY-NEURAL-ECHO200+/=-P9"
		hookKey  = "CANARYWHSECRETBYTES1234"
		masked   = "sk-CANAR****=-P9"
	)
	hookSecret := "whsec_" + base64.StdEncoding.EncodeToString([]byte(hookKey))
	secrets := []string{ocrKey, modelKey, hookSecret, hookKey}

	var echo strings.Builder
	for _, s := range secrets {
		for _, sp := range echoedSpellings(s) {
			echo.WriteString(" echo " + sp)
		}
	}
	echo.WriteString(" masked " + masked)

	var mu sync.Mutex
	sent := map[string][]string{} // key → request bodies
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		mu.Lock()
		sent[key] = append(sent[key], string(body))
		mu.Unlock()
		content := "read:" + echo.String()
		if key == modelKey {
			b, _ := json.Marshal(map[string]string{"answer": echo.String()})
			content = string(b)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "c1", "object": "chat.completion", "model": "m",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": content}}},
			"usage": map[string]any{"prompt_tokens": 1, "completion_tokens": 1},
			"debug": echo.String(),
		})
	}))
	defer srv.Close()

	var img bytes.Buffer
	if err := png.Encode(&img, image.NewGray(image.Rect(0, 0, 8, 8))); err != nil {
		t.Fatal(err)
	}
	providers := slots.New(slots.Config{BaseURLs: map[int]string{2: srv.URL + "/v1", 8: srv.URL + "/v1"}, RetryBaseDelay: time.Millisecond})
	db := openStore(t)
	st := &pageKeeper{Store: db}
	j := &job.Job{ID: "job-1", AccountID: "a", Status: job.StatusNew, SourceURLs: []string{"https://example.com/scan.png"},
		Prompts: []string{"extract"}, ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", Created: time.Now(),
		Neural:     job.Neural{Type: "NEURAL_CLIENT_TYPE_PROVIDER_2", Model: "gpt-4.1", ChunkBudgetTokens: 4000},
		OCR:        job.OCR{Provider: "NEURAL_CLIENT_TYPE_PROVIDER_8", Model: "vision"},
		WebhookURL: "https://example.com/hook", WebhookSigned: true}
	if _, _, err := db.CreateJob(context.Background(), store.CreateJobParams{Job: j, Secrets: []job.SealedSecret{
		{Field: job.SecretOCRProviderKey, Ciphertext: []byte(ocrKey)},
		{Field: job.SecretNeuralAPIKey, Ciphertext: []byte(modelKey)},
		{Field: job.SecretWebhookSecret, Ciphertext: []byte(hookSecret)},
	}}); err != nil {
		t.Fatal(err)
	}
	w := newFileWorker(Config{JobCheck: 20 * time.Millisecond}.withDefaults(), Deps{
		Store: st, Fetcher: &savingFetcher{data: img.String()}, Convert: convert.New(convert.Config{}).Convert,
		Providers: providers, Chats: providers, Secrets: plainOpener{},
		Chunker: wordChunker{n: 10000}, Logger: slog.New(slog.DiscardHandler),
	})
	if err := workAttempt(w, j, 1); err != nil {
		t.Fatal(err)
	}

	res := result(t, db, j.ID)
	if len(res.OCR) != 1 || res.OCR[0].Status != job.RowDone || len(res.LLM) != 1 || res.LLM[0].Status != job.RowDone {
		t.Fatalf("rows %+v, want one DONE OCR row and one DONE model row", res)
	}
	fields := map[string]string{
		"OCR content": res.OCR[0].Content, "OCR request": res.OCR[0].Request, "OCR rawData": res.OCR[0].RawData,
		"model content": res.LLM[0].Content, "model request": res.LLM[0].Request, "model rawData": res.LLM[0].RawData,
	}
	st.mu.Lock()
	for i, p := range st.pages {
		fields["kept page "+string(rune('0'+i))] = p
	}
	st.mu.Unlock()
	mu.Lock()
	for _, body := range sent[modelKey] {
		fields["request sent to the model vendor"] += body
	}
	mu.Unlock()
	for name, text := range fields {
		for _, s := range secrets {
			if l := leaked(text, s); len(l) > 0 {
				t.Errorf("%s holds %q in %d spellings, e.g. %q", name, s, len(l), l[0])
			}
		}
	}
	if !strings.Contains(res.OCR[0].Content, masked) || !strings.Contains(res.LLM[0].Content, masked) {
		t.Errorf("the masked form a vendor prints on purpose was removed: %q", res.LLM[0].Content)
	}
	if !strings.Contains(res.LLM[0].Content, "[key elided]") {
		t.Errorf("model content %q does not say where a key was", res.LLM[0].Content)
	}
}

// secretReads counts the reads of a job's secrets and their openings.
type secretReads struct {
	Store
	reads, opens atomic.Int32
}

func (s *secretReads) JobSecrets(ctx context.Context, jobID string) ([]job.SealedSecret, error) {
	s.reads.Add(1)
	return s.Store.JobSecrets(ctx, jobID)
}

func (s *secretReads) Open(ciphertext []byte, _, _, _ string) ([]byte, error) {
	s.opens.Add(1)
	return ciphertext, nil
}

// TestAProviderIsOpenedWithOneReadOfTheJobsSecrets: opening the model
// provider of a file reads the job's secrets once and opens each once, for
// its key and for the redaction of its answers alike (it read them twice).
func TestAProviderIsOpenedWithOneReadOfTheJobsSecrets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "c1", "object": "chat.completion", "model": "m",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": "ok"}}},
			"usage": map[string]any{"prompt_tokens": 1, "completion_tokens": 1},
		})
	}))
	defer srv.Close()
	providers := slots.New(slots.Config{BaseURLs: map[int]string{2: srv.URL + "/v1"}, RetryBaseDelay: time.Millisecond})
	db := openStore(t)
	st := &secretReads{Store: db}
	j := &job.Job{ID: "job-1", AccountID: "a", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a.txt"},
		Prompts: []string{"extract"}, ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", Created: time.Now(),
		Neural: job.Neural{Type: "NEURAL_CLIENT_TYPE_PROVIDER_2", Model: "gpt-4.1", ChunkBudgetTokens: 4000},
		OCR:    job.OCR{Provider: "NEURAL_CLIENT_TYPE_PROVIDER_8", Model: "vision"}}
	if _, _, err := db.CreateJob(context.Background(), store.CreateJobParams{Job: j, Secrets: []job.SealedSecret{
		{Field: job.SecretOCRProviderKey, Ciphertext: []byte("ocr-key")},
		{Field: job.SecretNeuralAPIKey, Ciphertext: []byte("model-key")},
	}}); err != nil {
		t.Fatal(err)
	}
	w := newFileWorker(Config{JobCheck: 20 * time.Millisecond}.withDefaults(), Deps{
		Store: st, Fetcher: &savingFetcher{data: "plain text needs no OCR provider"}, Convert: convert.New(convert.Config{}).Convert,
		Providers: providers, Chats: providers, Secrets: st,
		Chunker: wordChunker{n: 10000}, Logger: slog.New(slog.DiscardHandler),
	})
	if err := workAttempt(w, j, 1); err != nil {
		t.Fatal(err)
	}
	if res := result(t, db, j.ID); len(res.LLM) != 1 || res.LLM[0].Status != job.RowDone {
		t.Fatalf("model rows %+v, want one DONE", res.LLM)
	}
	if reads, opens := st.reads.Load(), st.opens.Load(); reads != 1 || opens != 2 {
		t.Errorf("the model provider was opened with %d reads of the job's secrets and %d openings; want 1 and 2", reads, opens)
	}
}
