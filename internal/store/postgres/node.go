package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/sqlstore"
)

// nodeLockKey is the advisory lock key of a node id ($1) in the
// connection's schema: processes sharing a schema share a queue, so the id
// is unique per schema. 64 bits, so that two ids colliding (which would
// refuse a process wrongly) is out of the question in practice.
const nodeLockKey = `hashtextextended('docjobs_node.' || current_schema() || '.' || $1::text, 0)`

// defaultNodeCheck is how often a held node id's connection is checked.
const defaultNodeCheck = 5 * time.Second

// nodeCheckTimeout bounds one check or retake. pgx closes a connection
// whose query outlives its context, and closing the holding connection
// frees the id, so a check on a busy server must not give up soon.
const nodeCheckTimeout = 15 * time.Second

// nodeHold holds a node id by a session-level advisory lock on a connection
// of its own, taken out of the pool for the process's life: a pooled
// connection would carry the lock to whoever used it next, and a session
// lock ends with its session, so a killed process frees its id at once.
type nodeHold struct {
	pool   *pgxpool.Pool
	id     string
	check  time.Duration
	logger *slog.Logger

	conn *pgx.Conn // owned by watch until stop is closed
	lost chan struct{}
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

func (b *backend) HoldNode(ctx context.Context, id string) (sqlstore.NodeHold, error) {
	conn, err := lockNode(ctx, b.pool, id)
	if err != nil {
		return nil, err
	}
	h := &nodeHold{pool: b.pool, id: id, check: b.nodeCheck, logger: b.logger, conn: conn,
		lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go h.watch()
	return h, nil
}

// lockNode takes id's lock on a connection of its own; store.ErrNodeHeld
// when another session holds it.
func lockNode(ctx context.Context, pool *pgxpool.Pool, id string) (*pgx.Conn, error) {
	pc, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	conn := pc.Hijack()
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(`+nodeLockKey+`)`, id).Scan(&ok); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("lock node id: %w", err)
	}
	if !ok {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, store.ErrNodeHeld
	}
	return conn, nil
}

func (h *nodeHold) Lost() <-chan struct{} { return h.lost }

// Settle gives a previous holder whose connection dropped two checks to
// notice and cancel its jobs: it checks every h.check, and a dropped
// connection fails its check at once.
func (h *nodeHold) Settle() time.Duration { return 2 * h.check }

// watch checks the connection every h.check. When it has dropped, the
// session and its lock are gone: it takes the id again on a new
// connection, retrying while the database cannot be reached, and reports
// the hold lost only when another process holds the id.
func (h *nodeHold) watch() {
	defer close(h.done)
	t := time.NewTicker(h.check)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), nodeCheckTimeout)
		err := h.conn.Ping(ctx)
		cancel()
		if err == nil {
			continue
		}
		h.logger.Warn("store: the connection holding the node id dropped; taking the id again", "client_id", h.id, "err", err)
		_ = h.conn.Close(context.Background())
		if !h.retake(t.C) {
			return
		}
	}
}

// retake takes the id again, trying at each tick; false when the hold is
// lost or stopped.
func (h *nodeHold) retake(tick <-chan time.Time) bool {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), nodeCheckTimeout)
		conn, err := lockNode(ctx, h.pool, h.id)
		cancel()
		switch {
		case err == nil:
			h.conn = conn
			h.logger.Info("store: node id taken again", "client_id", h.id)
			return true
		case errors.Is(err, store.ErrNodeHeld):
			// Possibly this process's own old session, if the server has
			// not yet noticed it is gone: stopping is the safe side.
			h.logger.Error("store: node id held by another session after the connection dropped", "client_id", h.id)
			h.conn = nil
			close(h.lost)
			return false
		}
		h.logger.Warn("store: taking the node id again failed; retrying", "client_id", h.id, "err", err)
		select {
		case <-h.stop:
			h.conn = nil
			return false
		case <-tick:
		}
	}
}

// Release unlocks the id before closing the connection, so that the id is
// free when Release returns (closing alone frees it when the server gets
// round to ending the session).
func (h *nodeHold) Release(ctx context.Context) error {
	h.once.Do(func() { close(h.stop) })
	<-h.done
	if h.conn == nil {
		return nil
	}
	_, err := h.conn.Exec(ctx, `SELECT pg_advisory_unlock(`+nodeLockKey+`)`, h.id)
	return errors.Join(err, h.conn.Close(ctx))
}
