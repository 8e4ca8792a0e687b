//go:build !unix

package matrix_test

import "time"

// cpuTime returns 0: the benchmarks report CPU time on Unix only.
func cpuTime() time.Duration { return 0 }

// cpuTimes returns 0, 0: the benchmarks report CPU time on Unix only.
func cpuTimes() (user, sys time.Duration) { return 0, 0 }
