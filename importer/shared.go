package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The helpers the importers share (BIPIA, spikee, LLMail-Inject and
// MCPTox): the cap on the cases an import generates and the choice of
// which to keep, JSONL records read field by field with errors naming the
// file and line, and names and markers made safe for a dataset file.

// GeneratedCaseCap bounds the cases one import of BIPIA, spikee,
// LLMail-Inject or MCPTox generates; a benchmark that would generate more
// needs a limit or a sample.
const GeneratedCaseCap = 100_000

// benchCombinationCap bounds the combinations an import walks through,
// even when a sample keeps only a few of them.
const benchCombinationCap = 50_000_000

// benchSelection is which of a benchmark's combinations become cases.
type benchSelection struct {
	limit, sample int
	seed          uint64
}

// benchPicker decides, combination by combination in generation order,
// which become cases.
type benchPicker struct {
	keep, kept, next int
	chosen           map[int]struct{}
}

func (s benchSelection) picker(file string, total int) (*benchPicker, error) {
	switch {
	case s.limit < 0 || s.sample < 0:
		return nil, &Error{File: file, Field: "limit", Msg: "limit and sample are counts of cases, 0 or more"}
	case s.limit > 0 && s.sample > 0:
		return nil, &Error{File: file, Field: "sample", Msg: "give a limit (the first cases) or a sample (cases at random), not both"}
	case total > benchCombinationCap:
		return nil, &Error{File: file, Msg: fmt.Sprintf("%d combinations, over the %d an import walks through; import a part of the benchmark", total, benchCombinationCap)}
	}
	p := &benchPicker{keep: total}
	switch {
	case s.sample > 0 && s.sample < total:
		p.keep = s.sample
		// Floyd's algorithm: sample distinct indexes without a permutation.
		r := rand.New(rand.NewPCG(s.seed, 0x62656e6368))
		p.chosen = make(map[int]struct{}, s.sample)
		for j := total - s.sample; j < total; j++ {
			t := r.IntN(j + 1)
			if _, dup := p.chosen[t]; dup {
				t = j
			}
			p.chosen[t] = struct{}{}
		}
	case s.limit > 0 && s.limit < total:
		p.keep = s.limit
	}
	if p.keep > GeneratedCaseCap {
		return nil, &Error{File: file, Msg: fmt.Sprintf("the import would generate %d cases, over the %d one import may; pass a limit (the first N) or a sample (N at random)", p.keep, GeneratedCaseCap)}
	}
	return p, nil
}

// take reports whether the next combination becomes a case.
func (p *benchPicker) take() bool {
	i := p.next
	p.next++
	if p.kept >= p.keep {
		return false
	}
	if p.chosen != nil {
		if _, ok := p.chosen[i]; !ok {
			return false
		}
	}
	p.kept++
	return true
}

// benchList splits a comma-separated option value.
func benchList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// benchRecord is one line of a JSONL file: its fields, undecoded.
type benchRecord struct {
	line   int
	fields map[string]json.RawMessage
}

// benchMaxLine bounds a JSONL line.
const benchMaxLine = 16 << 20

// benchReadJSONL reads a JSONL file of objects (blank lines skipped).
func benchReadJSONL(src source, file string) ([]benchRecord, error) {
	data, err := src.readFile(file)
	if err != nil {
		return nil, err
	}
	var out []benchRecord
	for n, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if len(line) > benchMaxLine {
			return nil, &Error{File: file, Line: n + 1, Msg: fmt.Sprintf("a line of %d bytes, over the %d a record may have", len(line), benchMaxLine)}
		}
		rec, err := benchParseRecord(file, n+1, line)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

func benchParseRecord(file string, line int, b []byte) (benchRecord, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil || fields == nil {
		msg := "want a JSON object on each line (JSONL)"
		if err != nil {
			msg += ": " + err.Error()
		}
		return benchRecord{}, &Error{File: file, Line: line, Msg: msg}
	}
	return benchRecord{line: line, fields: fields}, nil
}

func (r benchRecord) has(key string) bool {
	v, ok := r.fields[key]
	return ok && string(v) != "null"
}

// str returns a string (or number) field.
func (r benchRecord) str(file, key string, required bool) (string, error) {
	raw, ok := r.fields[key]
	if !ok || string(raw) == "null" {
		if required {
			return "", &Error{File: file, Line: r.line, Field: key, Msg: "missing; want a string"}
		}
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		return n.String(), nil
	}
	return "", &Error{File: file, Line: r.line, Field: key, Msg: fmt.Sprintf("want a string, got %s", benchKind(raw))}
}

// text returns a string field, or a list of strings joined by newlines.
func (r benchRecord) text(file, key string, required bool) (string, error) {
	raw, ok := r.fields[key]
	if !ok || string(raw) == "null" {
		if required {
			return "", &Error{File: file, Line: r.line, Field: key, Msg: "missing; want a string or a list of strings"}
		}
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err == nil {
		return strings.Join(list, "\n"), nil
	}
	return "", &Error{File: file, Line: r.line, Field: key, Msg: fmt.Sprintf("want a string or a list of strings, got %s", benchKind(raw))}
}

// first returns a string field, or the first of a list of strings.
func (r benchRecord) first(file, key string) (string, error) {
	raw, ok := r.fields[key]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err == nil {
		if len(list) > 0 {
			return list[0], nil
		}
		return "", nil
	}
	return "", &Error{File: file, Line: r.line, Field: key, Msg: fmt.Sprintf("want a string or a list of strings, got %s", benchKind(raw))}
}

// strings returns a field that is a string or a list of strings, as a list.
func (r benchRecord) strs(file, key string) ([]string, error) {
	raw, ok := r.fields[key]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []string{s}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err == nil {
		return list, nil
	}
	return nil, &Error{File: file, Line: r.line, Field: key, Msg: fmt.Sprintf("want a string or a list of strings, got %s", benchKind(raw))}
}

// benchKind names a JSON value's kind for messages.
func benchKind(raw json.RawMessage) string {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "a list"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// benchNamed is one entry of a JSON object of string lists, in file order.
type benchNamed struct {
	name  string
	items []string
}

// benchOrderedLists decodes a JSON object whose values are lists of
// strings, keeping the keys' order (BIPIA's attack files).
func benchOrderedLists(file string, data []byte) ([]benchNamed, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	want := func(msg string) error {
		return &Error{File: file, Line: benchLineAt(data, dec.InputOffset()), Msg: msg}
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, want("want a JSON object of attack categories, each a list of instructions")
	}
	var out []benchNamed
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, want("malformed JSON: " + err.Error())
		}
		name, _ := t.(string)
		var items []string
		if err := dec.Decode(&items); err != nil {
			return nil, &Error{File: file, Line: benchLineAt(data, dec.InputOffset()), Field: name, Msg: "want a list of instruction strings"}
		}
		if seen[name] {
			return nil, &Error{File: file, Field: name, Msg: "a category named twice"}
		}
		seen[name] = true
		out = append(out, benchNamed{name: name, items: items})
	}
	if _, err := dec.Token(); err != nil {
		return nil, want("malformed JSON: " + err.Error())
	}
	if len(out) == 0 {
		return nil, want("no attack categories")
	}
	return out, nil
}

// benchLineAt is the 1-based line of a byte offset.
func benchLineAt(data []byte, off int64) int {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	return bytes.Count(data[:off], []byte("\n")) + 1
}

// benchSlug turns a benchmark's name into id-safe text: lower case
// letters, digits and dashes.
func benchSlug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '.' || r == '_' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 60 {
			break
		}
	}
	out := strings.Trim(b.String(), "-")
	if out == "" {
		return "x"
	}
	return out
}

// benchName makes a scenario or tool name of letters, digits, _, - and .
// (at most max bytes) from a benchmark's own name.
func benchName(s string, max int) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-' || r == '.'):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= max {
			break
		}
	}
	if b.Len() == 0 {
		return "x"
	}
	return b.String()
}

// benchMarker returns base, or base with a number, whichever none of the
// texts contains.
func benchMarker(base string, texts ...string) string {
	m := base
	for n := 2; ; n++ {
		if !slices.ContainsFunc(texts, func(t string) bool { return strings.Contains(t, m) }) {
			return m
		}
		m = fmt.Sprintf("%s%d", base, n)
	}
}

// benchSortedKeys returns a map's keys in order.
func benchSortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
