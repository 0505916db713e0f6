// Package storetest is the suite every store.Store implementation must pass.
// It runs against real databases and a real River client: the fan-in methods
// are mostly called from inside River workers, as the pipeline calls them.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// RiverInspector shows the River jobs of a store; the suite needs it to
// check that fan-in inserted exactly the River jobs it should, and that
// FinishJob completed its own.
type RiverInspector interface {
	// RiverJob returns one River job; store.ErrNotFound when missing.
	RiverJob(ctx context.Context, id int64) (*rivertype.JobRow, error)
	// RiverJobsByKind returns the River jobs of one kind, by id.
	RiverJobsByKind(ctx context.Context, kind string) ([]*rivertype.JobRow, error)
}

// Store is what the suite tests: the contract plus River inspection.
type Store interface {
	store.Store
	RiverInspector
}

// Run runs the suite. open returns a fresh, empty, migrated store for one
// test; the suite closes it (open may register cleanups that run after).
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s Store)
	}{
		{"CreateJobRoundTripsEveryField", testCreateJobRoundTrip},
		{"CreateJobWritesRowsSecretsAndRiverJobsTogether", testCreateJobWritesEverything},
		{"CreateJobReplaysOrRejectsAReusedIdempotencyKey", testIdempotency},
		{"ConcurrentCreatesWithOneKeyMakeOneJob", testConcurrentIdempotency},
		{"JobsOfAnotherAccountAreNotFound", testAccountIsolation},
		{"ListJobsPagesNewestFirst", testListJobsPages},
		{"ListJobsFiltersByStatus", testListJobsStatusFilter},
		{"ListJobsRejectsForeignAndCorruptTokens", testListJobsBadTokens},
		{"ListJobsPagesAreStableUnderConcurrentCreates", testListJobsConcurrentCreates},
		{"ListJobsBoundsAPageInBytes", testListJobsBoundedInBytes},
		{"CancelJobEndsPendingWork", testCancelJob},
		{"AJobEndedEarlyKeepsItsMergedAnswers", testAJobEndedEarlyKeepsItsMergedAnswers},
		{"AFileNeverStoredNamesItsSourceURL", testAFileNeverStoredNamesItsSourceURL},
		{"DeleteJobRemovesEverythingAndReturnsBlobKeys", testDeleteJob},
		{"DeleteJobRecordsItsFilesForRemovalUntilDone", testDeleteJobRecordsFileRemoval},
		{"DeleteJobTakesItsRiverRowsWithItOnceFinished", testDeleteJobTakesItsRiverRows},
		{"FilesOfAJobMayShareOneStoredCopy", testSharedCopy},
		{"MarkRunningMovesOnlyNewJobs", testMarkRunning},
		{"FilesAreScopedToTheirAccount", testFiles},
		{"DeleteUploadRemovesOnlyTheAccountsUpload", testDeleteUpload},
		{"ExpiredUploadsListsOldUploadsButNeverJobCopies", testExpiredUploads},
		{"RecordedFileIDsNamesTheIDsAFileRecordHolds", testRecordedFileIDs},
		{"KnownJobIDsNamesJobsTheirPendingRemovalsAndTheirCopies", testKnownJobIDs},
		{"ListUploadsPagesNewestFirstWithoutJobCopies", testListUploadsPages},
		{"ListUploadsRejectsForeignAndCorruptTokens", testListUploadsBadTokens},
		{"ListUploadsBoundsAPageInBytes", testListUploadsBoundedInBytes},
		{"CreateJobPastTheActiveJobsLimitIsRefused", testActiveJobsLimit},
		{"AReplayAtTheActiveJobsLimitReturnsTheOriginalJob", testActiveJobsLimitReplay},
		{"ConcurrentCreatesNeverPassTheActiveJobsLimit", testConcurrentCreatesAtTheLimit},
		{"CreateUploadPastTheQuotaIsRefused", testUploadQuota},
		{"ConcurrentUploadsNeverPassTheQuota", testConcurrentUploadsAtTheQuota},
		{"APIKeysMapHashesToAccounts", testAPIKeys},
		{"APIKeysAreListedAndDeletedByHash", testListAndDeleteAPIKeys},
		{"ConcurrentDeletesOfOneKeyHaveOneWinner", testConcurrentDeletesOfOneKey},
		{"AccountExistsOnceItHasAKeyAModeAJobOrAnUpload", testAccountExists},
		{"ServiceKeyKeepsTheFirstKeyStored", testServiceKey},
		{"StoredServiceKeyLooksWithoutStoring", testStoredServiceKey},
		{"AccountExtractionModeDefaultsToHybrid", testExtractionMode},
		{"JobCountsByStatusCountsEveryStatus", testJobCounts},
		{"FinishOCRRecordsTheRowAndWhatFollows", testFinishOCR},
		{"FinishOCRFansInExactlyOnce", testFinishOCRFanIn},
		{"FinishOCROnAFinishedRowChangesNothing", testFinishOCROnAFinishedRow},
		{"FinishOCRLeavesACancelledJobAlone", testFinishOCRCancelled},
		{"FinishOCRChangesNothingWhenTheDatabaseRefusesPartOfIt", testFinishOCRAtomic},
		{"FinishJobEndsTheJobOnce", testFinishJob},
		{"FinishJobFailsRowsStillPending", testFinishJobPendingRows},
		{"HandOffInsertsAndCompletesItsJobTogether", testHandOff},
		{"TheLastRowEndsAJobThatDoesNotMerge", testTheLastRowEndsAJobThatDoesNotMerge},
		{"WorkReclaimsJobsOfThePreviousIncarnation", testWorkReclaims},
		{"WorkDerivesANodeIDOnlyWhenAllowed", testWorkDerivesANodeIDOnlyWhenAllowed},
		{"WorkReclaimsTheJobsOfAHostIDNoProcessHolds", testWorkReclaimsSiblings},
		{"WorkClaimsTheNodeIDOutsideTheDatabase", testWorkClaimsTheNodeIDOutsideTheDatabase},
		{"WorkStopWaitsForRunningJobs", testWorkStop},
		{"AnAttemptNotesItsRunLimitForTheRescuer", testNoteRunLimit},
		{"CommittedHandOffsAreWorkedWithoutWaitingForThePoll", testHandOffsWakeTheQueue},
		{"WebhookAttemptsAreRecordedAndEndWithTheSecret", testWebhookAttemptsAndRetention},
		{"OCRPagesKeepTheFirstAnswerUntilTheJobIsDeleted", testOCRPagesKeepTheFirstAnswerUntilTheJobIsDeleted},
		{"FinishLLMFansInOnceAndKeepsInputsApart", testFinishLLMFansInOnceAndKeepsInputsApart},
		{"FinishLLMBurst", testFinishLLMBurst},
		{"FinishLLMWritesEveryField", testFinishLLMWritesEveryField},
		{"ConcurrentFinishesOfOneRowEndItOnce", testConcurrentFinishesOfOneRow},
		{"FinishOCRManyChunks", testFinishOCRManyChunks},
		{"FileModelRowsIsWhatARetriedFileHasLeft", testFileModelRows},
		{"ResultToFinishLeavesOutTheTextAndTheExchanges", testResultToFinish},
		{"ResultToFinishReadsAnswersWithinTheBudget", testResultToFinishReadsAnswersWithinTheBudget},
		{"ResultRowsIsGetResultOneRowAtATime", testResultRowsIsGetResultOneRowAtATime},
		{"ResultRowsOfANewJob", testResultRowsOfANewJob},
		{"ResultRowsReadsLargeAndManyRows", testResultRowsReadsLargeAndManyRows},
		{"ResultRowsIsOneSnapshot", testResultRowsIsOneSnapshot},
		{"ResultRowsOfAJobDeletedWhileReadEndsInNotFound", testResultRowsOfAJobDeletedWhileRead},
		{"ExpireJobFailsWhatIsLeftOnce", testExpireJobFailsWhatIsLeftOnce},
		{"EndingAJobGivesFilesStillBeingRecognizedTheirOCRFailedRow", testEndingAJobGivesFilesStillBeingRecognizedTheirOCRFailedRow},
		{"JobProgressCountsTerminalRowsOfTheAccountsJob", testJobProgressCountsTerminalRows},
		{"WatchEndSignalsEveryEndInThisProcess", testWatchEndSignalsEveryEndInThisProcess},
		{"DeleteAndCancelRaceTheFinishes", testDeleteAndCancelRaceTheFinishes},
		{"TextWithNULOrInvalidUTF8IsStoredAlike", testTextWithNULOrInvalidUTF8IsStoredAlike},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			raw := open(t)
			t.Cleanup(func() {
				if err := raw.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
			})
			s, ok := raw.(Store)
			if !ok {
				t.Fatalf("%T does not implement storetest.RiverInspector", raw)
			}
			tt.fn(t, s)
		})
	}
}

