package mcpserve

import (
	"bytes"
	"io"
	"strings"

	"github.com/pikit-go/pikit/internal/procgroup"
	"github.com/pikit-go/pikit/target"
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

// redactor passes what is written to it on to w with every secret value
// replaced by target.Redacted, as results are redacted. A secret may
// arrive cut across two writes: the redactor holds back the end of what
// it was given for as long as it could be the start of one (at most the
// longest form of a secret, less a byte), except what ends a line when
// no secret spans lines. Flush writes what is held. It is not safe for
// concurrent use: each stream has its own.
type redactor struct {
	w       io.Writer
	secrets *target.ValueRedactor
	hold    int  // bytes that may be the start of a secret
	lines   bool // no secret holds a newline: a line's end ends any secret
	pending []byte
	err     error
}

func newRedactor(w io.Writer, secrets []string) *redactor {
	r := &redactor{w: w, secrets: target.NewValueRedactor(secrets...), lines: true}
	for _, s := range secrets {
		// A URL-escaped form is at most three bytes a byte.
		r.hold = max(r.hold, 3*len(s)-1)
		r.lines = r.lines && !strings.ContainsAny(s, "\n")
	}
	return r
}

// Write implements io.Writer. It reports the error of the first write to
// w that failed, and drops what follows.
func (r *redactor) Write(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.secrets.Empty() {
		return r.w.Write(p)
	}
	r.pending = append(r.pending, p...)
	r.pending = append(r.pending[:0], r.secrets.Redact(string(r.pending))...)
	cut := len(r.pending) - r.hold
	if r.lines {
		cut = max(cut, bytes.LastIndexByte(r.pending, '\n')+1)
	}
	if cut > 0 {
		if _, err := r.w.Write(r.pending[:cut]); err != nil {
			r.err = err
			return 0, err
		}
		r.pending = append(r.pending[:0], r.pending[cut:]...)
	}
	return len(p), nil
}

// Flush writes what is held back: the stream has ended.
func (r *redactor) Flush() error {
	if r.err != nil || len(r.pending) == 0 {
		return r.err
	}
	_, r.err = r.w.Write(r.pending)
	r.pending = r.pending[:0]
	return r.err
}
