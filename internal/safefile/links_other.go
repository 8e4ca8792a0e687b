//go:build !unix

package safefile

import "io/fs"

// Links is how many names (hard links) the file fi describes has, and
// whether the system said: here it does not.
func Links(fi fs.FileInfo) (uint64, bool) { return 0, false }
