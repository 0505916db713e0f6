//go:build !unix

package cli

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
