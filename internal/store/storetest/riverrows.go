package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/docjobs/docjobs/internal/store"
)

// ofJob enqueues step name as a River job of docjobs job jobID, with at
// most attempts attempts.
func ofJob(jobID, name string, attempts int) river.InsertManyParams {
	return river.InsertManyParams{Args: stepArgs{Step: name, JobID: jobID}, InsertOpts: &river.InsertOpts{MaxAttempts: attempts}}
}

// riverRowsOf returns the states of the River rows whose args name job
// jobID, sorted.
func riverRowsOf(t *testing.T, s Store, jobID string) []rivertype.JobState {
	t.Helper()
	rows, err := s.RiverJobsByKind(ctx(t), stepArgs{}.Kind())
	noErr(t, "RiverJobsByKind", err)
	var states []rivertype.JobState
	for _, r := range rows {
		var a stepArgs
		if err := json.Unmarshal(r.EncodedArgs, &a); err != nil {
			t.Fatalf("step args: %v", err)
		}
		if a.JobID == jobID {
			states = append(states, r.State)
		}
	}
	slices.Sort(states)
	return states
}

// A deleted job's River rows name it and its files (and a failed
// download's error names the source): those River finished go with the
// job's delete, one still running is left to end, and goes with the sweep
// once it has. Another job's rows stay.
func testDeleteJobTakesItsRiverRows(t *testing.T, s Store) {
	h := newHarness(t, s, "")
	release := make(chan struct{})
	running := make(chan struct{})
	h.on("done", func(context.Context, *river.Job[stepArgs]) error { return nil })
	h.on("cancel", func(context.Context, *river.Job[stepArgs]) error { return river.JobCancel(errors.New("cancelled")) })
	h.on("fail", func(context.Context, *river.Job[stepArgs]) error {
		return errors.New("download of https://example.com/private/doc.pdf failed")
	})
	h.on("hold", func(context.Context, *river.Job[stepArgs]) error {
		close(running)
		<-release
		return nil
	})
	j := newJob("acct", 1)
	createJob(t, s, j, store.CreateJobParams{Enqueue: []river.InsertManyParams{
		ofJob(j.ID, "done", 5), ofJob(j.ID, "cancel", 5), ofJob(j.ID, "fail", 1),
		ofJob(j.ID, "hold", 5)}}) // a file job still running when its job is deleted
	other := newJob("acct", 1)
	createJob(t, s, other, store.CreateJobParams{Enqueue: []river.InsertManyParams{ofJob(other.ID, "done", 5)}})
	for _, r := range h.wait(4) {
		waitRiverFinalized(t, s, r.JobID)
	}
	<-running
	equal(t, "River rows of the job before its delete", riverRowsOf(t, s, j.ID),
		[]rivertype.JobState{rivertype.JobStateCancelled, rivertype.JobStateCompleted, rivertype.JobStateDiscarded, rivertype.JobStateRunning})

	_, err := s.DeleteJob(ctx(t), "acct", j.ID)
	noErr(t, "DeleteJob", err)
	equal(t, "River rows of the deleted job", riverRowsOf(t, s, j.ID), []rivertype.JobState{rivertype.JobStateRunning})
	equal(t, "River rows of another job", riverRowsOf(t, s, other.ID), []rivertype.JobState{rivertype.JobStateCompleted})
	forgot, err := s.ClearRiverLeftovers(ctx(t), 10)
	noErr(t, "ClearRiverLeftovers", err)
	equal(t, "jobs forgotten while their row runs", forgot, 0)
	equal(t, "River rows of the deleted job after a sweep while it runs", riverRowsOf(t, s, j.ID), []rivertype.JobState{rivertype.JobStateRunning})

	close(release)
	waitRiverFinalized(t, s, h.waitOne().JobID)
	forgot, err = s.ClearRiverLeftovers(ctx(t), 10)
	noErr(t, "ClearRiverLeftovers", err)
	equal(t, "jobs forgotten once their row finished", forgot, 1)
	equal(t, "River rows of the deleted job after the sweep", len(riverRowsOf(t, s, j.ID)), 0)
	equal(t, "River rows of another job after the sweep", riverRowsOf(t, s, other.ID), []rivertype.JobState{rivertype.JobStateCompleted})
	forgot, err = s.ClearRiverLeftovers(ctx(t), 10)
	noErr(t, "ClearRiverLeftovers again", err)
	equal(t, "jobs forgotten by a second sweep", forgot, 0)

	// A job whose rows were all finished leaves nothing for the sweep.
	_, err = s.DeleteJob(ctx(t), "", other.ID) // as retention deletes
	noErr(t, "DeleteJob", err)
	equal(t, "River rows of the other job after its delete", len(riverRowsOf(t, s, other.ID)), 0)
	forgot, err = s.ClearRiverLeftovers(ctx(t), 10)
	noErr(t, "ClearRiverLeftovers", err)
	equal(t, "jobs forgotten after a delete that left nothing", forgot, 0)
}

// waitRiverFinalized waits until River recorded the end of a River job
// (its completer is asynchronous).
func waitRiverFinalized(t *testing.T, s Store, id int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		row, err := s.RiverJob(ctx(t), id)
		noErr(t, "RiverJob", err)
		if row.FinalizedAt != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("River job %d is still %s", id, row.State)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
