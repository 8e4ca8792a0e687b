//go:build unix

package safefile

import (
	"io/fs"
	"syscall"
)

// Links is how many names (hard links) the file fi describes has, and
// whether the system said.
func Links(fi fs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Nlink), true
}
