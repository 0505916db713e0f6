package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/docjobs/docjobs/internal/fetch"
)

// FileRemovalSweepArgs start one sweep for deleted jobs whose stored files
// are still recorded as to be removed.
type FileRemovalSweepArgs struct{}

// Kind is the River job kind.
func (FileRemovalSweepArgs) Kind() string { return "file_removal_sweep" }

// InsertOpts: sweeps are idempotent and only River's leader schedules them.
func (FileRemovalSweepArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueFinalize, MaxAttempts: 3}
}

// removalSweepEvery is how often the sweep runs: a deleted job's files
// outlive a crash of the process that deleted it by about this plus
// Config.RemovalGrace.
const removalSweepEvery = time.Minute

// What a write cut off by a crash leaves in storage: no record names it, so
// neither a delete nor retention reaches it, and the bytes are (part of) a
// user's document.
//   - file://: a write is staged as <key>.<hex time>.tmp beside its key
//     (fileblob's no_tmp_dir) and renamed into place at Close. Under
//     uploads/ a staged file untouched for staleStagingAge is one no
//     process is writing: an upload takes 30 minutes at most (api's
//     uploadTimeLimit). A job's own (jobs/<id>/) go with the job.
//   - s3://: a write past 16 MiB is a multipart upload, invisible to
//     listings and billed until completed or aborted; under uploads/ and
//     jobs/ one begun staleMultipartAge ago is abandoned (a download is
//     bounded by DOCJOBS_FETCH_TOTAL_TIMEOUT, an upload by its time limit).
//   - both: an upload whose bytes were stored but whose record was not
//     (a crash in between) is whole and named by nothing; see
//     sweepUploads. So is what is stored under jobs/<id>/ for a job id
//     the database does not know (a reset database's jobs, a deleted
//     job's late copy a crash left); see sweepJobs.
//
// Listing a prefix is not free, so the removal sweep does this once per
// stagingSweepEvery per process.
const (
	stagingSweepEvery = time.Hour
	staleStagingAge   = time.Hour
	staleMultipartAge = 24 * time.Hour
)

type removalWorker struct {
	river.WorkerDefaults[FileRemovalSweepArgs]
	cfg  Config
	deps Deps

	now         func() time.Time // nil: time.Now; tests move the clock
	stagingMu   sync.Mutex
	lastStaging time.Time // when this process last swept staging
}

// Work removes the River rows deleted jobs left running or waiting (see
// Store.ClearRiverLeftovers) once River finished them, then the stored
// files of jobs deleted more than Config.RemovalGrace ago whose removal is
// still recorded: the process that deleted them died before it was done,
// or the storage refused. A job whose files still cannot be removed keeps
// its record for the next sweep.
func (w *removalWorker) Work(ctx context.Context, _ *river.Job[FileRemovalSweepArgs]) error {
	if _, err := w.deps.Store.ClearRiverLeftovers(ctx, sweepBatch); err != nil {
		// The files come first: the next sweep, a minute on, tries again.
		w.deps.Logger.Warn("river rows of deleted jobs not removed yet; the next sweep tries again", "err", err)
	}
	if w.deps.Bucket == nil {
		return nil // nothing is stored here to remove
	}
	pending, err := w.deps.Store.PendingFileRemovals(ctx, time.Now().Add(-w.cfg.RemovalGrace), sweepBatch)
	if err != nil {
		return err
	}
	for _, r := range pending {
		errs := fetch.RemoveDeletedJob(ctx, w.deps.Bucket, w.cfg.StorageDir, w.deps.Store, r.JobID, r.Keys)
		if err := errors.Join(errs...); err != nil {
			if ctx.Err() != nil {
				return err
			}
			w.deps.Logger.Warn("stored files of a deleted job not removed; kept for the next sweep",
				"job_id", r.JobID, "account_id", r.AccountID, "err", err)
			continue
		}
		w.deps.Logger.Info("stored files of a deleted job removed by the sweep",
			"job_id", r.JobID, "account_id", r.AccountID, "deleted", r.Deleted)
	}
	return w.sweepStaging(ctx)
}

