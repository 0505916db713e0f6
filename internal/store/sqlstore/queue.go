package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/docjobs/docjobs/internal/store"
)

// Work starts a River client working cfg.Workers. It first takes the node
// id cfg.ClientID for this process (or a derived one, see
// store.WorkConfig.DeriveClientID); only then do the River jobs still marked
// running by an earlier incarnation of that id (a node killed mid-job) go
// back to available, so a restarted node resumes its work at once instead of
// after RescueStuckJobsAfter, and a second live process with the same id is
// refused instead of taking the first one's running jobs.
//
// The client runs until stop, not until ctx ends (ctx scopes start-up), so
// that a shutdown signal does not cancel jobs mid-flight: stop waits for
// running jobs until its own ctx ends, then cancels them (bounded by
// HardStopWait) and returns that ctx's error. It releases the node id last.
func (s *Store[TTx]) Work(ctx context.Context, cfg store.WorkConfig) (func(context.Context) error, error) {
	hold, clientID, err := s.holdNode(ctx, cfg)
	if err != nil {
		return nil, err
	}
	release := func() {
		if hold == nil {
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hardStopWait)
		defer cancel()
		if err := hold.Release(rctx); err != nil {
			s.logger.WarnContext(ctx, "store: releasing the node id failed", "client_id", clientID, "err", err)
		}
	}
	stop, err := s.work(ctx, cfg, clientID, hold)
	if err != nil {
		release()
		return nil, err
	}
	if cfg.OnClientID != nil {
		cfg.OnClientID(clientID)
	}
	var once sync.Once
	return func(ctx context.Context) error {
		err := stop(ctx)
		once.Do(release)
		return err
	}, nil
}

// holdNode takes cfg.ClientID, or the first free derived id when allowed.
// It returns a nil hold for an empty ClientID.
func (s *Store[TTx]) holdNode(ctx context.Context, cfg store.WorkConfig) (NodeHold, string, error) {
	if cfg.ClientID == "" {
		return nil, "", nil
	}
	hold, err := s.holdAndClaim(ctx, cfg, cfg.ClientID)
	if err == nil {
		return hold, cfg.ClientID, nil
	}
	if !errors.Is(err, store.ErrNodeHeld) || !cfg.DeriveClientID {
		return nil, "", fmt.Errorf("hold node id %s: %w", cfg.ClientID, err)
	}
	// Derived ids are tried in order, so a process restarted after a crash
	// usually finds its previous id again (the lowest free one) and
	// reclaims its work at once.
	for n := 2; n <= store.MaxDerivedClientIDs; n++ {
		id := cfg.ClientID + "-" + strconv.Itoa(n)
		hold, err := s.holdAndClaim(ctx, cfg, id)
		if errors.Is(err, store.ErrNodeHeld) {
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("hold node id %s: %w", id, err)
		}
		s.logger.WarnContext(ctx, "store: node id held by another running process; working under a derived one",
			"node_id", cfg.ClientID, "client_id", id)
		return hold, id, nil
	}
	return nil, "", fmt.Errorf("hold node id %s or %s-2…%d: %w", cfg.ClientID, cfg.ClientID, store.MaxDerivedClientIDs, store.ErrNodeHeld)
}

// holdAndClaim holds id in the database, then claims it outside
// (cfg.ClaimNode); the returned hold gives up both.
func (s *Store[TTx]) holdAndClaim(ctx context.Context, cfg store.WorkConfig, id string) (NodeHold, error) {
	hold, err := s.backend.HoldNode(ctx, id)
	if err != nil || cfg.ClaimNode == nil {
		return hold, err
	}
	release, err := cfg.ClaimNode(id)
	if err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hardStopWait)
		defer cancel()
		if rerr := hold.Release(rctx); rerr != nil {
			s.logger.WarnContext(ctx, "store: releasing the node id failed", "client_id", id, "err", rerr)
		}
		return nil, err
	}
	return claimedHold{NodeHold: hold, release: release}, nil
}

// claimedHold is a node id held in the database and claimed outside it.
type claimedHold struct {
	NodeHold
	release func()
}

func (h claimedHold) Release(ctx context.Context) error {
	err := h.NodeHold.Release(ctx)
	if h.release != nil {
		h.release()
	}
	return err
}

