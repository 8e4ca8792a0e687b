package defense

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/pikit-go/pikit/method"
)

// extraSet returns n distinct extra patterns of about size bytes each,
// as a config file gives them (a TOML array decodes to []any).
func extraSet(tag string, n, size int) []any {
	out := make([]any, n)
	for i := range out {
		p := fmt.Sprintf(`\b%s%d\w*`, tag, i)
		out[i] = p + strings.Repeat("x", max(0, size-len(p)))
	}
	return out
}

// TestExtraPatternsBuiltOnce builds the detector 1,000 times with the same
// extra patterns, as a run's workers and cells do: the patterns compile
// once, and building it again costs next to nothing.
func TestExtraPatternsBuiltOnce(t *testing.T) {
	opts := map[string]any{"extra_patterns": extraSet("once", 16, 200)}
	before := extraCompiles.Load()
	first, err := NewDetector("pattern", opts, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	for range 1000 {
		d, err := NewDetector("pattern", opts, int64(7))
		if err != nil {
			t.Fatal(err)
		}
		if d != first {
			t.Fatal("the same options built a second detector")
		}
	}
	runtime.ReadMemStats(&ms1)
	if n := extraCompiles.Load() - before; n != 16 {
		t.Errorf("1,001 detectors compiled %d patterns, want the 16 once", n)
	}
	if per := (ms1.TotalAlloc - ms0.TotalAlloc) / 1000; per > 8<<10 {
		t.Errorf("building the detector again allocates %d bytes, want a few KiB at most", per)
	}
	// The same patterns given as []string (flags, code) share the entry.
	strs := make([]string, 0, 16)
	for _, p := range opts["extra_patterns"].([]any) {
		strs = append(strs, p.(string))
	}
	if d, err := NewDetector("pattern", map[string]any{"extra_patterns": strs}, 0); err != nil || d != first {
		t.Errorf("the patterns as []string: %v, %v; want the detector already built", d, err)
	}
	// Other patterns are another detector.
	if d, err := NewDetector("pattern", map[string]any{"extra_patterns": extraSet("other", 2, 20)}, 0); err != nil || d == first {
		t.Errorf("other patterns: %v, %v; want a detector of their own", d, err)
	}
}

// TestExtraPatternsBuiltOnceConcurrently has many workers ask for the
// same new detector at once: one compiles, the others wait for it.
func TestExtraPatternsBuiltOnceConcurrently(t *testing.T) {
	opts := map[string]any{"extra_patterns": extraSet("together", 8, 100)}
	before := extraCompiles.Load()
	var wg sync.WaitGroup
	got := make([]Detector, 16)
	for w := range got {
		wg.Go(func() {
			d, err := NewDetector("pattern", opts, 0)
			if err != nil {
				t.Error(err)
			}
			got[w] = d
		})
	}
	wg.Wait()
	if n := extraCompiles.Load() - before; n != 8 {
		t.Errorf("16 workers compiled %d patterns, want the 8 once", n)
	}
	for _, d := range got[1:] {
		if d != got[0] {
			t.Fatal("workers got different detectors")
		}
	}
}

// TestExtraPatternsCacheBounded checks the cache forgets old option sets
// rather than growing with every set a run (or a long process) sees.
func TestExtraPatternsCacheBounded(t *testing.T) {
	for i := range 3 * maxCachedDetectors {
		if _, err := NewDetector("pattern", map[string]any{"extra_patterns": []any{fmt.Sprintf(`\bbound%d\b`, i)}}, 0); err != nil {
			t.Fatal(err)
		}
	}
	detectorCache.mu.Lock()
	n := len(detectorCache.entries)
	detectorCache.mu.Unlock()
	if n > maxCachedDetectors {
		t.Errorf("the cache holds %d detectors, want at most %d", n, maxCachedDetectors)
	}
}

// TestExtraPatternsLimits checks the bounds on extra_patterns and the
// errors that name the limit, the pattern and its size.
func TestExtraPatternsLimits(t *testing.T) {
	big := strings.Repeat("y", maxExtraPatternBytes+1)
	tests := []struct {
		name     string
		patterns []any
		want     []string // "" for no error
	}{
		{"at the count limit", extraSet("count", maxExtraPatterns, 8), nil},
		{"over the count limit", extraSet("count", maxExtraPatterns+1, 8),
			[]string{"257 patterns", "at most 256"}},
		{"one at the size limit", []any{"a", strings.Repeat("z", maxExtraPatternBytes)}, nil},
		{"one over the size limit", []any{"a", "b", big},
			[]string{"pattern 3 is 4097 bytes long", "at most 4096 bytes (4 KiB) each"}},
		{"all at the total limit", extraSet("total", 16, maxExtraPatternBytes), nil},
		{"over the total limit", extraSet("total", 17, maxExtraPatternBytes),
			[]string{"pattern 17 (4096 bytes) brings the patterns to 69632 bytes", "at most 65536 bytes (64 KiB) in all"}},
		{"does not compile", []any{"ok", "(unclosed"},
			[]string{`pattern 2 ("(unclosed") does not compile`, "missing closing ): `(unclosed`"}},
		{"long pattern that does not compile is quoted in part", []any{"[" + strings.Repeat("q", 200)},
			[]string{"pattern 1 (\"[qqq", "…\") does not compile", "missing closing ]"}},
		{"repeat too large", []any{`(?:a{100}){100}`},
			[]string{"pattern 1", "invalid repeat count"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewDetector("pattern", map[string]any{"extra_patterns": tt.patterns}, 0)
			vErr := Validate("pattern", map[string]any{"extra_patterns": tt.patterns})
			if tt.want == nil {
				if err != nil || vErr != nil {
					t.Fatalf("NewDetector: %v; Validate: %v", err, vErr)
				}
				return
			}
			if !errors.Is(err, method.ErrOption) || !errors.Is(vErr, method.ErrOption) {
				t.Fatalf("NewDetector: %v; Validate: %v; want errors wrapping method.ErrOption", err, vErr)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if len(err.Error()) > 600 {
				t.Errorf("error is %d bytes long", len(err.Error()))
			}
		})
	}
}

// BenchmarkNewPatternDetector builds the detector with a dozen extra
// patterns, as each cell of a run asks for it.
func BenchmarkNewPatternDetector(b *testing.B) {
	opts := map[string]any{"extra_patterns": extraSet("bench", 12, 60)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewDetector("pattern", opts, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPatternExtras2KB measures detection on about 2 KB of prose
// with the default patterns and with a dozen extra ones.
func BenchmarkPatternExtras2KB(b *testing.B) {
	text := prose2KBInternal(b)
	for _, bc := range []struct {
		name string
		opts map[string]any
	}{
		{"default", nil},
		{"12_extra", map[string]any{"extra_patterns": extraSet("bench", 12, 60)}},
	} {
		d, err := NewDetector("pattern", bc.opts, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				d.Detect(text)
			}
		})
	}
}

// prose2KBInternal is about 2 KB of the benign corpus.
func prose2KBInternal(t testing.TB) string {
	var b strings.Builder
	for _, s := range BenignCorpus(t) {
		if b.Len() >= 2048 {
			break
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(s)
	}
	return b.String()
}