// sweepStaging removes the staged writes crashes left (see staleStagingAge),
// at most once per stagingSweepEvery. What cannot be removed is logged and
// tried again at the next one.
func (w *removalWorker) sweepStaging(ctx context.Context) error {
	now := time.Now
	if w.now != nil {
		now = w.now
	}
	if !w.stagingMu.TryLock() {
		return nil // a sweep of this process is at it
	}
	defer w.stagingMu.Unlock()
	if t := now(); !w.lastStaging.IsZero() && t.Sub(w.lastStaging) < stagingSweepEvery {
		return nil
	}
	w.lastStaging = now()
	cutoff := now().Add(-staleStagingAge)
	var errs []error
	// Only the storage's own database judges what no record names, and only
	// what was written after it claimed the storage.
	since, err := ClaimStorage(ctx, w.deps.Store, w.deps.Bucket)
	owned := err == nil
	if err != nil {
		errs = append(errs, fmt.Errorf("uploads and job copies no record names are not removed: %w", err))
	}
	errs = append(errs, w.sweepUploads(ctx, cutoff, since, owned))
	if owned {
		errs = append(errs, w.sweepJobs(ctx, cutoff, since))
	}
	var client *s3.Client
	if w.deps.Bucket.As(&client) {
		errs = append(errs, w.abortStaleUploads(ctx, client, now().Add(-staleMultipartAge)))
	}
	if err := errors.Join(errs...); err != nil {
		if ctx.Err() != nil {
			return err
		}
		if errors.Is(err, ErrStorageOwned) {
			// Every process of this database stops at its next owner check
			// (StorageGuard); this one says so in the meantime.
			w.deps.Logger.Error("the storage belongs to another database: this database's processes must not write there", "err", err)
			return nil
		}
		w.deps.Logger.Warn("writes a crash cut off not all removed; tried again at the next sweep", "err", err)
	}
	return nil
}

// unrecordedBatch is how many unrecorded-looking uploads one store query
// asks about: an S3 listing page.
const unrecordedBatch = 1000

// sweepUploads removes what a crash left under uploads/ and was last
// written before cutoff:
//   - on file://, staged writes (*.tmp), and the account's upload folder
//     once empty;
//   - on any storage, uploads no file record names: a process killed
//     between an upload's bytes and its record (api.StoreUpload) leaves a
//     whole document that nothing else would ever remove. An upload takes
//     at most 30 minutes and its record a minute more (api's
//     uploadTimeLimit, recordTimeout), and S3 dates an object by when its
//     upload began, so one an hour old whose id no record holds is not
//     being recorded. Only keys of the upload layout
//     (uploads/<account>/<UUID>) written after this database claimed the
//     storage (since, when owned) are candidates; anything else is not
//     ours to judge.
//
// It reads accounts first, as sweepJobs reads job ids: on file:// the
// uploads folder's entries, on S3 a listing by "/", one entry per account;
// then it lists each account's keys. One listing of all of uploads/ costs
// fileblob a walk of the whole tree per page of 1,000 keys (30,000 keys:
// 6–11 s, growing with their square); an account's listing walks only its
// folder. Keys right under uploads/ belong to no account and stay.
func (w *removalWorker) sweepUploads(ctx context.Context, cutoff, since time.Time, owned bool) error {
	staged := w.cfg.StorageDir != ""
	if !staged && !owned {
		return nil
	}
	var errs []error
	var batch []*blob.ListObject
	flush := func() {
		if len(batch) > 0 {
			errs = append(errs, w.removeUnrecorded(ctx, batch))
			batch = batch[:0]
		}
	}
	// Ids are looked up unrecordedBatch at a time across accounts: a
	// query per account would be one per handful of uploads.
	account := func(name string) {
		it := w.deps.Bucket.List(&blob.ListOptions{Prefix: "uploads/" + name + "/"})
		for {
			obj, err := it.Next(ctx)
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("list the uploads of account folder %s: %w", name, err))
				return
			}
			if obj.IsDir || !obj.ModTime.Before(cutoff) {
				continue
			}
			if strings.HasSuffix(obj.Key, ".tmp") {
				if staged {
					errs = append(errs, w.removeStaged(ctx, obj))
				}
				continue
			}
			if !owned || obj.ModTime.Before(since) {
				continue
			}
			if _, ok := uploadKeyID(obj.Key); ok {
				if batch = append(batch, obj); len(batch) == unrecordedBatch {
					flush()
				}
			}
		}
	}
	err := w.eachFolder(ctx, "uploads", account)
	flush()
	return errors.Join(append(errs, err)...)
}

// removeStaged removes a staged write a crash cut off, and the account's
// upload folder once empty.
func (w *removalWorker) removeStaged(ctx context.Context, obj *blob.ListObject) error {
	if err := w.deps.Bucket.Delete(ctx, obj.Key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("remove staged upload %s: %w", obj.Key, err)
	}
	w.deps.Logger.Info("partial upload a crash cut off removed", "key", obj.Key, "size", obj.Size,
		"last_written", obj.ModTime.UTC().Format(time.RFC3339))
	return fetch.RemoveUploadFolder(w.cfg.StorageDir, obj.Key)
}

