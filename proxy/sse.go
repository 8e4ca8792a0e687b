package proxy

import (
	"bytes"
	"fmt"
	"net/http"
)

// maxEventBytes bounds one server-sent event the proxy reads; a longer one
// is relayed but not read (the stream is then marked unread).
const maxEventBytes = 8 << 20

// sseParser reads server-sent events from the bytes of a stream as they
// are relayed, and hands each complete event to its reader.
type sseParser struct {
	r    streamReader
	line []byte
	name string
	data []byte
	// skip drops the rest of an event that grew too long, up to the blank
	// line that ends it.
	skip     bool
	overflow bool // an event was too long to read
}

// Write implements io.Writer: the relayed bytes, in any chunking.
func (p *sseParser) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			p.grow(b)
			break
		}
		p.grow(b[:i])
		b = b[i+1:]
		p.lineDone()
	}
	return n, nil
}

func (p *sseParser) grow(b []byte) {
	if !p.skip && len(p.line)+len(p.data)+len(b) > maxEventBytes {
		// Too long to read: drop what was kept of the event (all but the
		// start of this line) and the rest of it as it comes.
		p.skip, p.overflow = true, true
		p.line = append([]byte(nil), p.line[:min(len(p.line), 2)]...)
		p.name, p.data = "", nil
	}
	if p.skip {
		// Whether a line is blank ("" or "\r") is all that matters now,
		// and its first two bytes tell.
		b = b[:min(len(b), max(0, 2-len(p.line)))]
	}
	p.line = append(p.line, b...)
}

func (p *sseParser) lineDone() {
	line := bytes.TrimSuffix(p.line, []byte{'\r'})
	p.line = p.line[:0]
	if p.skip {
		p.skip = len(line) > 0 // a blank line ends the dropped event
		return
	}
	switch {
	case len(line) == 0:
		// An event without data (a name alone) is not dispatched, as the
		// SSE standard says.
		if len(p.data) > 0 {
			p.r.event(p.name, p.data)
		}
		p.name, p.data = "", p.data[:0]
	case line[0] == ':': // a comment
	default:
		field, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(field) {
		case "event":
			p.name = string(value)
		case "data":
			if len(p.data) > 0 {
				p.data = append(p.data, '\n')
			}
			p.data = append(p.data, value...)
		}
	}
}

// close dispatches an event the stream ended without a blank line after.
func (p *sseParser) close() {
	if len(p.line) > 0 {
		p.lineDone()
	}
	if len(p.data) > 0 && !p.skip {
		p.r.event(p.name, p.data)
	}
	p.name, p.data, p.skip = "", nil, false
}

// sseWriter writes server-sent events, flushing each.
type sseWriter struct {
	w http.ResponseWriter
}

func newSSE(w http.ResponseWriter) sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return sseWriter{w}
}

func (s sseWriter) send(name string, v any) {
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	data, ok := v.([]byte)
	if !ok {
		data = encode(v)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", data)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}
