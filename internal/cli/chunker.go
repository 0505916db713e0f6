package cli

import (
	"github.com/docjobs/docjobs/internal/chunk"
	"github.com/docjobs/docjobs/internal/worker"
)

// chunker adapts package chunk to the worker. Counters are cheap: the
// encoding behind them is loaded once per process by package chunk.
type chunker struct{}

func (chunker) Split(text, format string, budget int, model string) ([]worker.Chunk, error) {
	counter, err := chunk.NewCounter(model)
	if err != nil {
		return nil, err
	}
	chunks, err := chunk.Split(text, format, budget, counter)
	if err != nil {
		return nil, err
	}
	out := make([]worker.Chunk, len(chunks))
	for i, ch := range chunks {
		out[i] = worker.Chunk{Text: ch.Text, Overlap: ch.Body()[:ch.Overlap]}
	}
	return out, nil
}