// work reclaims clientID's jobs and starts the client; hold (nil for no
// node id) is watched for loss until stop.
func (s *Store[TTx]) work(ctx context.Context, cfg store.WorkConfig, clientID string, hold NodeHold) (func(context.Context) error, error) {
	var settle time.Duration
	if hold != nil {
		settle = hold.Settle()
	}
	var left []leftJob
	if clientID != "" {
		// Noted before this client starts: its own jobs, running under
		// the same id, are not the previous holder's to reclaim.
		var err error
		if left, err = s.leftRunning(ctx, clientID); err != nil {
			return nil, err
		}
		if settle == 0 {
			if err := s.reclaim(ctx, clientID, left); err != nil {
				return nil, err
			}
			left = nil
		}
	}
	listens := s.driver.SupportsListener()
	if !listens && cfg.Workers != nil {
		// Registered once per Workers bundle; a second Work with the same
		// bundle finds it there already.
		_ = river.AddWorkerSafely(cfg.Workers, wakeWorker{})
	}
	rc := &river.Config{
		ID:                   clientID,
		Logger:               s.riverLogger,
		Schema:               s.schema,
		Workers:              cfg.Workers,
		Queues:               cfg.Queues,
		PeriodicJobs:         cfg.PeriodicJobs,
		RescueStuckJobsAfter: cfg.RescueStuckJobsAfter,
		FetchPollInterval:    cfg.FetchPollInterval,
		FetchCooldown:        cfg.FetchCooldown,
	}
	// River refuses a poll interval below its fetch cooldown; a caller asking
	// for fast polling means both.
	if p := cfg.FetchPollInterval; p > 0 && p < river.FetchCooldownDefault && (rc.FetchCooldown == 0 || rc.FetchCooldown > p) {
		rc.FetchCooldown = p
	}
	client, err := river.NewClient(s.driver, rc)
	if err != nil {
		return nil, fmt.Errorf("river client: %w", err)
	}
	if err := client.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("start river client: %w", err)
	}
	if !listens && len(cfg.Queues) > 0 {
		s.waker.Store(&waker[TTx]{client: client, queues: cfg.Queues})
	}
	hardWait := cfg.HardStopWait
	if hardWait <= 0 {
		hardWait = hardStopWait
	}
	cancelAll := func(ctx context.Context) {
		hardCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hardWait)
		defer cancel()
		if err := client.StopAndCancel(hardCtx); err != nil {
			s.logger.WarnContext(ctx, "store: river client did not stop", "client_id", clientID, "err", err)
		}
	}
	stopped := make(chan struct{})
	watched := make(chan struct{})
	if clientID != "" && settle > 0 {
		// The id was free, but its previous holder may be alive with a
		// dropped connection, still working the jobs it has running until
		// its next check: taking them at once asked their providers twice.
		go s.reclaimAfter(ctx, clientID, left, settle, stopped, hold.Lost())
	}
	if clientID != "" && cfg.DeriveClientID {
		every := cfg.SiblingSweepEvery
		if every <= 0 {
			every = siblingSweepEvery
		}
		go s.sweepSiblings(ctx, cfg.ClientID, clientID, every, cfg.ClaimNode, stopped)
	}
	go func() {
		var lost <-chan struct{}
		if hold != nil {
			lost = hold.Lost()
		}
		select {
		case <-stopped:
			close(watched)
			return
		case <-lost:
		}
		// Another process took the id and may have handed this client's
		// running jobs back to the queue: working them on would ask their
		// providers twice. Nor may the client stop as usual: River hands
		// a job it stops back (available, its attempt undone) and
		// completes one that returns, each by the job's id wherever it
		// is running, so it would write over the new runner's attempt.
		// OnNodeLost ends the process first; the stop below is for a
		// caller that cannot.
		s.logger.ErrorContext(ctx, "store: node id taken by another process; its running jobs are no longer this process's", "client_id", clientID)
		s.waker.Store(nil)
		if cfg.OnNodeLost != nil {
			cfg.OnNodeLost(fmt.Errorf("node id %s: %w", clientID, store.ErrNodeHeld))
		}
		cancelAll(ctx)
		close(watched)
	}()
	var once sync.Once
	stop := func(ctx context.Context) error {
		once.Do(func() { close(stopped) })
		<-watched
		s.waker.Store(nil)
		err := client.Stop(ctx)
		if err == nil {
			return nil
		}
		cancelAll(ctx)
		return fmt.Errorf("stop river client gracefully: %w", err)
	}
	return stop, nil
}

// leftJob is a River job a previous holder of a node id left running, at
// the attempt it was at.
type leftJob struct {
	id      int64
	attempt int
}

// leftRunning lists the River jobs whose last attempt clientID made and
// that are still running.
func (s *Store[TTx]) leftRunning(ctx context.Context, clientID string) ([]leftJob, error) {
	rows, err := s.query(ctx, s.backend.DB(), `SELECT id, attempt FROM river_job
		WHERE state = 'running' AND `+s.dialect.LastAttemptedBy+` = ?`, clientID)
	if err != nil {
		return nil, fmt.Errorf("river jobs left running by %s: %w", clientID, err)
	}
	defer rows.Close()
	var left []leftJob
	for rows.Next() {
		var j leftJob
		if err := rows.Scan(&j.id, &j.attempt); err != nil {
			return nil, fmt.Errorf("river jobs left running by %s: %w", clientID, err)
		}
		left = append(left, j)
	}
	return left, rows.Err()
}

