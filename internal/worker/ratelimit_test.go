package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/docjobs/docjobs/internal/convert"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/outbound"
	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/provider/slots"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/webhook"
)

// rateLimitedRowError is what a row still rate limited after the file's
// patience says: the provider's own error, not the deadline's timeout.
const rateLimitedRowError = "provider error (category=rate_limit, status=429)"

func TestARateLimitedStageSnoozesLongerEachTimeAndKeepsSinceWhen(t *testing.T) {
	start := time.Now().Add(-time.Minute)
	tests := []struct {
		name       string
		wait       rateLimitWait
		retryAfter time.Duration
		answered   bool
		want       time.Duration
	}{
		{"the first snooze is the floor", rateLimitWait{}, 0, false, 5 * time.Second},
		{"a vendor's longer Retry-After is honoured", rateLimitWait{}, 20 * time.Second, false, 20 * time.Second},
		{"each snooze doubles the last", rateLimitWait{Since: start, Snoozes: 2}, 0, false, 20 * time.Second},
		{"at most a minute", rateLimitWait{Since: start, Snoozes: 30}, 0, false, time.Minute},
		{"a longer Retry-After past the cap is still honoured", rateLimitWait{Since: start, Snoozes: 30}, 2 * time.Minute, false, 2 * time.Minute},
		{"an answered call starts again from the floor", rateLimitWait{Since: start, Snoozes: 5}, 0, true, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.wait.snooze(context.Background(), modelRateLimitKey, tt.retryAfter, 5*time.Second, DefaultRateLimitPatience, tt.answered)
			snooze := (*river.JobSnoozeError)(nil)
			if !errors.As(err, &snooze) || snooze.Duration != tt.want {
				t.Fatalf("err = %v, want a snooze of %s", err, tt.want)
			}
		})
	}
}

// A vendor's Retry-After is honoured within the stage's patience, not past
// it: the run after the patience is the one that fails the rows still
// limited. Honoured whole, a 429 asking for an hour slept the file an hour,
// and one asking for days (ParseRetryAfter keeps up to 10⁶ s) past the
// job's deadline, which failed the row as a timeout instead.
func TestARateLimitedStageSnoozesNoLongerThanItsPatienceLeaves(t *testing.T) {
	const floor = 5 * time.Second
	tests := []struct {
		name       string
		waitedFor  time.Duration // 0: no wait kept
		retryAfter time.Duration
		answered   bool
		want       time.Duration // the snooze, within a second
	}{
		{"a first wait of days snoozes the patience", 0, 1e6 * time.Second, false, DefaultRateLimitPatience},
		{"an hour asked after 4 minutes snoozes the 6 left", 4 * time.Minute, time.Hour, false, 6 * time.Minute},
		{"the growing snooze stops at the patience's end", 9*time.Minute + 40*time.Second, 0, false, 20 * time.Second},
		{"past the patience, the floor", 11 * time.Minute, time.Hour, false, floor},
		{"an answered call gives the whole patience again", 9 * time.Minute, time.Hour, true, DefaultRateLimitPatience},
		{"a Retry-After within the patience is honoured", 4 * time.Minute, 5 * time.Minute, false, 5 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var wait rateLimitWait
			if tt.waitedFor > 0 {
				wait = rateLimitWait{Since: time.Now().Add(-tt.waitedFor), Snoozes: 20}
			}
			err := wait.snooze(context.Background(), modelRateLimitKey, tt.retryAfter, floor, DefaultRateLimitPatience, tt.answered)
			snooze := (*river.JobSnoozeError)(nil)
			if !errors.As(err, &snooze) {
				t.Fatalf("err = %v, want a snooze", err)
			}
			if d := snooze.Duration; d > tt.want || d < tt.want-time.Second {
				t.Errorf("snooze %s, want %s", d, tt.want)
			}
		})
	}
}

