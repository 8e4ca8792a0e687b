// Package tomlpos maps the keys of a TOML document to the lines they are
// on, so that errors found after decoding can still name file:line.
package tomlpos

import (
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// Index maps dotted key paths to 1-based line numbers. Array-of-tables
// entries and array elements are numbered from 0: the third [[cases]] block
// is "cases.2", its attacks key "cases.2.attacks", and the first element of
// that array "cases.2.attacks.0".
type Index map[string]int

// Build indexes doc. A document that does not parse gives a partial index
// (the decoder reports the syntax error itself).
func Build(doc []byte) Index {
	idx := Index{}
	var p lines
	p.Reset(doc)
	// Lines come from a table of where each one starts, searched: asking
	// the parser for a node's position scans the document from its start,
	// which made indexing a large file quadratic.
	for i, c := range doc {
		if c == '\n' {
			p.starts = append(p.starts, i+1)
		}
	}
	prefix := ""
	counts := map[string]int{}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			path := keyPath(e.Key())
			if e.Kind == unstable.ArrayTable {
				n := counts[path]
				counts[path] = n + 1
				path += "." + strconv.Itoa(n)
			}
			prefix = path
			idx[path] = line(&p, e.Key())
		case unstable.KeyValue:
			path := join(prefix, keyPath(e.Key()))
			idx[path] = line(&p, e.Key())
			value(&p, idx, path, e.Value())
		}
	}
	return idx
}

// Line returns the line of path, or of its nearest indexed parent; 0 when
// nothing is known.
func (idx Index) Line(path string) int {
	for {
		if n, ok := idx[path]; ok {
			return n
		}
		i := strings.LastIndexByte(path, '.')
		if i < 0 {
			return 0
		}
		path = path[:i]
	}
}

// lines is a parser that also knows where each line of its document
// starts.
type lines struct {
	unstable.Parser
	starts []int // the offsets after each newline
}

// line returns the 1-based line of a byte offset.
func (p *lines) line(off int) int {
	return sort.SearchInts(p.starts, off+1) + 1
}

func value(p *lines, idx Index, path string, v *unstable.Node) {
	switch v.Kind {
	case unstable.InlineTable:
		it := v.Children()
		for it.Next() {
			kv := it.Node()
			if kv.Kind != unstable.KeyValue {
				continue
			}
			sub := join(path, keyPath(kv.Key()))
			idx[sub] = line(p, kv.Key())
			value(p, idx, sub, kv.Value())
		}
	case unstable.Array:
		it := v.Children()
		for i := 0; it.Next(); i++ {
			el := it.Node()
			sub := path + "." + strconv.Itoa(i)
			if l := nodeLine(p, el); l > 0 {
				idx[sub] = l
			}
			value(p, idx, sub, el)
		}
	}
}

func keyPath(it unstable.Iterator) string {
	var parts []string
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
	}
	return strings.Join(parts, ".")
}

func line(p *lines, it unstable.Iterator) int {
	if it.Next() {
		return nodeLine(p, it.Node())
	}
	return 0
}

// nodeLine finds a line for n: its own raw range, or its first child's.
func nodeLine(p *lines, n *unstable.Node) int {
	for n != nil {
		if n.Raw.Length > 0 || n.Raw.Offset > 0 {
			return p.line(int(n.Raw.Offset))
		}
		n = n.Child()
	}
	return 0
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}
