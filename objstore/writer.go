package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultFlushEvery is how long a finished cell's line waits, at most,
// before it is uploaded: what a killed process can lose.
const DefaultFlushEvery = 5 * time.Second

// partBytes is the size at which a part is uploaded without waiting.
const partBytes = 8 << 20

// partWriter buffers JSONL lines and uploads them as numbered parts: when
// the oldest line has waited flushEvery, when the buffer reaches
// partBytes, and on close. A part holds whole lines only. One upload runs
// at a time, in order, while the next part fills; a writer that outruns
// the store waits (memory holds three parts at most: one uploading, one
// queued, one filling).
type partWriter struct {
	st     *Store
	u      URL
	sh     Shard
	id     string // this writer's mark in its parts' names
	every  time.Duration
	upload context.Context // survives the run's cancellation: a signal's last part is still sent

	mu      sync.Mutex
	buf     []byte
	timer   *time.Timer
	seq     int // the last part number used
	queue   chan part
	sends   sync.WaitGroup // cuts waiting to queue their part
	done    chan struct{}
	err     error // the first failed upload: every later call returns it
	written int   // parts uploaded
	closed  bool
}

type part struct {
	seq  int
	body []byte
}

func newPartWriter(ctx context.Context, st *Store, u URL, sh Shard, id string, lastSeq int, every time.Duration) *partWriter {
	if every <= 0 {
		every = DefaultFlushEvery
	}
	w := &partWriter{st: st, u: u, sh: sh, id: id, every: every, seq: lastSeq,
		upload: context.WithoutCancel(ctx), queue: make(chan part, 1), done: make(chan struct{})}
	go w.uploader()
	return w
}

func (w *partWriter) uploader() {
	defer close(w.done)
	for p := range w.queue {
		err := w.st.Put(w.upload, w.u, w.sh.partKey(w.u, p.seq, w.id), p.body, nil)
		w.mu.Lock()
		if err != nil && w.err == nil {
			w.err = fmt.Errorf("uploading part %d of %s: %w", p.seq, w.sh, err)
		}
		if err == nil {
			w.written++
		}
		w.mu.Unlock()
	}
}

// Write buffers p; it returns the first upload error, if any.
func (w *partWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	if w.closed {
		return 0, errors.New("write after close")
	}
	w.buf = append(w.buf, p...)
	if len(w.buf) >= partBytes {
		w.cutLocked()
	} else if w.timer == nil && bytes.IndexByte(p, '\n') >= 0 {
		// The first whole line since the last cut (the buffer held none:
		// its last newline went with that part) starts the clock.
		w.timer = time.AfterFunc(w.every, w.tick)
	}
	return len(p), nil
}

func (w *partWriter) tick() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer = nil
	if !w.closed {
		w.cutLocked()
	}
}

// cutLocked queues the buffer's whole lines as the next part; the queue
// holds one, so a second cut while an upload runs waits for it.
func (w *partWriter) cutLocked() {
	i := bytes.LastIndexByte(w.buf, '\n')
	if i < 0 {
		return
	}
	body := w.buf[:i+1]
	// The next part's buffer, sized like this one (the last part's size
	// is the best guess of the next's), so it fills without regrowing.
	tail := len(w.buf) - i - 1
	rest := make([]byte, tail, tail+min(max(len(body), 64<<10), partBytes)+256<<10)
	copy(rest, w.buf[i+1:])
	w.seq++
	seq := w.seq
	w.buf = rest
	if w.timer != nil { // what is left holds no whole line
		w.timer.Stop()
		w.timer = nil
	}
	w.sends.Add(1)
	w.mu.Unlock()
	w.queue <- part{seq: seq, body: body}
	w.sends.Done()
	w.mu.Lock()
}

// Close uploads what is buffered and waits for every upload; it returns
// the last part number used and the first error.
func (w *partWriter) Close() (int, error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		<-w.done
		return w.seq, w.err
	}
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if w.err == nil {
		w.cutLocked()
	}
	w.closed = true
	var err error
	if len(bytes.TrimSpace(w.buf)) > 0 {
		err = fmt.Errorf("%s: %d bytes after the last line were never finished", w.sh, len(w.buf))
	}
	w.mu.Unlock()
	w.sends.Wait()
	close(w.queue)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		err = w.err
	}
	return w.seq, err
}