// reclaimAfter returns to available, once settle has passed, those of left
// still running at the same attempt under clientID (the previous holder
// did not hand them back itself), unless the client stopped or lost the id
// meanwhile.
func (s *Store[TTx]) reclaimAfter(ctx context.Context, clientID string, left []leftJob, settle time.Duration, stopped <-chan struct{}, lost <-chan struct{}) {
	if len(left) == 0 {
		return
	}
	t := time.NewTimer(settle)
	defer t.Stop()
	select {
	case <-stopped:
		return
	case <-lost:
		return
	case <-t.C:
	}
	if err := s.reclaim(context.WithoutCancel(ctx), clientID, left); err != nil {
		s.logger.WarnContext(ctx, "store: reclaiming the jobs of a previous run failed; River's rescuer will", "client_id", clientID, "err", err)
	}
}

// hardStopWait is the default bound on how long stop waits for cancelled
// jobs to return.
const hardStopWait = 10 * time.Second

// reclaim returns to available those of left still running at the same
// attempt under clientID: the caller holds clientID, so whoever made those
// attempts is this node's previous incarnation, and nothing is working
// them (or, after a settle, no longer is).
func (s *Store[TTx]) reclaim(ctx context.Context, clientID string, left []leftJob) error {
	var n int64
	for _, j := range left {
		k, err := s.exec(ctx, s.backend.DB(), `UPDATE river_job SET state = 'available'
			WHERE id = ? AND state = 'running' AND attempt = ? AND `+s.dialect.LastAttemptedBy+` = ?`, j.id, j.attempt, clientID)
		if err != nil {
			return fmt.Errorf("reclaim river jobs of %s: %w", clientID, err)
		}
		n += k
	}
	if n > 0 {
		s.logger.InfoContext(ctx, "store: reclaimed river jobs of a previous run", "client_id", clientID, "jobs", n)
	}
	return nil
}

// siblingSweepEvery is how often a process working under a host-derived id
// looks for the running jobs of its host's other ids that no process holds
// (store.WorkConfig.SiblingSweepEvery).
const siblingSweepEvery = time.Minute

// sweepSiblings reclaims, at start and then every period until stopped,
// the running jobs of base's other ids (base, base-2 …
// base-MaxDerivedClientIDs, own excepted) whose id no live process holds.
// Two processes of one host that restart can take each other's ids, and
// one that never comes back leaves an id nobody takes again: without the
// sweep its jobs waited for River's rescuer (the longest stage timeout
// plus a minute).
func (s *Store[TTx]) sweepSiblings(ctx context.Context, base, own string, every time.Duration, claim func(string) (func(), error), stopped <-chan struct{}) {
	ctx = context.WithoutCancel(ctx)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-stopped:
			return
		case <-t.C:
		}
		ids, err := s.siblingsRunning(ctx, base, own)
		if err != nil {
			s.logger.WarnContext(ctx, "store: looking for jobs of this host's other node ids failed", "client_id", own, "err", err)
		}
		if !s.reclaimSiblings(ctx, ids, claim, stopped) {
			return
		}
		t.Reset(every)
	}
}

// reclaimSiblings reclaims the running jobs of those of ids no live process
// holds. An id is taken only if it is free at two looks the backend's
// window apart: a live holder whose connection dropped (a database
// failover drops them all at once) takes its id back within that window,
// so an id free at the first look only is a live process's, and taking it
// stopped that process. It returns false when the client stopped
// meanwhile.
func (s *Store[TTx]) reclaimSiblings(ctx context.Context, ids []string, claim func(string) (func(), error), stopped <-chan struct{}) bool {
	var free []string
	var window time.Duration
	for _, id := range ids {
		w, err := s.backend.NodeFree(ctx, id)
		if errors.Is(err, store.ErrNodeHeld) {
			continue // alive: its jobs are its own
		}
		if err != nil {
			s.logger.WarnContext(ctx, "store: looking at another node id of this host failed", "node_id", id, "err", err)
			continue
		}
		free = append(free, id)
		window = max(window, w)
	}
	if len(free) == 0 {
		return true
	}
	if window > 0 {
		s.logger.InfoContext(ctx, "store: other node ids of this host are free; their running jobs go back to the queue if the ids are still free after the time a live holder has to take them back",
			"node_ids", free, "after", window)
		t := time.NewTimer(window)
		defer t.Stop()
		select {
		case <-stopped:
			return false
		case <-t.C:
		}
	}
	for _, id := range free {
		s.reclaimSibling(ctx, id, claim)
	}
	return true
}

