package claim

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pikit-go/pikit/matrix"
)

type session struct {
	id   string
	cell string
}

func newQueue(failOpen string) (*Queue[*session], map[string]*session, *sync.Mutex) {
	var mu sync.Mutex
	open := map[string]*session{}
	q := &Queue[*session]{
		Open: func(_ context.Context, id string, d matrix.Drive) (*session, error) {
			if id == failOpen {
				return nil, errors.New("cannot open")
			}
			mu.Lock()
			defer mu.Unlock()
			s := &session{id: id, cell: d.Cell.Key}
			open[id] = s
			return s, nil
		},
		Find: func(id string) (*session, bool) {
			mu.Lock()
			defer mu.Unlock()
			s, ok := open[id]
			return s, ok
		},
		Wait: time.Second,
	}
	return q, open, &mu
}

func drive(key string) matrix.Drive { return matrix.Drive{Cell: matrix.Cell{Key: key}} }

// TestClaimsMeetOffers: each new id takes one offered cell; requests
// under one new id at once share its claim; a known id finds its session.
func TestClaimsMeetOffers(t *testing.T) {
	q, _, _ := newQueue("")
	ctx := context.Background()
	got := make(chan *session, 2)
	for _, key := range []string{"a", "b"} {
		go func() {
			s, err := q.Offer(ctx, drive(key))
			if err != nil {
				t.Error(err)
			}
			got <- s
		}()
	}
	var wg sync.WaitGroup
	twins := make([]*session, 3)
	for i := range twins {
		wg.Go(func() {
			s, err := q.Claim(ctx, "twin")
			if err != nil {
				t.Error(err)
			}
			twins[i] = s
		})
	}
	wg.Wait()
	if twins[0] == nil || twins[0] != twins[1] || twins[1] != twins[2] {
		t.Fatalf("the requests of one new id got different sessions: %v", twins)
	}
	other, err := q.Claim(ctx, "other")
	if err != nil || other.cell == twins[0].cell {
		t.Fatalf("second session: %v, %v (cell %q twice)", other, err, twins[0].cell)
	}
	if again, err := q.Claim(ctx, "twin"); err != nil || again != twins[0] {
		t.Errorf("an open id claimed again: %v %v", again, err)
	}
	for range 2 {
		if s := <-got; s != twins[0] && s != other {
			t.Errorf("an offer returned %v", s)
		}
	}
}

func TestClaimRefusals(t *testing.T) {
	q, _, _ := newQueue("broken")
	q.Wait = 20 * time.Millisecond
	ctx := context.Background()
	for _, id := range []string{"", strings.Repeat("x", 129), "a/b", "a b", "a%2f"} {
		if _, err := q.Claim(ctx, id); err == nil || !strings.Contains(err.Error(), "up to 128 characters") {
			t.Errorf("id %q: %v", id, err)
		}
	}
	if _, err := q.Claim(ctx, "early"); err == nil || !strings.Contains(err.Error(), "no cell was free within 20ms") {
		t.Errorf("no offer: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := q.Offer(ctx, drive("c")); done <- err }()
	if _, err := q.Claim(ctx, "broken"); err == nil {
		t.Error("a session that cannot open was claimed")
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "could not open") {
		t.Errorf("the offer of a cell whose session failed: %v", err)
	}
	q.Finish()
	q.Finish() // twice is fine
	if _, err := q.Claim(ctx, "late"); err == nil || !strings.Contains(err.Error(), "every cell of the plan has run") {
		t.Errorf("after Finish: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := q.Offer(cctx, drive("d")); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled offer: %v", err)
	}
}

// TestServeWaitsForTheEnd: Serve returns the session once it ends, closed;
// with the context done first, it closes it all the same.
func TestServeWaitsForTheEnd(t *testing.T) {
	q, _, _ := newQueue("")
	ended := map[string]chan struct{}{"done": make(chan struct{}), "kept": make(chan struct{})}
	var mu sync.Mutex
	closed := map[string]bool{}
	q.Ended = func(s *session) <-chan struct{} { return ended[s.id] }
	q.Close = func(s *session) { mu.Lock(); closed[s.id] = true; mu.Unlock() }
	ctx := context.Background()
	got := make(chan error, 1)
	go func() {
		s, err := q.Serve(ctx, drive("a"))
		if s == nil || s.id != "done" {
			t.Errorf("served %v", s)
		}
		got <- err
	}()
	if _, err := q.Claim(ctx, "done"); err != nil {
		t.Fatal(err)
	}
	close(ended["done"])
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	go func() { _, err := q.Serve(cctx, drive("b")); got <- err }()
	if _, err := q.Claim(ctx, "kept"); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled Serve: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !closed["done"] || !closed["kept"] {
		t.Errorf("closed %v", closed)
	}
}
