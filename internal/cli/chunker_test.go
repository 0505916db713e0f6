package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/docjobs/docjobs/internal/worker"
)

func TestTheChunkerTellsTheWorkerHowFarOverTheLimitATextIs(t *testing.T) {
	text := strings.Repeat("A sentence of a few words that fills the page.\n\n", 400)
	all, err := chunker{}.Split(text, "markdown", 100, 0, "gpt-4o")
	if err != nil || len(all) < 10 {
		t.Fatalf("%d chunks, err %v; want a text of ten or more", len(all), err)
	}
	if got, err := (chunker{}).Split(text, "markdown", 100, len(all), "gpt-4o"); err != nil || len(got) != len(all) {
		t.Fatalf("at the limit: %d chunks, err %v; want all %d", len(got), err, len(all))
	}
	_, err = chunker{}.Split(text, "markdown", 100, 3, "gpt-4o")
	tooMany := (*worker.TooManyChunksError)(nil)
	if !errors.As(err, &tooMany) || tooMany.Limit != 3 || tooMany.Budget != 100 || tooMany.AtLeast <= 3 {
		t.Fatalf("err = %v, want a worker.TooManyChunksError over a limit of 3 at budget 100", err)
	}
}
