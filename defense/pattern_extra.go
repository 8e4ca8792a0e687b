package defense

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pikit-go/pikit/internal/textcut"
	"github.com/pikit-go/pikit/method"
)

// Bounds on the pattern detector's extra_patterns option. A compiled
// expression takes memory in proportion to its size, and more for every
// worker matching it at once; these keep a config file from asking for
// gigabytes.
const (
	maxExtraPatterns      = 256
	maxExtraPatternBytes  = 4 << 10
	maxExtraPatternsTotal = 64 << 10
	// maxQuotedPattern is how much of a bad pattern an error quotes.
	maxQuotedPattern = 60
)

// Bounds on the detectors kept built: a run uses one or a few sets of
// extra patterns, each asked for by every cell.
const (
	maxCachedDetectors    = 16
	maxCachedPatternBytes = 4 * maxExtraPatternsTotal
)

// extraCompiles counts the extra patterns compiled, for tests.
var extraCompiles atomic.Int64

// defaultPatternDetector is the detector without extra patterns: it is
// immutable, so every caller shares it.
var defaultPatternDetector = sync.OnceValue(func() *patternDetector {
	return &patternDetector{patterns: slices.Clip(builtinPatterns()), builtins: len(builtinPatterns()), index: patternIndex()}
})

// newPatternDetector builds the detector: the built-in patterns and the
// extra_patterns option's, case-insensitive. A set of extra patterns is
// compiled once and the detector shared by every caller that asks for the
// same set (a detector is read-only once built); see detectorCache.
func newPatternDetector(args method.Args) (Detector, error) {
	extras := args.Strings("extra_patterns")
	if len(extras) == 0 {
		return defaultPatternDetector(), nil
	}
	if err := checkExtraPatterns(extras); err != nil {
		return nil, err
	}
	return detectorCache.get(extras)
}

// checkExtraPatterns enforces the bounds on extra_patterns, naming the
// pattern that breaks one.
func checkExtraPatterns(extras []string) error {
	if len(extras) > maxExtraPatterns {
		return badOption("extra_patterns", "%d patterns given; at most %d are allowed", len(extras), maxExtraPatterns)
	}
	total := 0
	for i, expr := range extras {
		if len(expr) > maxExtraPatternBytes {
			return badOption("extra_patterns", "pattern %d is %d bytes long; at most %s each", i+1, len(expr), sizeText(maxExtraPatternBytes))
		}
		total += len(expr)
		if total > maxExtraPatternsTotal {
			return badOption("extra_patterns", "pattern %d (%d bytes) brings the patterns to %d bytes; at most %s in all", i+1, len(expr), total, sizeText(maxExtraPatternsTotal))
		}
	}
	return nil
}

// sizeText writes a size in bytes and KiB: "4096 bytes (4 KiB)".
func sizeText(n int) string { return fmt.Sprintf("%d bytes (%d KiB)", n, n>>10) }

// extraFlags make an extra pattern multi-line and case-insensitive.
const extraFlags = `(?im)`

// compilePatternDetector compiles the extra patterns into a detector.
func compilePatternDetector(extras []string) (*patternDetector, error) {
	d := &patternDetector{builtins: len(builtinPatterns()), index: patternIndex()}
	d.patterns = make([]injectionPattern, 0, len(builtinPatterns())+len(extras))
	d.patterns = append(d.patterns, builtinPatterns()...)
	for i, expr := range extras {
		extraCompiles.Add(1)
		re, err := regexp.Compile(extraFlags + expr)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", badOption("extra_patterns", "pattern %d (%q) does not compile",
				i+1, textcut.Clip(expr, maxQuotedPattern, "…")), clipSyntaxError(err))
		}
		d.patterns = append(d.patterns, injectionPattern{name: fmt.Sprintf("extra_%d", i+1), weight: 0.9, re: re})
	}
	return d, nil
}

// clipSyntaxError shortens the part of the expression a regexp error
// quotes, which can be the whole rest of a long pattern, and drops the
// flags pikit put before the user's pattern.
func clipSyntaxError(err error) error {
	var se *syntax.Error
	if errors.As(err, &se) {
		expr := strings.TrimPrefix(se.Expr, extraFlags)
		return &syntax.Error{Code: se.Code, Expr: textcut.Clip(expr, maxQuotedPattern, "…")}
	}
	return err
}

// detectorCache holds the detectors built for sets of extra patterns,
// the most recently used last, within maxCachedDetectors detectors and
// maxCachedPatternBytes of pattern text.
var detectorCache patternCache

type patternCache struct {
	mu      sync.Mutex
	entries map[[sha256.Size]byte]*cachedDetector
	order   [][sha256.Size]byte // least recently used first
	bytes   int                 // pattern text of the entries
}

// cachedDetector is one entry; ready is closed once d and err are set.
type cachedDetector struct {
	ready chan struct{}
	size  int
	d     *patternDetector
	err   error
}

// get returns the detector for extras, compiling it when no entry has it.
// Callers asking for a set being compiled wait for it rather than
// compiling it again.
func (c *patternCache) get(extras []string) (*patternDetector, error) {
	key, size := patternSetKey(extras)
	c.mu.Lock()
	e, ok := c.entries[key]
	if ok {
		c.touch(key)
		c.mu.Unlock()
		<-e.ready
		return e.d, e.err
	}
	e = &cachedDetector{ready: make(chan struct{}), size: size}
	c.add(key, e)
	c.mu.Unlock()
	e.d, e.err = compilePatternDetector(extras)
	close(e.ready)
	return e.d, e.err
}

// add inserts an entry, first dropping the least recently used ones over
// the bounds. The caller holds c.mu.
func (c *patternCache) add(key [sha256.Size]byte, e *cachedDetector) {
	if c.entries == nil {
		c.entries = map[[sha256.Size]byte]*cachedDetector{}
	}
	for len(c.order) > 0 && (len(c.order) >= maxCachedDetectors || c.bytes+e.size > maxCachedPatternBytes) {
		old := c.order[0]
		c.order = c.order[1:]
		c.bytes -= c.entries[old].size
		delete(c.entries, old)
	}
	c.entries[key] = e
	c.order = append(c.order, key)
	c.bytes += e.size
}

// touch marks an entry as just used. The caller holds c.mu.
func (c *patternCache) touch(key [sha256.Size]byte) {
	i := slices.Index(c.order, key)
	if i >= 0 && i < len(c.order)-1 {
		c.order = append(slices.Delete(c.order, i, i+1), key)
	}
}

// patternSetKey identifies a list of patterns (each one's length, then its
// text, so no two lists share a key) and returns its size.
func patternSetKey(extras []string) ([sha256.Size]byte, int) {
	h := sha256.New()
	size := 0
	var n [8]byte
	for _, p := range extras {
		binary.LittleEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
		size += len(p)
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key, size
}
