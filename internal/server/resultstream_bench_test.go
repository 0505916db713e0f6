package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/internal/api"
	"github.com/docjobs/docjobs/internal/auth"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// heapPeak samples the live heap while fn runs and returns its peak above
// the heap before fn (after a GC). Sampling every millisecond can miss a
// peak shorter than that; a result of gigabytes is not one.
func heapPeak(fn func()) uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	runtime.GC()
	base := read()
	var (
		peak uint64
		wg   sync.WaitGroup
	)
	done := make(chan struct{})
	wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if h := read(); h > peak {
				peak = h
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	fn()
	close(done)
	wg.Wait()
	if h := read(); h > peak {
		peak = h
	}
	if peak < base {
		return 0
	}
	return peak - base
}

// BenchmarkGetJobResult reads the result of jobs of five and ten files
// with 20 MiB of recognized text each (the case of docs/decisions.md,
// smaller), and of a job of 2,000 small model rows (what reading rows in
// batches instead of one query costs), over
// REST through the gateway (the whole result in memory), REST streamed, and
// gRPC's unary answer (refused above 64 MiB). peak-heap-MiB is the live
// heap's peak above the heap before the request.
//
//	go test -run XXX -bench GetJobResult -benchtime 3x ./internal/server/
func BenchmarkGetJobResult(b *testing.B) {
	// The gateway path is measured as it was before results streamed: no
	// bound on the answer built in memory.
	rs := newRealService(b, api.Config{MaxResultMessageBytes: 1 << 40})
	bounded := rs.service(b, api.Config{})
	ctx := context.Background()
	create := func(id string, files, rowsPerFile, textBytes int) {
		j := &job.Job{ID: id, AccountID: "alice", Status: job.StatusNew,
			Neural:         job.Neural{Type: "NEURAL_CLIENT_TYPE_PROVIDER_1", Model: "m", ChunkBudgetTokens: job.DefaultChunkBudgetTokens},
			ExtractionMode: job.ExtractionHybrid, ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", RequestHash: "h"}
		for i := range files {
			j.SourceURLs = append(j.SourceURLs, fmt.Sprintf("https://example.com/%d.txt", i))
		}
		if _, _, err := rs.store.CreateJob(ctx, store.CreateJobParams{Job: j}); err != nil {
			b.Fatal(err)
		}
		for i := range files {
			ocr := job.OCRRow{JobID: id, FileIndex: i, File: j.SourceURLs[i], Status: job.RowDone,
				Content: strings.Repeat(string(rune('a'+i)), textBytes), OutputFormat: job.FormatPlain}
			d := store.OCRDone{Row: ocr}
			for c := range rowsPerFile {
				d.LLM = append(d.LLM, job.LLMRow{JobID: id, FileIndex: i, File: ocr.File, ChunkIndex: c, ChunkTotal: rowsPerFile,
					Status: job.RowDone, Content: `{"total":12.5,"currency":"EUR"}`, Model: "m",
					Request: strings.Repeat("r", 2000), RawData: strings.Repeat("w", 500)})
			}
			if _, err := rs.store.FinishOCR(ctx, d); err != nil {
				b.Fatal(err)
			}
		}
	}
	create("job-large", 5, 1, 20<<20)
	create("job-larger", 10, 1, 20<<20)
	create("job-many", 1, 2000, 1000)

	real := func(c *Config, d *Deps) { d.Service, d.Files = rs.svc, rs.svc }
	servers := map[string]*testEnv{
		"gateway": startServer(b, real),
		"stream":  startServer(b, real, func(_ *Config, d *Deps) { d.Results = rs.svc }),
	}
	for _, id := range []string{"job-large", "job-larger", "job-many"} {
		for _, path := range []string{"gateway", "stream", "grpc-unary"} {
			b.Run(id+"/"+path, func(b *testing.B) {
				var peak, bytes uint64
				for b.Loop() {
					peak = max(peak, heapPeak(func() {
						if path == "grpc-unary" {
							_, err := bounded.GetJobResult(auth.WithAccount(ctx, "alice"), &docjobsv1.GetJobResultRequest{Id: id})
							if err != nil && id == "job-many" { // the large ones are refused
								b.Fatal(err)
							}
							return
						}
						env := servers[path]
						req, _ := http.NewRequest("GET", env.baseURL+"/v1/jobs/"+id+"/result", nil)
						req.Header.Set("Authorization", "Bearer "+keyAlice)
						resp, err := http.DefaultClient.Do(req)
						if err != nil {
							b.Fatal(err)
						}
						n, err := io.Copy(io.Discard, resp.Body)
						_ = resp.Body.Close()
						if err != nil || resp.StatusCode != http.StatusOK {
							b.Fatalf("status %d, %v", resp.StatusCode, err)
						}
						bytes = uint64(n)
					}))
				}
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
				b.ReportMetric(float64(bytes)/(1<<20), "body-MiB")
			})
		}
	}
}
