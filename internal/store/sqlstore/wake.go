package sqlstore

import (
	"context"
	"slices"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// River wakes its producers at once only for jobs inserted outside a
// transaction when the driver has no LISTEN/NOTIFY (SQLite): it cannot see
// when someone else's transaction commits. Every stage hand-off here is
// inserted inside the fan-in transaction, on purpose, so without help each
// hand-off waits for the next fetch poll. After such a commit the store
// makes one small non-transactional insert of a wake job on each queue that
// received work, which makes River fetch that queue now. The wake job is
// unique per queue, so it adds at most one row per queue (until River's
// cleaner removes the completed one); a duplicate insert still wakes.

// wakeArgs is the wake job; it does nothing when worked.
type wakeArgs struct{}

func (wakeArgs) Kind() string { return "wake" }

func (wakeArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 1, UniqueOpts: river.UniqueOpts{ByQueue: true}}
}

type wakeWorker struct {
	river.WorkerDefaults[wakeArgs]
}

func (wakeWorker) Work(context.Context, *river.Job[wakeArgs]) error { return nil }

// waker is the working client of this process and the queues it works.
type waker[TTx any] struct {
	client *river.Client[TTx]
	queues map[string]river.QueueConfig
}

// wake makes this process's River producers fetch queues now. It is a
// latency optimisation: a failure is logged and the poll picks the jobs up.
func (s *Store[TTx]) wake(ctx context.Context, queues []string) {
	w := s.waker.Load()
	if w == nil || len(queues) == 0 {
		return
	}
	slices.Sort(queues)
	var params []river.InsertManyParams
	for _, q := range slices.Compact(queues) {
		if _, ok := w.queues[q]; ok {
			params = append(params, river.InsertManyParams{Args: wakeArgs{}, InsertOpts: &river.InsertOpts{Queue: q}})
		}
	}
	if len(params) == 0 {
		return
	}
	if _, err := w.client.InsertMany(context.WithoutCancel(ctx), params); err != nil {
		s.logger.DebugContext(ctx, "store: waking river producers failed", "queues", queues, "err", err)
	}
}

// queuesOf lists the queues of inserted River jobs.
func queuesOf(res []*rivertype.JobInsertResult) []string {
	out := make([]string, 0, len(res))
	for _, r := range res {
		out = append(out, r.Job.Queue)
	}
	return out
}
