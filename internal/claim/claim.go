// Package claim hands the cells of a plan to sessions that agents open
// themselves, for the servers that run without launching the agent
// (pikit proxy serve, pikit web serve): the runner offers each cell, and
// the first request under a new session id takes the next one on offer.
package claim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/pikit-go/pikit/matrix"
)

// DefaultWait is how long a new session waits for a cell.
const DefaultWait = 30 * time.Second

// Queue is the meeting point of offered cells and new sessions. Its zero
// value is not ready: set Open and Find.
type Queue[S any] struct {
	// Open opens session id on a cell. An error fails the claim and the
	// cell's Offer alike.
	Open func(ctx context.Context, id string, d matrix.Drive) (S, error)
	// Find returns the session open under id, if any.
	Find func(id string) (S, bool)
	// Wait bounds how long a new session waits for a cell (DefaultWait
	// when 0).
	Wait time.Duration
	// Ended and Close, for Serve: the channel closed when a session
	// ends, and what closes it.
	Ended func(S) <-chan struct{}
	Close func(S)

	once   sync.Once
	offers chan *offer[S]
	done   chan struct{}

	mu       sync.Mutex
	claiming map[string]*claiming[S] // new session ids being given a cell
}

// offer is a cell waiting for a session.
type offer[S any] struct {
	d       matrix.Drive
	claimed chan opened[S]
}

type opened[S any] struct {
	s  S
	ok bool
}

// claiming is a claim in progress: the requests that arrive under its id
// meanwhile wait for it and share its session.
type claiming[S any] struct {
	done chan struct{}
	s    S
	err  error
}

func (q *Queue[S]) init() {
	q.once.Do(func() {
		q.offers = make(chan *offer[S])
		q.done = make(chan struct{})
	})
}

// Finish tells sessions that arrive from now on that no cell is left.
func (q *Queue[S]) Finish() {
	q.init()
	q.mu.Lock()
	defer q.mu.Unlock()
	select {
	case <-q.done:
	default:
		close(q.done)
	}
}

// Offer offers the cell to the next new session and returns that session
// once it has opened on the cell.
func (q *Queue[S]) Offer(ctx context.Context, d matrix.Drive) (S, error) {
	q.init()
	var zero S
	o := &offer[S]{d: d, claimed: make(chan opened[S], 1)}
	select {
	case q.offers <- o:
	case <-ctx.Done():
		return zero, ctx.Err()
	}
	select {
	case got := <-o.claimed:
		if !got.ok {
			return zero, errors.New("the session that took this cell could not open")
		}
		return got.s, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// Serve offers the cell, waits for the session that takes it to end,
// and closes it. With ctx done first, it closes the session all the same
// and returns it with ctx's error; a cell no session took returns S's
// zero value.
func (q *Queue[S]) Serve(ctx context.Context, d matrix.Drive) (S, error) {
	s, err := q.Offer(ctx, d)
	if err != nil {
		return s, err
	}
	defer q.Close(s)
	select {
	case <-q.Ended(s):
		return s, nil
	case <-ctx.Done():
		return s, ctx.Err()
	}
}

// ValidID says what is wrong with a session id an agent chose.
func ValidID(id string) error {
	if id == "" || len(id) > 128 || strings.ContainsAny(id, "/?#% \t\r\n") {
		return fmt.Errorf("session id %q: use up to 128 characters (at least one) without /, ?, #, %% or spaces", id)
	}
	return nil
}

// Claim gives a new session id the next cell on offer, or returns the
// session already open under it. Requests that arrive together under one
// new id share one claim: one session, one cell.
func (q *Queue[S]) Claim(ctx context.Context, id string) (S, error) {
	q.init()
	var zero S
	if err := ValidID(id); err != nil {
		return zero, err
	}
	q.mu.Lock()
	if c, ok := q.claiming[id]; ok {
		q.mu.Unlock()
		select {
		case <-c.done:
			return c.s, c.err
		case <-ctx.Done():
			return zero, ctx.Err()
		}
	}
	if s, ok := q.Find(id); ok { // opened since the caller looked
		q.mu.Unlock()
		return s, nil
	}
	c := &claiming[S]{done: make(chan struct{})}
	if q.claiming == nil {
		q.claiming = map[string]*claiming[S]{}
	}
	q.claiming[id] = c
	q.mu.Unlock()
	c.s, c.err = q.take(ctx, id)
	q.mu.Lock()
	delete(q.claiming, id)
	q.mu.Unlock()
	close(c.done)
	return c.s, c.err
}

// take waits for the next cell on offer and opens session id on it.
func (q *Queue[S]) take(ctx context.Context, id string) (S, error) {
	var zero S
	wait := q.Wait
	if wait <= 0 {
		wait = DefaultWait
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var o *offer[S]
	select {
	case o = <-q.offers:
	case <-q.done:
		return zero, errors.New("every cell of the plan has run; no session can open")
	case <-timer.C:
		return zero, fmt.Errorf("no cell was free within %s: every worker has a session open (raise -j)", wait)
	case <-ctx.Done():
		return zero, ctx.Err()
	}
	s, err := q.Open(ctx, id, o.d)
	if err != nil {
		o.claimed <- opened[S]{}
		return zero, err
	}
	o.claimed <- opened[S]{s: s, ok: true}
	return s, nil
}

// NewID is a session id for a session a server opens itself: 16 random
// hex digits.
func NewID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// CellID names the session a driver opens for a cell: its key and random
// bits, so a late request of an earlier run of the same cell finds no
// session.
func CellID(c matrix.Cell) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return c.Key + "-" + hex.EncodeToString(b[:])
}
