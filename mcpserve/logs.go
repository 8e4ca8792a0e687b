package mcpserve

import (
	"fmt"
	"os"

	"github.com/pikit-go/pikit/internal/safefile"
)

// Logs is the directory a run keeps each cell's agent output in, as
// {cell key}.stdout and {cell key}.stderr (pikit mcp run --agent-logs).
// Whoever wrote the config can compute the cell keys: every file is
// created new inside the directory, so a symbolic or hard link planted
// under a cell's name is never written through, and a name already taken
// is an error, but for a resumed run, which replaces its own earlier files
// (regular files with no other name).
type Logs struct{ dir *safefile.Dir }

// OpenLogs opens the directory at path for a run's agent logs, making it
// when missing; resume says the run resumes an earlier one into it.
func OpenLogs(path string, resume bool) (*Logs, error) {
	d, err := safefile.Open(path, resume)
	if err != nil {
		return nil, err
	}
	return &Logs{dir: d}, nil
}

// Close releases the directory; a nil Logs has nothing to release.
func (l *Logs) Close() error {
	if l == nil {
		return nil
	}
	return l.dir.Close()
}

// create creates the cell key's two log files.
func (l *Logs) create(key string) (stdout, stderr *os.File, err error) {
	if stdout, err = l.dir.Create(key+".stdout", 0o644); err != nil {
		return nil, nil, fmt.Errorf("agent log: %w", err)
	}
	if stderr, err = l.dir.Create(key+".stderr", 0o644); err != nil {
		stdout.Close()
		return nil, nil, fmt.Errorf("agent log: %w", err)
	}
	return stdout, stderr, nil
}
