package storetest

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// BenchmarkCreateJob measures one create of a one-file job in a store
// holding 1000 active jobs of one account (the default limit): without a
// limit of active jobs; under one, by an account with none active (the
// lock and an empty count); and under one, by the account with 1000 (the
// count at its longest). Run it with a small fixed count
// (-benchtime=200x): each create in that account adds an active job, so
// its count grows with the iterations.
func BenchmarkCreateJob(b *testing.B, open func(b *testing.B) store.Store) {
	for _, bc := range []struct {
		name     string
		limit    int
		ownEmpty bool // each create in an account of its own
	}{
		{"no limit", 0, false},
		{"limit, none active", math.MaxInt32, true},
		{"limit, 1000 active", math.MaxInt32, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := open(b)
			defer s.Close()
			c := b.Context()
			for range 1000 {
				if _, _, err := s.CreateJob(c, store.CreateJobParams{Job: newJob("acct", 1)}); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				account := "acct"
				if bc.ownEmpty {
					account = newID("acct")
				}
				if _, _, err := s.CreateJob(c, store.CreateJobParams{Job: newJob(account, 1), MaxActiveJobs: bc.limit}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkResultRows reads the result of a job of 1000 files and 16
// prompts (16,000 model rows; a file's text 4 KiB, an answer 512 bytes, a
// model call's request 4 KiB and raw answer 1 KiB: 98 MB of rows), finished
// or with every model row still pending. "snapshot" is the ResultRows call
// alone, the read-only transaction that fixes the result (what holds back
// SQLite's checkpoints and PostgreSQL's vacuum); "whole" reads every row
// after it; "GetResult" reads them all in one transaction, what a snapshot
// held for the whole read would cost at the database's own speed.
func BenchmarkResultRows(b *testing.B, open func(b *testing.B) store.Store) {
	for _, bc := range []struct {
		name    string
		pending bool
	}{{"finished", false}, {"running", true}} {
		b.Run(bc.name, func(b *testing.B) {
			s := open(b)
			defer s.Close()
			c := b.Context()
			const files, prompts = 1000, 16
			j := newJob("acct", files)
			for i := range prompts {
				j.Prompts = append(j.Prompts, fmt.Sprint("p", i))
			}
			if _, _, err := s.CreateJob(c, store.CreateJobParams{Job: j}); err != nil {
				b.Fatal(err)
			}
			for f := range files {
				ocr := doneRow(j, f, strings.Repeat("t", 4<<10))
				ocr.Request, ocr.RawData = strings.Repeat("q", 1<<10), strings.Repeat("r", 1<<10)
				d := store.OCRDone{Row: ocr, EndWhenLast: true}
				for p := range prompts {
					r := pendingChunk(j, ocr, 0, 1)
					r.PromptIndex = p
					if !bc.pending {
						r.Status, r.Content = job.RowDone, strings.Repeat("a", 512)
						r.Request, r.RawData = strings.Repeat("q", 4<<10), strings.Repeat("r", 1<<10)
					}
					d.LLM = append(d.LLM, r)
				}
				if _, err := s.FinishOCR(c, d); err != nil {
					b.Fatal(err)
				}
			}
			b.Run("snapshot", func(b *testing.B) {
				for b.Loop() {
					if _, _, err := s.ResultRows(c, "acct", j.ID); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("whole", func(b *testing.B) {
				for b.Loop() {
					_, rows, err := s.ResultRows(c, "acct", j.ID)
					if err != nil {
						b.Fatal(err)
					}
					n := 0
					for _, err := range rows {
						if err != nil {
							b.Fatal(err)
						}
						n++
					}
					if n != files*(prompts+1) {
						b.Fatalf("%d rows, want %d", n, files*(prompts+1))
					}
				}
			})
			b.Run("GetResult", func(b *testing.B) {
				for b.Loop() {
					if _, err := s.GetResult(c, "acct", j.ID); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkCancelMergeJob measures a cancel of a job of one file whose
// first half of model rows is answered (JSON answers of answerKiB KiB) and
// the rest pending: without merge, and with merge on, where the cancel
// merges the answers (before its transaction since hunt mergetx: the
// job row and SQLite's one writer are no longer held while it does). The largest case is at the merge's input limit
// (64 MiB of answers). Each iteration builds its job with the timer stopped.
func BenchmarkCancelMergeJob(b *testing.B, open func(b *testing.B) store.Store) {
	for _, bc := range []struct {
		name             string
		merge            bool
		chunks, answerKB int
	}{
		{"no merge, 100 of 200 answered, 4 KiB each", false, 200, 4},
		{"merge, 100 of 200 answered, 4 KiB each", true, 200, 4},
		{"no merge, 1024 of 2048 answered, 64 KiB each", false, 2048, 64},
		{"merge, 1024 of 2048 answered, 64 KiB each", true, 2048, 64},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := open(b)
			defer s.Close()
			c := b.Context()
			answer := func(i int) string {
				var sb strings.Builder
				fmt.Fprintf(&sb, `{"chunk":%d,"items":[`, i)
				for n := 0; sb.Len() < bc.answerKB<<10-64; n++ {
					if n > 0 {
						sb.WriteByte(',')
					}
					fmt.Fprintf(&sb, `{"id":"%d-%d","name":"item %d of chunk %d","qty":%d}`, i, n, n, i, n%7)
				}
				sb.WriteString("]}")
				return sb.String()
			}
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				j := newJob("acct", 1)
				j.Prompts = []string{"p"}
				j.Merge = job.Merge{Enabled: bc.merge, Scope: "MERGE_SCOPE_FILE"}
				if _, _, err := s.CreateJob(c, store.CreateJobParams{Job: j}); err != nil {
					b.Fatal(err)
				}
				ocr := job.OCRRow{JobID: j.ID, File: j.SourceURLs[0], Status: job.RowDone, Content: "text", OutputFormat: job.FormatPlain}
				rows := make([]job.LLMRow, bc.chunks)
				for k := range rows {
					rows[k] = job.LLMRow{JobID: j.ID, File: ocr.File, ChunkIndex: k, ChunkTotal: bc.chunks, Status: job.RowPending, Input: "chunk"}
				}
				if _, err := s.FinishOCR(c, store.OCRDone{Row: ocr, LLM: rows}); err != nil {
					b.Fatal(err)
				}
				for k := range bc.chunks / 2 {
					r := rows[k]
					r.Status, r.Content = job.RowDone, answer(k)
					if _, err := s.FinishLLM(c, store.LLMDone{Row: r}); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				if _, err := s.CancelJob(c, j.AccountID, j.ID); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFinishLLMGroup finishes a job's 100 model rows (ten files of ten
// chunks, as `docjobs bench` makes them: a chunk and its overlap of about
// 680 bytes each, an answer with an 830-byte request and a 250-byte raw
// answer) in groups of the given size, the last group ending the job: the
// writes a job's burst of answers costs the store, without the provider or
// River. One iteration is one job.
func BenchmarkFinishLLMGroup(b *testing.B, open func(b *testing.B) store.Store) {
	for _, size := range []int{1, 10, 40} {
		b.Run(fmt.Sprintf("group of %d", size), func(b *testing.B) {
			s := open(b)
			defer s.Close()
			c := b.Context()
			chunk, overlap := strings.Repeat("Item 7 costs 42 units. ", 30), strings.Repeat("Item 6 costs 36 units. ", 30)
			request, raw := strings.Repeat("q", 830), strings.Repeat("r", 250)
			for b.Loop() {
				b.StopTimer()
				j := newJob("acct", 10)
				j.Prompts = []string{"Summarize."}
				if _, _, err := s.CreateJob(c, store.CreateJobParams{Job: j}); err != nil {
					b.Fatal(err)
				}
				for f := range 10 {
					ocr := doneRow(j, f, strings.Repeat(chunk, 10))
					d := store.OCRDone{Row: ocr}
					for i := range 10 {
						d.LLM = append(d.LLM, job.LLMRow{JobID: j.ID, FileIndex: f, File: ocr.File, ChunkIndex: i,
							ChunkTotal: 10, Status: job.RowPending, Input: chunk, Overlap: overlap})
					}
					if _, err := s.FinishOCR(c, d); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				// The answers of a burst arrive file after file for each chunk.
				var done []store.LLMDone
				for i := range 10 {
					for f := range 10 {
						done = append(done, store.LLMDone{EndWhenLast: true, Row: job.LLMRow{JobID: j.ID, FileIndex: f,
							ChunkIndex: i, ChunkTotal: 10, Status: job.RowDone, Content: `{"ok":true}`, Model: "m",
							Request: request, RawData: raw, Duration: time.Millisecond, InputTokens: 300, OutputTokens: 5}})
					}
				}
				for len(done) > 0 {
					part := done[:min(size, len(done))]
					done = done[len(part):]
					var wg sync.WaitGroup
					for _, d := range part {
						wg.Go(func() {
							if _, err := s.FinishLLM(c, d); err != nil {
								b.Error(err)
							}
						})
					}
					wg.Wait()
				}
			}
		})
	}
}
