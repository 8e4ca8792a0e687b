package procgroup

import (
	"sync"
	"unicode/utf8"
)

// Tail is an io.Writer that keeps the last Max bytes written to it (an
// agent command's stdout or stderr: bounded, however much it writes) and
// counts them all. It is safe for concurrent use.
type Tail struct {
	Max int

	mu    sync.Mutex
	buf   []byte
	total int64
}

// NewTail returns a Tail keeping the last max bytes.
func NewTail(max int) *Tail { return &Tail{Max: max} }

// Write implements io.Writer; it never fails.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += int64(len(p))
	if len(p) >= t.Max {
		t.buf = append(t.buf[:0], p[len(p)-t.Max:]...)
		return len(p), nil
	}
	if over := len(t.buf) + len(p) - t.Max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return len(p), nil
}

// Total returns how many bytes were written, kept or not.
func (t *Tail) Total() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}

// String returns what is kept, from its first whole character when the
// start was cut.
func (t *Tail) String() string {
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
