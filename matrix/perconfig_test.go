package matrix

import (
	"errors"
	"sync"
	"testing"
)

// TestPerConfig: each config is parsed once, however many workers ask at
// once; an error is not kept.
func TestPerConfig(t *testing.T) {
	var p PerConfig[int]
	var mu sync.Mutex
	calls := map[*Config]int{}
	fail := true
	parse := func(c *Config) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		calls[c]++
		if c.Source == "bad" && fail {
			return 0, errors.New("bad")
		}
		return len(c.Source), nil
	}
	a, b := &Config{Source: "a.toml"}, &Config{Source: "bad"}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if v, err := p.Get(a, parse); v != 6 || err != nil {
				t.Errorf("Get(a) = %d, %v", v, err)
			}
		})
	}
	wg.Wait()
	if _, err := p.Get(b, parse); err == nil {
		t.Error("an error was not returned")
	}
	fail = false
	if v, err := p.Get(b, parse); v != 3 || err != nil {
		t.Errorf("after an error: %d, %v", v, err)
	}
	if calls[a] != 1 || calls[b] != 2 {
		t.Errorf("parses: a %d, b %d; want 1 and 2", calls[a], calls[b])
	}
}
