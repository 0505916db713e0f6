package sqlstore

import (
	"testing"

	"github.com/docjobs/docjobs/internal/job"
)

// The partial indexes and isPending spell PENDING as a literal; it must be
// the status the rows are written with.
func TestIsPendingNamesRowPending(t *testing.T) {
	if want := "status = '" + string(job.RowPending) + "'"; isPending != want {
		t.Errorf("isPending = %q, want %q", isPending, want)
	}
}
