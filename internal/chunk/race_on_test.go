//go:build race

package chunk

// raceEnabled thins the exhaustive Unicode walks: the race detector makes
// them thirty times slower and they are single-goroutine, so it finds
// nothing in them.
const raceEnabled = true
