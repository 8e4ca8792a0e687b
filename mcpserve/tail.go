package mcpserve

import (
	"io"
	"sync"
	"unicode/utf8"
)

// tail keeps the last max bytes written to it, and counts them all.
type tail struct {
	mu    sync.Mutex
	max   int
	buf   []byte
	total int64
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += int64(len(p))
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return len(p), nil
	}
	if over := len(t.buf) + len(p) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return len(p), nil
}

// String returns what is kept, from its first whole character when the
// start was cut.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if t.total > int64(len(b)) {
		for i := 0; i < len(b) && i < utf8.UTFMax && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	return string(b)
}

// multi writes to a tail and a log file; a failing log does not stop the
// agent's output from being kept.
func multi(t *tail, w io.Writer) io.Writer { return &tee{t: t, w: w} }

type tee struct {
	t   *tail
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
