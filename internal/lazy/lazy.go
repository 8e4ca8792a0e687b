// Package lazy compiles a package's regular expressions on first use,
// not at start-up: pikit has hundreds, and compiling them all before any
// command ran was most of what `pikit --help` cost.
package lazy

import (
	"regexp"
	"sync"
)

// Regexp returns a function that compiles expr on its first call and
// returns the same *regexp.Regexp from then on. Like regexp.MustCompile,
// it panics on a bad expression (on first use): the expressions it is
// given are fixed at build time, and the package's tests use each.
func Regexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