func TestAStageIsOutOfPatienceOnlyAfterWaitingItOut(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name string
		md   string
		want bool
	}{
		{"no wait kept", `{}`, false},
		{"River's own metadata only", `{"snoozes":40}`, false},
		{"a wait shorter than the patience", fmt.Sprintf(`{%q:{"since":%q,"snoozes":3}}`, modelRateLimitKey, now.Add(-9*time.Minute).Format(time.RFC3339Nano)), false},
		{"a wait of the patience", fmt.Sprintf(`{%q:{"since":%q,"snoozes":9}}`, modelRateLimitKey, now.Add(-10*time.Minute).Format(time.RFC3339Nano)), true},
		{"a wait ended by an answer", fmt.Sprintf(`{%q:null}`, modelRateLimitKey), false},
		{"the other stage's wait", fmt.Sprintf(`{%q:{"since":%q,"snoozes":9}}`, ocrRateLimitKey, now.Add(-time.Hour).Format(time.RFC3339Nano)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := rateLimitWaitOf(&rivertype.JobRow{Metadata: []byte(tt.md)}, modelRateLimitKey).over(now, DefaultRateLimitPatience)
			if got != tt.want {
				t.Errorf("over = %t, want %t", got, tt.want)
			}
		})
	}
}

// A run of a file that has waited out rate limits for its patience fails
// the rows the provider still limits; a run within it snoozes the file.
func TestAFileRateLimitedPastItsPatienceFailsTheLimitedRows(t *testing.T) {
	tests := []struct {
		name       string
		waitedFor  time.Duration // 0: no wait kept
		wantStatus []job.RowStatus
	}{
		{"the first rate limit snoozes", 0, []job.RowStatus{job.RowDone, job.RowPending, job.RowDone}},
		{"within the patience it snoozes", 9 * time.Minute, []job.RowStatus{job.RowDone, job.RowPending, job.RowDone}},
		{"past the patience the limited row fails", 11 * time.Minute, []job.RowStatus{job.RowDone, job.RowFailed, job.RowDone}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chat := &scriptedChat{fail: func(part string, _ int) error {
				if part == "part 2 of 3" {
					return &provider.Error{Category: provider.CategoryRateLimit, Status: 429}
				}
				return nil
			}}
			w, st, j := recognizedFile(t, 3, chat)
			md := []byte(`{"snoozes":4}`)
			if tt.waitedFor > 0 {
				md = fmt.Appendf(nil, `{"snoozes":4,%q:{"since":%q,"snoozes":4}}`, modelRateLimitKey, time.Now().Add(-tt.waitedFor).Format(time.RFC3339Nano))
			}
			err := w.Work(context.Background(), &river.Job[FileArgs]{
				JobRow: &rivertype.JobRow{Attempt: 2, MaxAttempts: 5, Metadata: md}, Args: FileArgs{JobID: j.ID}})
			got := llmStatuses(t, st, j.ID)
			if !slices.Equal(got, tt.wantStatus) {
				t.Fatalf("rows %v, want %v", got, tt.wantStatus)
			}
			snooze := (*river.JobSnoozeError)(nil)
			if failed := tt.wantStatus[1] == job.RowFailed; failed != (err == nil) || !failed && !errors.As(err, &snooze) {
				t.Fatalf("err = %v; want a snooze while the row waits, nothing once it failed", err)
			}
			if tt.wantStatus[1] == job.RowFailed {
				if e := result(t, st, j.ID).LLM[1].Error; e != rateLimitedRowError {
					t.Errorf("row error %q, want %q", e, rateLimitedRowError)
				}
			}
		})
	}
}

// limitingVendor answers every call 429 with Retry-After: 0, as a provider
// whose limit never lifts, and counts the calls per key.
type limitingVendor struct {
	*httptest.Server
	mu    sync.Mutex
	calls map[string]int
}

func newLimitingVendor(t *testing.T) *limitingVendor {
	t.Helper()
	v := &limitingVendor{calls: map[string]int{}}
	v.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		v.mu.Lock()
		v.calls[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]++
		v.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
	}))
	t.Cleanup(v.Close)
	return v
}

func (v *limitingVendor) callsWith(key string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.calls[key]
}

