package postgres

// EndListenerPID is the server process of s's connection listening for
// job ends, 0 while it has none.
func EndListenerPID(s *Store) uint32 { return s.ends.pid.Load() }
