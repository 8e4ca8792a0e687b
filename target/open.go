package target

// OpenWith builds the target a spec names, as Open does, wrapped for a
// run: WithRetry(WithRateLimit(provider, l), p). A nil l leaves out the
// rate limit. When p has no Limiter of its own, l is told of 429s so that
// every worker sharing l backs off together. Errors are Open's: an unknown
// provider, a bad option, or a missing key (ErrMissingKey).
func OpenWith(spec string, opts Options, p RetryPolicy, l *Limiter) (Target, error) {
	t, err := Open(spec, opts)
	if err != nil {
		return nil, err
	}
	if l != nil {
		t = WithRateLimit(t, l)
		if p.Limiter == nil {
			p.Limiter = l
		}
	}
	return WithRetry(t, p), nil
}