// removeUnrecorded removes those of objs (upload keys) whose id no file
// record holds.
func (w *removalWorker) removeUnrecorded(ctx context.Context, objs []*blob.ListObject) error {
	ids := make([]string, len(objs))
	for i, obj := range objs {
		ids[i], _ = uploadKeyID(obj.Key)
	}
	recorded, err := w.deps.Store.RecordedFileIDs(ctx, ids)
	if err != nil {
		return fmt.Errorf("uploads no record names: %w", err)
	}
	var errs []error
	for i, obj := range objs {
		if recorded[ids[i]] {
			continue
		}
		if err := w.deps.Bucket.Delete(ctx, obj.Key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			errs = append(errs, fmt.Errorf("remove unrecorded upload %s: %w", obj.Key, err))
			continue
		}
		w.deps.Logger.Info("upload a crash left unrecorded removed", "key", obj.Key, "size", obj.Size,
			"last_written", obj.ModTime.UTC().Format(time.RFC3339))
		if err := fetch.RemoveUploadFolder(w.cfg.StorageDir, obj.Key); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// sweepJobs removes what is stored under jobs/<id>/ for a job id no job,
// no pending removal of a deleted job's files and no file record holds,
// written after this database claimed the storage (since) and before
// cutoff: a job's files otherwise go with the job (a delete, retention, a
// removal row the sweep finishes), so nothing would ever remove these.
// They are what a database reset leaves (the old database's jobs, once
// the storage is claimed again, are no longer named) or a crash between
// a deleted job's removal and a late attempt's copy. A job's row is
// written before anything of it is stored and its removal row in the
// transaction that deletes it, so a job id none of the three names has
// no process to write under it any more; the hour is the same margin the
// uploads have. Folders whose name is not a job id of the service's
// making (jobs/job-1/…), and keys right under jobs/, stay.
//
// It reads job ids, not keys (a job has one copy per stored source): on
// file:// the jobs folder's entries, read in pieces (fileblob walks the
// whole tree again for every page of a listing, which for 30,000 keys
// took seconds and grows with their square); on S3 a listing by "/", one
// entry per job. Only an unknown job's own keys are listed.
func (w *removalWorker) sweepJobs(ctx context.Context, cutoff, since time.Time) error {
	var errs []error
	var batch []string
	flush := func() {
		if len(batch) > 0 {
			errs = append(errs, w.removeUnknownJobs(ctx, batch, cutoff, since))
			batch = batch[:0]
		}
	}
	add := func(name string) {
		if isServiceID(name) {
			if batch = append(batch, name); len(batch) == unrecordedBatch {
				flush()
			}
		}
	}
	err := w.eachFolder(ctx, "jobs", add)
	flush()
	return errors.Join(append(errs, err)...)
}

// eachFolder calls add with the name of every folder in the storage's
// top-level folder top ("uploads", "jobs"): on file:// read from the
// directory, since fileblob walks the whole tree again for every page of a
// listing; elsewhere listed by "/", one entry per folder.
func (w *removalWorker) eachFolder(ctx context.Context, top string, add func(name string)) error {
	if w.cfg.StorageDir != "" {
		if err := readFolders(filepath.Join(w.cfg.StorageDir, top), add); err != nil {
			return fmt.Errorf("read the %s folder: %w", top, err)
		}
		return nil
	}
	it := w.deps.Bucket.List(&blob.ListOptions{Prefix: top + "/", Delimiter: "/"})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", top, err)
		}
		if obj.IsDir {
			add(strings.TrimSuffix(strings.TrimPrefix(obj.Key, top+"/"), "/"))
		}
	}
}

