// Package riverlog adapts docjobs' logger for River's own log lines.
//
// River writes through the slog.Logger it is given, and two of its habits
// do not fit docjobs' log stream: it names its integer job ids job_id, the
// key docjobs gives its UUID job ids, so a query on job_id finds two kinds
// of value; and its producers log every failed poll, which during a
// database outage is one ERROR line per queue every poll interval (about
// sixty a second). Handler renames the key and collapses the repeats.
//
// A third: a maintenance service stopped while it opens a transaction logs
// the cancellation as an ERROR (River 0.47's PeriodicJobEnqueuer does), so
// an alert on level=ERROR fires at a clean stop. Handler writes such a line
// at INFO (see stopped).
package riverlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// DefaultWindow is how long identical warnings and errors are collapsed
// into one summary line.
const DefaultWindow = 10 * time.Second

// JobIDKey is the attribute River's lines carry its own job id under, and
// RiverJobIDKey what it becomes.
const (
	JobIDKey      = "job_id"
	RiverJobIDKey = "river_job_id"
)

// New returns a logger for River that writes through next: River's job_id
// attributes are renamed river_job_id, and a warning or error identical to
// one logged less than window ago (same level, message and attributes) is
// not written; instead, at the end of each window in which repeats came, one
// line with the same message says how many (attributes "repeated" and
// "within"). The first occurrence is always written at once. window <= 0
// takes DefaultWindow.
func New(next slog.Handler, window time.Duration) *slog.Logger {
	return slog.New(NewHandler(next, window))
}

// NewHandler is New's handler.
func NewHandler(next slog.Handler, window time.Duration) slog.Handler {
	if window <= 0 {
		window = DefaultWindow
	}
	return &handler{next: next, lim: &limiter{window: window, seen: map[string]*repeat{}}}
}

type handler struct {
	next slog.Handler
	lim  *limiter
	// prefix is the attributes and groups added by WithAttrs and WithGroup,
	// as text: part of what makes two lines identical.
	prefix string
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	attrs = renameAll(attrs)
	return &handler{next: h.next.WithAttrs(attrs), lim: h.lim, prefix: h.prefix + attrsText(attrs)}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(name), lim: h.lim, prefix: h.prefix + name + "{"}
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(rename(a))
		return true
	})
	if out.Level >= slog.LevelWarn && stopped(ctx, out) {
		out.Level = slog.LevelInfo
	}
	if out.Level < slog.LevelWarn {
		return h.next.Handle(ctx, out)
	}
	if !h.lim.first(h, out) {
		return nil
	}
	return h.next.Handle(ctx, out)
}

// limiter holds, across a handler and the handlers derived from it, the
// warnings and errors seen within the current window.
type limiter struct {
	window time.Duration
	mu     sync.Mutex
	seen   map[string]*repeat
}

// repeat is one kind of line within its window: how many repeats came and
// the latest of them, for the summary.
type repeat struct {
	count int
	last  slog.Record
	h     slog.Handler
}

// first reports whether r is to be written: it is the first like it in the
// window. A repeat is counted instead.
func (l *limiter) first(h *handler, r slog.Record) bool {
	key := h.prefix + "\x00" + r.Level.String() + "\x00" + r.Message + "\x00" + recordText(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	if rep, ok := l.seen[key]; ok {
		rep.count++
		rep.last = r.Clone()
		rep.h = h.next
		return false
	}
	l.seen[key] = &repeat{}
	time.AfterFunc(l.window, func() { l.flush(key) })
	return true
}

// flush ends key's window: a summary of its repeats if there were any, and
// then another window, so that a failure that goes on is summed up once a
// window; a window without repeats forgets the line, so that the next
// occurrence is written in full.
func (l *limiter) flush(key string) {
	l.mu.Lock()
	rep := l.seen[key]
	if rep == nil || rep.count == 0 {
		delete(l.seen, key)
		l.mu.Unlock()
		return
	}
	count, last, next := rep.count, rep.last, rep.h
	l.seen[key] = &repeat{}
	time.AfterFunc(l.window, func() { l.flush(key) })
	l.mu.Unlock()

	sum := slog.NewRecord(time.Now(), last.Level, last.Message, last.PC)
	last.Attrs(func(a slog.Attr) bool {
		sum.AddAttrs(a)
		return true
	})
	sum.AddAttrs(slog.Int("repeated", count), slog.String("within", l.window.String()))
	_ = next.Handle(context.Background(), sum)
}

// stopped reports whether r is River telling that its own context was
// cancelled: River logs a service's failures with the service's context,
// which is cancelled only when the client stops, and the line's error (under
// "error" or "err", as text or as an error) is that cancellation. A line
// with another error, or whose context is live, is a failure and keeps its
// level.
func stopped(ctx context.Context, r slog.Record) bool {
	if !errors.Is(ctx.Err(), context.Canceled) {
		return false
	}
	found, onlyCancel := false, true
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "error" && a.Key != "err" {
			return true
		}
		found = true
		onlyCancel = onlyCancel && isCancel(a.Value.Resolve())
		return true
	})
	return found && onlyCancel
}

// isCancel reports whether v is context.Canceled, or River's text of it,
// which pgx and database/sql may have prefixed with what they were doing.
func isCancel(v slog.Value) bool {
	if v.Kind() == slog.KindAny {
		if err, ok := v.Any().(error); ok {
			return errors.Is(err, context.Canceled)
		}
	}
	text := v.String()
	return text == context.Canceled.Error() || strings.HasSuffix(text, ": "+context.Canceled.Error())
}

func renameAll(attrs []slog.Attr) []slog.Attr {
	out := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		out[i] = rename(a)
	}
	return out
}

// rename gives River's job id its own key; attributes in groups are
// renamed too, since a group does not make the key less ambiguous to a
// query on the flattened name.
func rename(a slog.Attr) slog.Attr {
	if a.Key == JobIDKey {
		a.Key = RiverJobIDKey
	}
	if a.Value.Kind() == slog.KindGroup {
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(renameAll(a.Value.Group())...)}
	}
	return a
}

func recordText(r slog.Record) string {
	var b strings.Builder
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, "%s=%v\x00", a.Key, a.Value.Resolve())
		return true
	})
	return b.String()
}

func attrsText(attrs []slog.Attr) string {
	var b strings.Builder
	for _, a := range attrs {
		fmt.Fprintf(&b, "%s=%v\x00", a.Key, a.Value.Resolve())
	}
	return b.String()
}
