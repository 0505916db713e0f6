//go:build race

package chunk

// raceEnabled thins the exhaustive Unicode walks and shortens the inputs
// and steps of the slowest single-goroutine tests (see raceOr): the race
// detector makes them seven to thirty times slower and finds nothing in them.
const raceEnabled = true
