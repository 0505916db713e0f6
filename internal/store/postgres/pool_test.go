package postgres

import "testing"

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