// ctx returns a context that ends with the test.
func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// newID returns a random id with a readable prefix.
func newID(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + "_" + hex.EncodeToString(b)
}

// baseTime is a fixed creation time with nanoseconds and a zone, so that the
// suite sees truncation to microseconds and conversion to UTC.
var baseTime = time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.FixedZone("UTC+2", 2*3600))

// newJob returns a minimal NEW job of account with n source URLs.
func newJob(account string, n int) *job.Job {
	j := &job.Job{
		ID:             newID("job"),
		AccountID:      account,
		Status:         job.StatusNew,
		Neural:         job.Neural{Type: "NEURAL_CLIENT_TYPE_PROVIDER_1", Model: "m", ChunkBudgetTokens: job.DefaultChunkBudgetTokens},
		OCR:            job.OCR{Provider: "NEURAL_CLIENT_TYPE_PROVIDER_1", Model: "ocr"},
		ExtractionMode: job.ExtractionHybrid,
		ConsensusMode:  "CONSENSUS_MODE_UNSPECIFIED",
		RequestHash:    "hash-1",
		Created:        time.Now(),
	}
	for i := range n {
		j.SourceURLs = append(j.SourceURLs, "https://example.com/doc"+string(rune('a'+i))+".txt")
	}
	return j
}

// createJob creates j and fails the test on error.
func createJob(t *testing.T, s store.Store, j *job.Job, p store.CreateJobParams) *job.Job {
	t.Helper()
	p.Job = j
	got, replayed, err := s.CreateJob(ctx(t), p)
	if err != nil {
		t.Fatalf("CreateJob: %v", err)
	}
	if replayed {
		t.Fatalf("CreateJob of a new job: replayed = true")
	}
	return got
}

func getJob(t *testing.T, s store.Store, id string) *job.Job {
	t.Helper()
	j, err := s.GetJob(ctx(t), "", id)
	if err != nil {
		t.Fatalf("GetJob(%s): %v", id, err)
	}
	return j
}

func getResult(t *testing.T, s store.Store, id string) *job.Result {
	t.Helper()
	r, err := s.GetResult(ctx(t), "", id)
	if err != nil {
		t.Fatalf("GetResult(%s): %v", id, err)
	}
	return r
}

// equal fails the test when got and want differ.
func equal[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}

// isErr fails the test unless errors.Is(err, want).
func isErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: error = %v, want %v", what, err, want)
	}
}

func noErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
