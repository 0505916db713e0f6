package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/docjobs/docjobs/internal/store"
)

// Work starts a River client working cfg.Workers. Before it starts, the River
// jobs still marked running by an earlier incarnation of cfg.ClientID (a
// node killed mid-job) go back to available, so a restarted node resumes its
// work at once instead of after RescueStuckJobsAfter.
//
// The client runs until stop, not until ctx ends (ctx scopes start-up), so
// that a shutdown signal does not cancel jobs mid-flight: stop waits for
// running jobs until its own ctx ends, then cancels them (bounded by
// hardStopWait) and returns that ctx's error.
func (s *Store[TTx]) Work(ctx context.Context, cfg store.WorkConfig) (func(context.Context) error, error) {
	if cfg.ClientID != "" {
		if err := s.reclaim(ctx, cfg.ClientID); err != nil {
			return nil, err
		}
	}
	listens := s.driver.SupportsListener()
	if !listens && cfg.Workers != nil {
		// Registered once per Workers bundle; a second Work with the same
		// bundle finds it there already.
		_ = river.AddWorkerSafely(cfg.Workers, wakeWorker{})
	}
	rc := &river.Config{
		ID:                   cfg.ClientID,
		Logger:               s.logger,
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
	stop := func(ctx context.Context) error {
		s.waker.Store(nil)
		err := client.Stop(ctx)
		if err == nil {
			return nil
		}
		hardCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hardStopWait)
		defer cancel()
		if hardErr := client.StopAndCancel(hardCtx); hardErr != nil {
			s.logger.WarnContext(ctx, "store: river client did not stop", "client_id", cfg.ClientID, "err", hardErr)
		}
		return fmt.Errorf("stop river client gracefully: %w", err)
	}
	return stop, nil
}

// hardStopWait bounds how long stop waits for cancelled jobs to return.
const hardStopWait = 10 * time.Second

// reclaim returns to available the River jobs whose last attempt was made by
// clientID and that are still running: that client is this node's previous
// incarnation, so nothing is working them.
func (s *Store[TTx]) reclaim(ctx context.Context, clientID string) error {
	n, err := s.exec(ctx, s.backend.DB(), `UPDATE river_job SET state = 'available'
		WHERE state = 'running' AND `+s.dialect.LastAttemptedBy+` = ?`, clientID)
	if err != nil {
		return fmt.Errorf("reclaim river jobs of %s: %w", clientID, err)
	}
	if n > 0 {
		s.logger.InfoContext(ctx, "store: reclaimed river jobs of a previous run", "client_id", clientID, "jobs", n)
	}
	return nil
}
