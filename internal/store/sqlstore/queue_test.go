package sqlstore

import "testing"

func TestDerivedFromIsTheHostIDAndTheIDsHoldNodeDerives(t *testing.T) {
	tests := []struct {
		name, id string
		want     bool
	}{
		{"the host id itself", "vm", true},
		{"the first derived id", "vm-2", true},
		{"the last derived id", "vm-32", true},
		{"past the derived ids", "vm-33", false},
		{"-1 is never derived", "vm-1", false},
		{"a leading zero is another spelling", "vm-02", false},
		{"a sign is another spelling", "vm-+2", false},
		{"another host", "vm2", false},
		{"another host sharing the prefix", "vm-a", false},
		{"a host named after a derived id", "vm-2-2", false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := derivedFrom(tt.id, "vm"); got != tt.want {
				t.Errorf("derivedFrom(%q, \"vm\") = %v, want %v", tt.id, got, tt.want)
			}
		})
	}
}
