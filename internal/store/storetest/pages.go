package storetest

import (
	"testing"

	"github.com/docjobs/docjobs/internal/store"
)

func testOCRPagesKeepTheFirstAnswerUntilTheJobIsDeleted(t *testing.T, s Store) {
	j := newJob("acct", 2)
	createJob(t, s, j, store.CreateJobParams{})

	_, err := s.GetOCRPage(ctx(t), j.ID, 0, "2/abc")
	isErr(t, "GetOCRPage before any answer", err, store.ErrNotFound)

	noErr(t, "PutOCRPage", s.PutOCRPage(ctx(t), j.ID, 0, "2/abc", []byte(`{"text":"first"}`)))
	noErr(t, "PutOCRPage again", s.PutOCRPage(ctx(t), j.ID, 0, "2/abc", []byte(`{"text":"second"}`)))
	got, err := s.GetOCRPage(ctx(t), j.ID, 0, "2/abc")
	noErr(t, "GetOCRPage", err)
	equal(t, "kept answer", string(got), `{"text":"first"}`)

	_, err = s.GetOCRPage(ctx(t), j.ID, 1, "2/abc")
	isErr(t, "another file's page", err, store.ErrNotFound)

	_, err = s.DeleteJob(ctx(t), "acct", j.ID)
	noErr(t, "DeleteJob", err)
	_, err = s.GetOCRPage(ctx(t), j.ID, 0, "2/abc")
	isErr(t, "GetOCRPage after delete", err, store.ErrNotFound)
}

// MigrationDropsCutRuns checks migration 14 on s: the consensus runs a
// stop cut off, kept by older binaries as unusable outcomes, go; what a
// vendor answered (a refusal too) and OCR pages stay. remigrate takes the
// migration's record away and migrates s again (reopening it if it must),
// returning the store to read from.
func MigrationDropsCutRuns(t *testing.T, s store.Store, remigrate func(t *testing.T) store.Store) {
	t.Helper()
	j := newJob("acct", 1)
	createJob(t, s, j, store.CreateJobParams{})
	pages := []struct {
		key, value string
		kept       bool
	}{
		{"model/0/0/run/0", `{"answer":{"Content":"","Model":"gpt-4.1"},"unusable":"provider call abandoned: stop initiated"}`, false},
		{"model/0/0/run/1", `{"answer":{"Content":"","Model":""},"unusable":"waiting for a free NEURAL_CLIENT_TYPE_PROVIDER_2 slot: stop initiated"}`, false},
		{"model/0/1/run/2", `{"answer":{"Content":""},"unusable":"provider call abandoned: context canceled"}`, false},
		{"model/0/0/run/2", `{"answer":{"Content":"{\"n\":1}"}}`, true},
		{"model/0/2/run/0", `{"answer":{"Content":"\"unusable\":\"provider call abandoned: \""},"unusable":"HTTP 400 Bad Request"}`, true},
		{"model/0/2/run/1", `{"answer":{"Content":"waiting for a free X slot: y"},"unusable":"malformed response: the answer holds no text"}`, true},
		{"1/image/png/markdown/abc", `{"Text":"\"unusable\":\"provider call abandoned: it said so\""}`, true},
	}
	for _, p := range pages {
		noErr(t, "PutOCRPage "+p.key, s.PutOCRPage(ctx(t), j.ID, 0, p.key, []byte(p.value)))
	}
	s = remigrate(t)
	for _, p := range pages {
		got, err := s.GetOCRPage(ctx(t), j.ID, 0, p.key)
		if p.kept {
			noErr(t, "GetOCRPage "+p.key, err)
			equal(t, "kept "+p.key, string(got), p.value)
			continue
		}
		isErr(t, "GetOCRPage of the cut run "+p.key, err, store.ErrNotFound)
	}
}
