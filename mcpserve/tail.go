package mcpserve

import (
	"io"

	"github.com/pikit-go/pikit/internal/procgroup"
)

// multi writes to a tail and a log file; a failing log does not stop the
// agent's output from being kept.
func multi(t *procgroup.Tail, w io.Writer) io.Writer { return &tee{t: t, w: w} }

type tee struct {
	t   *procgroup.Tail
	w   io.Writer
	bad bool
}

func (m *tee) Write(p []byte) (int, error) {
	m.t.Write(p)
	if !m.bad {
		if _, err := m.w.Write(p); err != nil {
			m.bad = true
		}
	}
	return len(p), nil
}