// A provider that answers 429 forever: each stage's file snoozes once
// (four calls), and its next run, past the patience (here a nanosecond),
// fails the row with the rate limit after its four calls. River keeps the
// wait in the file job's metadata. Before, the file snoozed until the job's
// deadline, which failed the row as a timeout.
func TestARateLimitThatNeverLiftsFailsTheRowWithItsCause(t *testing.T) {
	tests := []struct {
		name  string
		model bool // the model stage is limited, else recognition
	}{
		{"recognition", false},
		{"the model stage", true},
	}
	forEachStoreAtOnce(t, func(t *testing.T, st store.Store) {
		for n, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				vendor := newLimitingVendor(t)
				src := scanSource(t)
				id := fmt.Sprintf("job-limited-%d", n)
				j := &job.Job{ID: id, AccountID: "acct", Status: job.StatusNew, ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED",
					OCR: job.OCR{Provider: "NEURAL_CLIENT_TYPE_PROVIDER_8", Model: "vision"}, Created: time.Now(),
					SourceURLs: []string{src.URL + "/scan.png"}}
				key, riverKey := drainOCRKey, ocrRateLimitKey
				if tc.model {
					j.SourceURLs = []string{src.URL + "/a.txt"}
					j.Prompts = []string{"extract"}
					j.Neural = job.Neural{Type: "NEURAL_CLIENT_TYPE_PROVIDER_2", Model: "gpt-4.1", ChunkBudgetTokens: 4000}
					key, riverKey = drainModelKey, modelRateLimitKey
				}
				if _, _, err := st.CreateJob(context.Background(), store.CreateJobParams{Job: j, Enqueue: FirstStage(id, 1),
					Secrets: []job.SealedSecret{
						{Field: job.SecretOCRProviderKey, Ciphertext: []byte(drainOCRKey)},
						{Field: job.SecretNeuralAPIKey, Ciphertext: []byte(drainModelKey)},
					}}); err != nil {
					t.Fatal(err)
				}
				startLimitedProcess(t, st, vendor.URL)
				res := endOf(t, st, id)

				rowErr := res.OCR[0].Error
				if tc.model {
					if len(res.LLM) != 1 {
						t.Fatalf("%d model rows, want 1", len(res.LLM))
					}
					rowErr = res.LLM[0].Error
				}
				if !strings.HasPrefix(rowErr, rateLimitedRowError) {
					t.Errorf("row error %q, want it to begin %q", rowErr, rateLimitedRowError)
				}
				if calls := vendor.callsWith(key); calls != 8 {
					t.Errorf("the vendor was asked %d times, want 8: four calls a run, one snooze", calls)
				}
				waitAllCompleted(t, st, "file")
				var md map[string]json.RawMessage
				for _, rj := range riverJobsOf(t, st, "file") {
					if strings.Contains(string(rj.EncodedArgs), id) {
						if err := json.Unmarshal(rj.Metadata, &md); err != nil {
							t.Fatal(err)
						}
					}
				}
				var kept rateLimitWait
				if err := json.Unmarshal(md[riverKey], &kept); err != nil || kept.Snoozes != 1 || kept.Since.IsZero() {
					t.Errorf("River kept %s under %s, want the one snooze and since when", md[riverKey], riverKey)
				}
			})
		}
	})
}

// startLimitedProcess runs the pipeline's workers under River over st with
// OCR on slot 8 and the model on slot 2 of vendorURL, a patience of a
// nanosecond and snoozes of 10 ms.
func startLimitedProcess(t *testing.T, st store.Store, vendorURL string) {
	t.Helper()
	fetcher, bucket := realFetcher(t, st, time.Minute)
	sender, err := webhook.NewSender(webhook.Config{Client: outbound.NewClient(outbound.Config{AllowPrivate: true})})
	if err != nil {
		t.Fatal(err)
	}
	providers := slots.New(slots.Config{BaseURLs: map[int]string{2: vendorURL + "/v1", 8: vendorURL + "/v1"},
		RetryBaseDelay: time.Millisecond})
	workUntilTheTestEnds(t, st, Config{JobCheck: 20 * time.Millisecond, RateLimitPatience: time.Nanosecond, snoozeFloor: 10 * time.Millisecond}, Deps{
		Store: st, Fetcher: fetcher, Convert: convert.New(convert.Config{}).Convert, Webhooks: sender, Bucket: bucket,
		Providers: providers, Chats: providers, Secrets: plainOpener{}, Chunker: wordChunker{n: 1000},
		Logger: slog.New(slog.DiscardHandler),
	})
}
