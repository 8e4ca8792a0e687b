// Package importer turns the field's prompt-injection benchmarks, from
// their own data files as their users download them, into pikit datasets:
// declarative scenarios (the benchmark's tools, as sources and sinks) and
// cases that keep the benchmark's ids and say where they came from. The
// datasets run with pikit dataset run like any other.
//
// Each benchmark's importer registers itself by name from the file that
// defines it. What one produces is the values of a dataset file
// (dataset.File), which dataset.Encode writes.
package importer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pikit-go/pikit/dataset"
	"github.com/pikit-go/pikit/method"
)

// Func imports a benchmark's data, a file or a directory as the
// benchmark's users download them, with the options it was built with.
type Func func(path string) (*Dataset, error)

// Registry holds the importers by benchmark name ("injecagent",
// "agentdojo", ...), each with its options declared: pikit list importers
// shows them and pikit import --set KEY=VALUE gives them. Each importer
// registers itself from the file that defines it.
var Registry = method.NewRegistry[Func]("benchmark")

// Names returns the registered importers' names, sorted.
func Names() []string { return Registry.Names() }

// New returns the named importer with options given as KEY=VALUE texts
// (pikit import --set): an unknown benchmark or option, or a value that
// is not of its option's type, is an error naming it and the valid ones.
func New(name string, set []string) (Func, error) {
	info, ok := Registry.Lookup(name)
	if !ok {
		return nil, Registry.Check(name)
	}
	kwargs, err := method.FromStrings(Registry.Kind(), info, set)
	if err != nil {
		return nil, err
	}
	return Registry.New(name, kwargs, 0)
}

// selectionOptions are the options every importer of a large benchmark
// takes to keep part of it.
var selectionOptions = []method.Option{
	{Name: "limit", Default: 0, Help: "keep the first N cases (0: all)"},
	{Name: "sample", Default: 0, Help: "keep N cases drawn at random (with seed), in their order (0: all)"},
	{Name: "seed", Default: 0, Help: "the seed of sample"},
}

// selection reads selectionOptions.
func selection(a method.Args) (limit, sample int, seed uint64, err error) {
	limit, sample = a.Int("limit"), a.Int("sample")
	if limit < 0 || sample < 0 {
		return 0, 0, 0, fmt.Errorf("limit and sample are counts of cases: want 0 or more")
	}
	if a.Int("seed") < 0 {
		return 0, 0, 0, fmt.Errorf("seed: want a whole number, 0 or more")
	}
	return limit, sample, uint64(a.Int("seed")), nil
}

// Dataset is what an import produces: the values of a dataset file, and
// the benchmark's cases it could not map.
type Dataset struct {
	dataset.File
	// LeftOut are the first of the benchmark's cases the importer could
	// not map (at most MaxLeftOutKept), each an *Error naming its file,
	// line and why: one odd case never aborts an import. LeftOutCount
	// counts them all. They are not written; pikit import reports them.
	LeftOut      []*Error
	LeftOutCount int
}

// MaxLeftOutKept bounds the left-out cases an import keeps to name: a
// file of millions of cases it cannot map costs a count, not an error
// each.
const MaxLeftOutKept = 20

// leftOut counts the cases an import leaves out and keeps the first
// MaxLeftOutKept.
type leftOut struct {
	first []*Error
	n     int
}

func (l *leftOut) add(e *Error) {
	l.n++
	if len(l.first) < MaxLeftOutKept {
		l.first = append(l.first, e)
	}
}

// Error is bad input: which file, where in it, and what was expected.
type Error struct {
	File  string
	Line  int    // 0 when unknown
	Field string // the field at fault ("case 3: Attacker Tools"), "" when none
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		fmt.Fprintf(&b, "%s: ", e.Field)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// MaxFileBytes bounds a benchmark file an importer reads.
const MaxFileBytes = 64 << 20

// ReadFile reads a benchmark file as importers read theirs: inside its
// own directory, refusing one over MaxFileBytes, one that is not a regular
// file, a symbolic link out of the directory and a file with other names
// (a hard link).
func ReadFile(path string) ([]byte, error) {
	return newSource(filepath.Dir(path), false).readFile(path)
}

func errUnwrap(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
