package sqlstore

import (
	"testing"

	"github.com/riverqueue/river"
)

type plainArgs struct{}

func (plainArgs) Kind() string { return "plain" }

type queuedArgs struct{}

func (queuedArgs) Kind() string                 { return "queued" }
func (queuedArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: "model"} }

// Jobs inserted without reading them back are woken on the queue River
// puts them on.
func TestQueueOfFollowsRiversPrecedence(t *testing.T) {
	tests := []struct {
		name string
		p    river.InsertManyParams
		want string
	}{
		{"args without options", river.InsertManyParams{Args: plainArgs{}}, river.QueueDefault},
		{"the args' own queue", river.InsertManyParams{Args: queuedArgs{}}, "model"},
		{"params override the args", river.InsertManyParams{Args: queuedArgs{}, InsertOpts: &river.InsertOpts{Queue: "other"}}, "other"},
		{"params without a queue keep the args'", river.InsertManyParams{Args: queuedArgs{}, InsertOpts: &river.InsertOpts{Priority: 2}}, "model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := queueOf(tt.p); got != tt.want {
				t.Errorf("queueOf = %q, want %q", got, tt.want)
			}
		})
	}
}
