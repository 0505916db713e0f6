package sqlstore

import (
	"slices"
	"testing"

	"github.com/docjobs/docjobs/internal/job"
)

// The limit of active jobs counts the statuses listed in activeStatuses;
// they must be exactly the ones that have not ended, or a new status would
// escape the limit (or a finished job hold a place for ever).
func TestActiveStatusesAreTheStatusesThatHaveNotEnded(t *testing.T) {
	all := []job.Status{job.StatusNew, job.StatusRunning, job.StatusComplete, job.StatusFailed, job.StatusCancelled}
	for _, st := range all {
		counted := slices.Contains(activeStatuses, any(string(st)))
		if counted == st.Terminal() {
			t.Errorf("%s: counted as active = %v, terminal = %v", st, counted, st.Terminal())
		}
	}
}
