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