// readFolders calls add with the name of every folder in dir, read a
// piece at a time; a dir that does not exist has none.
func readFolders(dir string, add func(name string)) error {
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	for {
		entries, err := f.ReadDir(unrecordedBatch)
		for _, e := range entries {
			if e.IsDir() {
				add(e.Name())
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// removeUnknownJobs removes, for those of ids no job, pending removal or
// file record holds, what is stored under the job's prefix and was
// written after since and before cutoff, and on file:// the job's folder
// once empty.
func (w *removalWorker) removeUnknownJobs(ctx context.Context, ids []string, cutoff, since time.Time) error {
	known, err := w.deps.Store.KnownJobIDs(ctx, ids)
	if err != nil {
		return fmt.Errorf("job files no record names: %w", err)
	}
	var errs []error
	for _, id := range ids {
		if known[id] {
			continue
		}
		removed := false
		it := w.deps.Bucket.List(&blob.ListOptions{Prefix: fetch.JobKeyPrefix(id)})
		for {
			obj, err := it.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("list stored files of unknown job %s: %w", id, err))
				break
			}
			if obj.IsDir || !obj.ModTime.Before(cutoff) || obj.ModTime.Before(since) {
				continue
			}
			if err := w.deps.Bucket.Delete(ctx, obj.Key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
				errs = append(errs, fmt.Errorf("remove stored file of unknown job %s: %w", obj.Key, err))
				continue
			}
			removed = true
			w.deps.Logger.Info("stored file of a job no record names removed", "key", obj.Key, "size", obj.Size,
				"last_written", obj.ModTime.UTC().Format(time.RFC3339))
		}
		if removed && w.cfg.StorageDir != "" {
			// os.Remove takes only an empty folder: one holding a file
			// older than the claim, or written since, stays.
			err := os.Remove(filepath.Join(w.cfg.StorageDir, "jobs", id))
			if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.EEXIST) {
				errs = append(errs, fmt.Errorf("remove the folder of unknown job %s: %w", id, err))
			}
		}
	}
	return errors.Join(errs...)
}

// isServiceID reports whether s is an id of the service's making, the
// text of a UUID.
func isServiceID(s string) bool {
	u, err := uuid.Parse(s)
	return err == nil && u.String() == s
}

// uploadKeyID is the file id of key when key has the layout of an upload
// (uploads/<escaped account>/<id>, api.StoreUpload) with an id of the
// service's making, the text of a UUID.
func uploadKeyID(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, "uploads/")
	if !ok {
		return "", false
	}
	acct, id, ok := strings.Cut(rest, "/")
	if !ok || acct == "" || strings.Contains(id, "/") {
		return "", false
	}
	if a, err := url.PathUnescape(acct); err != nil || url.PathEscape(a) != acct {
		return "", false
	}
	u, err := uuid.Parse(id)
	if err != nil || u.String() != id {
		return "", false
	}
	return id, true
}

// abortStaleUploads aborts the multipart uploads under uploads/ and jobs/
// begun before cutoff.
func (w *removalWorker) abortStaleUploads(ctx context.Context, client *s3.Client, cutoff time.Time) error {
	name, prefix, err := s3Location(ctx, w.deps.Bucket)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range []string{prefix + "uploads/", prefix + "jobs/"} {
		pages := s3.NewListMultipartUploadsPaginator(client, &s3.ListMultipartUploadsInput{Bucket: &name, Prefix: aws.String(p)})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				errs = append(errs, fmt.Errorf("list multipart uploads under %s: %w", p, err))
				break
			}
			for _, u := range page.Uploads {
				if u.Initiated == nil || !u.Initiated.Before(cutoff) {
					continue
				}
				_, err := client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &name, Key: u.Key, UploadId: u.UploadId})
				if err != nil {
					errs = append(errs, fmt.Errorf("abort multipart upload of %s: %w", aws.ToString(u.Key), err))
					continue
				}
				w.deps.Logger.Info("multipart upload a crash cut off aborted", "key", aws.ToString(u.Key),
					"initiated", u.Initiated.UTC().Format(time.RFC3339))
			}
		}
	}
	return errors.Join(errs...)
}

// errLocated stops the listing s3Location starts before it is sent.
var errLocated = errors.New("located")

// s3Location is the S3 bucket name and key prefix (a prefix=… of the
// storage URL) behind bucket: s3blob shows them only in the request of a
// listing, which is stopped before it is sent.
func s3Location(ctx context.Context, bucket *blob.Bucket) (name, prefix string, err error) {
	it := bucket.List(&blob.ListOptions{Prefix: "uploads/", BeforeList: func(as func(any) bool) error {
		var in *s3.ListObjectsV2Input
		var legacy *s3.ListObjectsInput
		switch {
		case as(&in):
			name, prefix = aws.ToString(in.Bucket), aws.ToString(in.Prefix)
		case as(&legacy):
			name, prefix = aws.ToString(legacy.Bucket), aws.ToString(legacy.Prefix)
		}
		return errLocated
	}})
	if _, err := it.Next(ctx); !errors.Is(err, errLocated) {
		return "", "", fmt.Errorf("find the S3 bucket's name: %w", err)
	}
	if name == "" {
		return "", "", errors.New("find the S3 bucket's name: s3blob's listing shows no request")
	}
	return name, strings.TrimSuffix(prefix, "uploads/"), nil
}

// removeLeftovers removes what is stored under the prefix of job jobID,
// which no longer exists, and its folder: a copy an attempt stored after
// the delete had removed the job's files, or while it did. Such a copy was
// never recorded, so the file's River job is what still names it: an error
// here is the River job's, and its retry tries again.
func (w *fileWorker) removeLeftovers(ctx context.Context, jobID string) error {
	if w.deps.Bucket == nil {
		return nil
	}
	if err := errors.Join(fetch.RemoveDeletedJob(ctx, w.deps.Bucket, w.cfg.StorageDir, w.deps.Store, jobID, nil)...); err != nil {
		return fmt.Errorf("file of deleted job %s: remove what was stored: %w", jobID, err)
	}
	return nil
}
