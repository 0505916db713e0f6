package postgres

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestOnlyDeadlocksAndSerializationFailuresAreRetried(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"deadlock", &pgconn.PgError{Code: "40P01"}, true},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, true},
		{"deadlock wrapped by the store", fmt.Errorf("delete job j: %w", &pgconn.PgError{Code: "40P01"}), true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"foreign key violation", &pgconn.PgError{Code: "23503"}, false},
		{"lock timeout", &pgconn.PgError{Code: "55P03"}, false},
		{"query cancelled", &pgconn.PgError{Code: "57014"}, false},
		{"not a database error", errors.New("deadlock detected"), false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isRetryable(tt.err); got != tt.want {
				t.Errorf("isRetryable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
