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

// nodeLockHolder is the server process holding node id $1's lock in this
// database, 0 when none: advisory locks are per database, and pg_locks
// lists the whole server's. A bigint key is split into classid (high 32
// bits) and objid, with objsubid 1.
const nodeLockHolder = `SELECT coalesce(max(pid), 0) FROM pg_locks
	WHERE locktype = 'advisory' AND objsubid = 1 AND granted
	AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND ((classid::bigint << 32) | objid::bigint) = ` + nodeLockKey

// defaultNodeCheck is how often a held node id's connection is checked.
const defaultNodeCheck = 5 * time.Second

// defaultNodeCheckTimeout bounds one check or retake. pgx closes a
// connection whose query outlives its context, and closing the holding
// connection frees the id, so a check on a busy server must not give up
// soon.
const defaultNodeCheckTimeout = 15 * time.Second

// nodeGeneration marks a take of the id for good (see migration 13): run on
// the holding session once it holds the id's lock, so that two takes are
// never at once.
const nodeGeneration = `INSERT INTO node_generations (node_id, generation) VALUES ($1, 1)
	ON CONFLICT (node_id) DO UPDATE SET generation = node_generations.generation + 1
	RETURNING generation`

// nodeHold holds a node id by a session-level advisory lock on a connection
// of its own, taken out of the pool for the process's life: a pooled
// connection would carry the lock to whoever used it next, and a session
// lock ends with its session, so a killed process frees its id at once.
type nodeHold struct {
	pool   *pgxpool.Pool
	id     string
	check  time.Duration
	wait   time.Duration // bound on one check or retake
	logger *slog.Logger
	hooks  nodeHooks
	// generation is the id's generation this hold set when it took the
	// id: a retake that finds another took the id meanwhile.
	generation int64

	conn *pgx.Conn // owned by watch until stop is closed
	lost chan struct{}
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// nodeHooks let tests stand in for a process paused at the wrong moment;
// nil in production.
type nodeHooks struct {
	// check runs before each check of a held id's connection.
	check func()
	// looked runs after HoldNode, NodeFree or a retake looked at id,
	// saying whether it was free.
	looked func(id string, free bool)
	// retaken runs after a hold whose connection dropped took its id
	// again and kept it.
	retaken func(id string)
}

func (b *backend) HoldNode(ctx context.Context, id string) (sqlstore.NodeHold, error) {
	conn, err := lockNode(ctx, b.pool, id)
	if b.hooks.looked != nil {
		b.hooks.looked(id, err == nil)
	}
	if err != nil {
		return nil, err
	}
	h := &nodeHold{pool: b.pool, id: id, check: b.nodeCheck, wait: b.nodeCheckTimeout, logger: b.logger, hooks: b.hooks,
		conn: conn, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	if err := conn.QueryRow(ctx, nodeGeneration, id).Scan(&h.generation); err != nil {
		unlockNode(ctx, conn, id)
		return nil, fmt.Errorf("node id %s: new generation: %w", id, err)
	}
	go h.watch()
	return h, nil
}

// NodeFree takes id's lock and gives it up in one statement, on a pooled
// connection (which thus never keeps it), setting no generation: a
// holder whose connection dropped may still take the id back as its own.
// A sweep calls it for its first look at an id (see sqlstore's
// sweepSiblings), and holds the id only if it is still free after the
// returned window, the longest a live holder takes to take it back: the
// next tick of its check, that check's ping (up to the check timeout,
// when the connection is gone without a word) and one retake (as long).
func (b *backend) NodeFree(ctx context.Context, id string) (time.Duration, error) {
	var free bool
	err := b.pool.QueryRow(ctx, `SELECT CASE WHEN pg_try_advisory_lock(`+nodeLockKey+`)
		THEN pg_advisory_unlock(`+nodeLockKey+`) ELSE false END`, id).Scan(&free)
	if err != nil {
		return 0, fmt.Errorf("look at node id %s: %w", id, err)
	}
	if b.hooks.looked != nil {
		b.hooks.looked(id, free)
	}
	if !free {
		return 0, store.ErrNodeHeld
	}
	return b.nodeCheck + 2*b.nodeCheckTimeout, nil
}

// unlockNode gives id up and closes conn, the connection holding it.
func unlockNode(ctx context.Context, conn *pgx.Conn, id string) {
	ctx = context.WithoutCancel(ctx)
	_, _ = conn.Exec(ctx, `SELECT pg_advisory_unlock(`+nodeLockKey+`)`, id)
	_ = conn.Close(ctx) // frees it all the same, once the server notices
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
// the hold lost when another process holds the id, or took it meanwhile
// (the id's generation moved on).
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
		if h.hooks.check != nil {
			h.hooks.check()
		}
		ctx, cancel := context.WithTimeout(context.Background(), h.wait)
		err := h.conn.Ping(ctx)
		cancel()
		if err == nil {
			continue
		}
		h.logger.Warn("store: the connection holding the node id dropped; taking the id again", "client_id", h.id, "err", err)
		old := h.conn.PgConn().PID()
		_ = h.conn.Close(context.Background())
		if !h.retake(t.C, old) {
			return
		}
	}
}

// retake takes the id again, trying at each tick; false when the hold is
// lost or stopped. The id being free is not enough: a process that took
// it meanwhile (a sibling's sweep, which gives it up once it has handed
// this process's running jobs back to the queue) set a new generation, and
// this process's jobs may now be running elsewhere too.
//
// old is the server process of the dropped connection. A client reads
// its session's FATAL before that session has exited and freed the id,
// and a half-open connection's session lives until the server notices:
// the id held by old is this process's own hold still (nobody else can
// take it meanwhile), so retake waits for old to end, for as long as one
// retake may take (h.wait), before it takes the id for another's.
func (h *nodeHold) retake(tick <-chan time.Time, old uint32) bool {
	var heldByOld time.Time // when a retake first found old holding the id
	for {
		ctx, cancel := context.WithTimeout(context.Background(), h.wait)
		conn, err := lockNode(ctx, h.pool, h.id)
		if h.hooks.looked != nil {
			h.hooks.looked(h.id, err == nil)
		}
		var generation int64
		var holder int32
		switch {
		case err == nil:
			// Read once the lock is held: whoever set a generation held
			// it then, so none can be set from now on.
			if err = conn.QueryRow(ctx, `SELECT generation FROM node_generations WHERE node_id = $1`, h.id).Scan(&generation); err != nil {
				unlockNode(ctx, conn, h.id)
				err = fmt.Errorf("read the generation: %w", err)
			}
		case errors.Is(err, store.ErrNodeHeld):
			// 0 when the holder let go since: try again too.
			if herr := h.pool.QueryRow(ctx, nodeLockHolder, h.id).Scan(&holder); herr != nil {
				err = fmt.Errorf("find the node id's holder: %w", herr)
			}
		}
		cancel()
		ownOld := errors.Is(err, store.ErrNodeHeld) && (holder == 0 || uint32(holder) == old)
		firstOwnOld := ownOld && heldByOld.IsZero()
		if firstOwnOld {
			heldByOld = time.Now()
		}
		switch {
		case err == nil && generation == h.generation:
			h.conn = conn
			h.logger.Info("store: node id taken again", "client_id", h.id)
			if h.hooks.retaken != nil {
				h.hooks.retaken(h.id)
			}
			return true
		case err == nil:
			unlockNode(context.Background(), conn, h.id)
			h.logger.Error("store: node id was taken by another process while the connection holding it was down, and its running jobs may have been handed back to the queue",
				"client_id", h.id, "generation", h.generation, "now", generation)
			h.conn = nil
			close(h.lost)
			return false
		case ownOld && time.Since(heldByOld) < h.wait:
			if firstOwnOld {
				h.logger.Warn("store: the dropped connection's session still holds the node id; waiting for the server to end it",
					"client_id", h.id, "pid", old, "for", h.wait)
			}
		case ownOld:
			h.logger.Error("store: the dropped connection's session still holds the node id; giving it up",
				"client_id", h.id, "pid", old, "waited", time.Since(heldByOld).Round(time.Millisecond))
			h.conn = nil
			close(h.lost)
			return false
		case errors.Is(err, store.ErrNodeHeld):
			h.logger.Error("store: node id held by another session after the connection dropped", "client_id", h.id, "pid", holder)
			h.conn = nil
			close(h.lost)
			return false
		default:
			h.logger.Warn("store: taking the node id again failed; retrying", "client_id", h.id, "err", err)
		}
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
