package sqlstore

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// timeScan scans a timestamp stored natively (time.Time) or as text in
// TimeLayout; it always yields UTC.
type timeScan struct{ dst *time.Time }

func (s timeScan) Scan(v any) error {
	switch v := v.(type) {
	case time.Time:
		*s.dst = v.UTC()
	case string:
		return s.parse(v)
	case []byte:
		return s.parse(string(v))
	case nil:
		*s.dst = time.Time{}
	default:
		return fmt.Errorf("scan timestamp: unsupported %T", v)
	}
	return nil
}

func (s timeScan) parse(v string) error {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return fmt.Errorf("scan timestamp: %w", err)
	}
	*s.dst = t.UTC()
	return nil
}

// jsonScan decodes a JSON text column into dst; empty or null leaves dst at
// its zero value.
type jsonScan struct{ dst any }

func (s jsonScan) Scan(v any) error {
	var b []byte
	switch v := v.(type) {
	case string:
		b = []byte(v)
	case []byte:
		b = v
	case nil:
		return nil
	default:
		return fmt.Errorf("scan json: unsupported %T", v)
	}
	if len(b) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, s.dst); err != nil {
		return fmt.Errorf("scan json: %w", err)
	}
	return nil
}

// jsonText encodes v as JSON text; nil maps and slices become {} and [] so
// that columns are never NULL.
func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encode json: %w", err)
	}
	switch string(b) {
	case "null":
		switch v.(type) {
		case map[string]string:
			return "{}", nil
		default:
			return "[]", nil
		}
	}
	return string(b), nil
}

// emptyToNil normalizes decoded collections: empty ones come back nil, so a
// job reads back the same whether it was written with nil or empty values.
func emptyToNil[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

func emptyMapToNil(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// nullString stores "" as NULL (for optional references).
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// nullBool stores a nil *bool as NULL.
func nullBool(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}

// nullBytes stores nil as NULL and anything else as text (JSON documents).
func nullJSON(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// boolPtr turns a scanned nullable boolean into *bool.
func boolPtr(n sql.NullBool) *bool {
	if !n.Valid {
		return nil
	}
	v := n.Bool
	return &v
}
