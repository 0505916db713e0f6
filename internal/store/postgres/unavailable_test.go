package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"
)

// Only errors of a database that could not be reached are unavailable;
// what the server answered about the statement is not.
func TestOnlyUnreachableDatabaseErrorsAreUnavailable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"connect failed", &pgconn.ConnectError{}, true},
		{"connect failed, wrapped by the store", fmt.Errorf("get job j: %w", &pgconn.ConnectError{}), true},
		{"connection refused", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{"connection reset", fmt.Errorf("read: %w", &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}), true},
		{"connection cut", fmt.Errorf("query: %w", io.ErrUnexpectedEOF), true},
		{"conn closed", fmt.Errorf("query: %w", pgconn.ErrConnClosed), true},
		{"pool closed", fmt.Errorf("acquire: %w", puddle.ErrClosedPool), true},
		{"server shutting down", &pgconn.PgError{Code: "57P01"}, true},
		{"server starting", &pgconn.PgError{Code: "57P03"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"deadlock", &pgconn.PgError{Code: "40P01"}, false},
		{"query cancelled", &pgconn.PgError{Code: "57014"}, false},
		{"syntax error", &pgconn.PgError{Code: "42601"}, false},
		{"not a database error", errors.New("connection refused"), false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isUnavailable(tt.err); got != tt.want {
				t.Errorf("isUnavailable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
	// The caller's own end is never asked about (sqlstore filters it),
	// but a context error is no network error either.
	if isUnavailable(context.Canceled) {
		t.Error("isUnavailable(context.Canceled) = true")
	}
}
