package matrix

import "sync"

// PerConfig keeps what a driver reads from each config, read once: the
// drivers of external agents parse their own section ([proxy], [web]) for
// every cell, from many workers at once. The zero value is ready. An
// error is not kept: the next cell of that config reads it again.
type PerConfig[T any] struct {
	mu sync.Mutex
	m  map[*Config]T
}

// Get returns what parse makes of cfg, parsing it the first time.
func (p *PerConfig[T]) Get(cfg *Config, parse func(*Config) (T, error)) (T, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if v, ok := p.m[cfg]; ok {
		return v, nil
	}
	v, err := parse(cfg)
	if err != nil {
		return v, err
	}
	if p.m == nil {
		p.m = map[*Config]T{}
	}
	p.m[cfg] = v
	return v, nil
}
