package mcpserve

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// relayLines copies a stdio client's messages, one line each, from src to
// the SDK's transport (dst), and answers on reply those it will not pass
// on: a line over MaxMessageBytes gets a JSON-RPC error (id null: it was
// never parsed) as soon as it is known to be too long, and is read on to
// its end and dropped, in memory bounded by MaxMessageBytes. The SDK's own
// bound would end the session instead, without a word to the client.
// dst is closed at the end of src.
func relayLines(src io.Reader, dst *io.PipeWriter, reply io.Writer, notify func(string)) {
	br := bufio.NewReaderSize(src, 64<<10)
	var line []byte
	over := false // the line in hand was refused: skip to its end
	refuse := func() {
		over, line = true, nil
		b, _ := json.Marshal(refusalMessage{JSONRPC: "2.0", Error: refusalError{Code: codeInvalidRequest,
			Message: fmt.Sprintf("pikit mcp: a message over %d bytes, the most pikit mcp reads in one; it was skipped, and the session goes on", MaxMessageBytes)}})
		_, _ = reply.Write(append(b, '\n'))
		if notify != nil {
			notify(fmt.Sprintf("[%s] the client sent a message over %d bytes: refused with a JSON-RPC error and skipped; the session goes on", StdioSession, MaxMessageBytes))
		}
	}
	for {
		chunk, err := br.ReadSlice('\n')
		if !over {
			line = append(line, chunk...)
			// A line may end in "\r\n"; its message is what comes before.
			if n := messageLen(line); n > MaxMessageBytes {
				refuse()
			}
		}
		ended := len(chunk) > 0 && chunk[len(chunk)-1] == '\n'
		switch {
		case ended && over:
			over = false
		case ended || err == io.EOF && len(line) > 0:
			if !ended {
				line = append(line, '\n')
			}
			if _, werr := dst.Write(line); werr != nil {
				return // the session is over
			}
			line = line[:0]
		}
		switch {
		case err == nil || err == bufio.ErrBufferFull:
		case err == io.EOF:
			dst.Close()
			return
		default:
			dst.CloseWithError(err)
			return
		}
	}
}

// messageLen is the length of a line without its line ending.
func messageLen(line []byte) int {
	n := len(line)
	if n > 0 && line[n-1] == '\n' {
		n--
		if n > 0 && line[n-1] == '\r' {
			n--
		}
	}
	return n
}

// lockedWriter makes each Write whole: the SDK writes a message at a time,
// and so does relayLines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
