package image

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sync/semaphore"

	"github.com/docjobs/docjobs/internal/provider"
)

// countedDecodes is a decode bound that counts its places: taken, given
// back, and the most held at once. With refuse set it grants none.
type countedDecodes struct {
	sem    *semaphore.Weighted
	refuse bool

	mu                     sync.Mutex
	taken, given, held, hi int
}

func newCountedDecodes(n int64) *countedDecodes {
	return &countedDecodes{sem: semaphore.NewWeighted(n)}
}

func (d *countedDecodes) Acquire(ctx context.Context, n int64) error {
	if d.refuse {
		return errors.New("no place")
	}
	if err := d.sem.Acquire(ctx, n); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.taken++
	d.held++
	d.hi = max(d.hi, d.held)
	return nil
}

func (d *countedDecodes) Release(n int64) {
	d.mu.Lock()
	d.given++
	d.held--
	d.mu.Unlock()
	d.sem.Release(n)
}

func (d *countedDecodes) counts() (taken, given, hi int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.taken, d.given, d.hi
}

// Every decode holds a place of the process's bound (Config.Decodes):
// the pages of image files (Pages.Page, Prepare), the pages re-encoded
// for a consumer (Reencode) and the pages fitted to a vendor (Fit), so
// that the decoded pages in memory at once are as many as it has places,
// however many files and provider calls run. A page within a vendor's
// limits is not decoded and takes none.
func TestEveryDecodeHoldsAPlace(t *testing.T) {
	wide := encodePNGBytes(t, strip(8100, 20))
	var g bytes.Buffer
	if err := gif.Encode(&g, image.NewPaletted(image.Rect(0, 0, 40, 30), color.Palette{color.White, color.Black}), nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		decode func(ctx context.Context, cfg Config) error
		places int
	}{
		{"Prepare", func(ctx context.Context, cfg Config) error {
			_, err := Prepare(ctx, cfg, wide)
			return err
		}, 1},
		{"Reencode", func(ctx context.Context, cfg Config) error {
			_, err := Reencode(ctx, cfg, provider.Document{Data: g.Bytes(), MIME: MIMEGIF})
			return err
		}, 1},
		{"Fit past the limits", func(ctx context.Context, cfg Config) error {
			_, err := Fit(ctx, cfg, provider.Document{Data: wide, MIME: MIMEPNG}, anthropicLimits)
			return err
		}, 1},
		{"Fit within the limits", func(ctx context.Context, cfg Config) error {
			_, err := Fit(ctx, cfg, provider.Document{Data: g.Bytes(), MIME: MIMEGIF}, anthropicLimits)
			return err
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newCountedDecodes(1)
			if err := tt.decode(t.Context(), Config{Decodes: d}); err != nil {
				t.Fatal(err)
			}
			if taken, given, _ := d.counts(); taken != tt.places || given != tt.places {
				t.Errorf("%d places taken, %d given back; want %d", taken, given, tt.places)
			}
			if tt.places == 0 {
				return
			}
			refused := &countedDecodes{refuse: true}
			err := tt.decode(t.Context(), Config{Decodes: refused})
			if err == nil || !strings.Contains(err.Error(), "waiting to decode the image: no place") {
				t.Errorf("with no place to be had: err = %v, want the wait's failure", err)
			}
		})
	}
}

// Three pages fitted at once (three provider calls of one slot) share a
// bound of one place: one is decoded at a time, and all three are sent.
func TestPagesFittedAtOnceShareTheBound(t *testing.T) {
	wide := encodePNGBytes(t, strip(8100, 20))
	d := newCountedDecodes(1)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = Fit(t.Context(), Config{Decodes: d}, provider.Document{Data: wide, MIME: MIMEPNG}, anthropicLimits)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if taken, given, hi := d.counts(); taken != 3 || given != 3 || hi != 1 {
		t.Errorf("places taken %d, given back %d, most held at once %d; want 3, 3, 1", taken, given, hi)
	}
}

// A page whose job ends while it waits for a place is not decoded.
func TestAPageWaitingForAPlaceStopsWithItsJob(t *testing.T) {
	d := newCountedDecodes(1)
	if err := d.Acquire(t.Context(), 1); err != nil { // another page is being decoded
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(errors.New("job cancelled"))
	_, err := Fit(ctx, Config{Decodes: d}, provider.Document{Data: encodePNGBytes(t, strip(8100, 20)), MIME: MIMEPNG}, anthropicLimits)
	if err == nil || err.Error() != "waiting to decode the image: job cancelled" {
		t.Errorf("err = %v, want the job's end while waiting", err)
	}
	if taken, _, _ := d.counts(); taken != 1 {
		t.Errorf("%d places taken, want only the other page's", taken)
	}
}
