package postgres

import (
	"strings"
	"testing"
)

// Parsing needs no server: these run without DOCJOBS_TEST_POSTGRES_URL.
func TestPoolSize(t *testing.T) {
	tests := []struct {
		name string
		url  string
		cpus int
		want int32
	}{
		{"at least eight on a small machine", "postgres://u@127.0.0.1:5432/db", 2, 8},
		{"two per core on a larger one", "postgres://u@127.0.0.1:5432/db?sslmode=disable", 16, 32},
		{"the URL's own size wins", "postgres://u@127.0.0.1:5432/db?pool_max_conns=3", 16, 3},
		{"so does a DSN's", "host=127.0.0.1 user=u dbname=db pool_max_conns=5", 2, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pc, err := poolConfig(tt.url, tt.cpus)
			if err != nil {
				t.Fatal(err)
			}
			if pc.MaxConns != tt.want {
				t.Errorf("MaxConns = %d, want %d", pc.MaxConns, tt.want)
			}
		})
	}
}

// A URL that does not parse is refused saying why, without the URL: pgx's
// error quotes it whole, a password given as a query parameter included,
// and the error is printed at start.
func TestAURLThatDoesNotParseIsRefusedWithoutItsSecrets(t *testing.T) {
	tests := []struct{ name, url, want string }{
		{"an sslmode pgx does not know", "postgres://u@127.0.0.1:5432/db?sslmode=bogus&password=CANARY-PW", "sslmode is invalid"},
		{"a port that is not a number", "postgres://u:CANARY-PW@127.0.0.1:port/db?sslpassword=CANARY-PW", "invalid port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := poolConfig(tt.url, 2)
			if err == nil {
				t.Fatal("poolConfig accepted the URL")
			}
			if strings.Contains(err.Error(), "CANARY-PW") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q: want %q and no password", err, tt.want)
			}
		})
	}
}
