package cli

import (
	"errors"

	"github.com/docjobs/docjobs/internal/chunk"
	"github.com/docjobs/docjobs/internal/worker"
)

// chunker adapts package chunk to the worker. Counters are cheap: the
// encoding behind them is loaded once per process by package chunk.
type chunker struct{}

func (chunker) Split(text, format string, budget, maxChunks int, model string) ([]worker.Chunk, error) {
	counter, err := chunk.NewCounter(model)
	if err != nil {
		return nil, err
	}
	chunks, err := chunk.SplitAtMost(text, format, budget, maxChunks, counter)
	if tooMany := (*chunk.TooManyChunksError)(nil); errors.As(err, &tooMany) {
		return nil, &worker.TooManyChunksError{AtLeast: tooMany.AtLeast, Limit: tooMany.Limit, Budget: tooMany.Budget}
	}
	if err != nil {
		return nil, err
	}
	out := make([]worker.Chunk, len(chunks))
	for i, ch := range chunks {
		out[i] = worker.Chunk{Text: ch.Text, Overlap: ch.Body()[:ch.Overlap]}
	}
	return out, nil
}