// siblingsRunning lists the ids of base's family other than own that made
// the last attempt of a running River job.
func (s *Store[TTx]) siblingsRunning(ctx context.Context, base, own string) ([]string, error) {
	rows, err := s.query(ctx, s.backend.DB(), `SELECT DISTINCT `+s.dialect.LastAttemptedBy+` FROM river_job
		WHERE state = 'running'`)
	if err != nil {
		return nil, fmt.Errorf("node ids of running river jobs: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id sql.NullString
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("node ids of running river jobs: %w", err)
		}
		if id.Valid && id.String != own && derivedFrom(id.String, base) {
			ids = append(ids, id.String)
		}
	}
	return ids, rows.Err()
}

// derivedFrom reports whether id is base or one of the ids holdNode derives
// from it.
func derivedFrom(id, base string) bool {
	if id == base {
		return true
	}
	n, ok := strings.CutPrefix(id, base+"-")
	if !ok {
		return false
	}
	k, err := strconv.Atoi(n)
	return err == nil && k >= 2 && k <= store.MaxDerivedClientIDs && strconv.Itoa(k) == n
}

// reclaimSibling takes id if no process holds it, reclaims the jobs it
// left running, and gives it up again. The caller has seen id free a
// window before: a process that still thinks it holds id is paused, or
// cannot reach the database, and taking id makes its attempt to take it
// back fail (the id's generation moves on), so that it stops instead of
// working on what went back to the queue. Before the jobs go back, claim
// (WorkConfig.ClaimNode) claims and gives up what the id owns outside the
// database: serve empties the id's conversion folder, which no live
// process writes to since the id's holder is gone.
func (s *Store[TTx]) reclaimSibling(ctx context.Context, id string, claim func(string) (func(), error)) {
	hold, err := s.backend.HoldNode(ctx, id)
	if errors.Is(err, store.ErrNodeHeld) {
		s.logger.InfoContext(ctx, "store: another node id of this host was taken back; its jobs are its holder's", "node_id", id)
		return
	}
	if err != nil {
		s.logger.WarnContext(ctx, "store: taking another node id of this host failed", "node_id", id, "err", err)
		return
	}
	defer func() {
		rctx, cancel := context.WithTimeout(ctx, hardStopWait)
		defer cancel()
		if err := hold.Release(rctx); err != nil {
			s.logger.WarnContext(ctx, "store: releasing another node id of this host failed", "node_id", id, "err", err)
		}
	}()
	left, err := s.leftRunning(ctx, id)
	if err != nil {
		s.logger.WarnContext(ctx, "store: listing the jobs of another node id of this host failed", "node_id", id, "err", err)
		return
	}
	if claim != nil {
		release, err := claim(id)
		switch {
		case errors.Is(err, store.ErrNodeHeld):
			// A process of another database uses the id's folder: the jobs
			// of this database are still nobody's.
			s.logger.InfoContext(ctx, "store: what another node id of this host owns outside the database is in use; its jobs are reclaimed, the rest left", "node_id", id, "err", err)
		case err != nil:
			s.logger.WarnContext(ctx, "store: claiming another node id of this host failed", "node_id", id, "err", err)
		default:
			release()
		}
	}
	if err := s.reclaim(ctx, id, left); err != nil {
		s.logger.WarnContext(ctx, "store: reclaiming the jobs of another node id of this host failed; River's rescuer will", "node_id", id, "err", err)
	}
}

// NoteRunLimit records limit in riverJob's metadata for its current
// attempt (store.RunLimit), if that attempt is still running.
func (s *Store[TTx]) NoteRunLimit(ctx context.Context, riverJob *rivertype.JobRow, limit time.Duration) error {
	note := store.NewRunLimit(riverJob, limit)
	if note.By == "" {
		return nil // not made by a client: nobody to tell it from
	}
	patch, err := json.Marshal(map[string]store.RunLimit{store.RunLimitKey: note})
	if err != nil {
		return fmt.Errorf("note run limit of river job %d: %w", riverJob.ID, err)
	}
	if _, err := s.exec(ctx, s.backend.DB(), `UPDATE river_job SET metadata = `+s.dialect.MergeRiverMetadata+`
		WHERE id = ? AND state = 'running' AND attempt = ? AND `+s.dialect.LastAttemptedBy+` = ?`,
		string(patch), riverJob.ID, note.Attempt, note.By); err != nil {
		return fmt.Errorf("note run limit of river job %d: %w", riverJob.ID, err)
	}
	return nil
}
