package sqlite

// EndLooks is how many times s has read PRAGMA data_version looking for
// job ends committed by other processes.
func EndLooks(s *Store) int64 { return s.ends.looks.Load() }
