//go:build unix

package transcript

import (
	"os"
	"syscall"
)

// inode is the file's inode number, part of its identity.
func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
