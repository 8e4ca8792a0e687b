package proxy

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"iter"
	"slices"
	"unicode/utf8"
)

// The proxy reads a request body where it needs to and passes the rest
// on as the agent sent it. Decoding a whole body into Go values and
// encoding it again cost about a millisecond at 50 KB of history, most
// of which the proxy never looks at, and changed bytes it had no reason
// to touch (key order, spacing, escapes). Instead a body is checked once
// (it must be JSON that encoding/json reads, so that the bodies the proxy
// reads are the ones it read before), and then only the values the
// formats read are found by their place and decoded: the model, the
// stream flag, the system prompt, the messages or input items, and in
// them roles, tool calls and tool results. A rewrite replaces the bytes
// of the values it changes and leaves every other byte of the body alone:
// unknown fields, their order, their numbers (1.0e2, integers past 2⁵³)
// and the agent's spacing.

// maxDepth is encoding/json's bound on nesting, which the proxy keeps: a
// body nested deeper is not JSON the proxy reads, as it was not before.
const maxDepth = 10000

// jsonBody is a request body, read for what the proxy rewrites.
type jsonBody struct {
	b     []byte
	edits []edit
	// dups are the earlier copies of keys the proxy read in an object
	// that has a key twice. encoding/json, and so the proxy, reads the
	// last; a rewritten body drops the others, so that no upstream that
	// reads the first copy gets one the proxy did not rewrite.
	dups []edit
}

// edit replaces b[start:end] (nothing, when they are equal) with with.
type edit struct {
	start, end int
	with       []byte
}

// parseJSON checks that b is a JSON object and returns it. The error is
// encoding/json's, word for word, for a body it would not read.
func parseJSON(b []byte) (object, error) {
	start, end, ok := validJSON(b)
	if !ok || b[start] != '{' {
		// Not an object the proxy reads: encoding/json says why, as it
		// did when it read every body. Both agree on what is valid JSON
		// (FuzzValidJSON); the error below is for the case they do not.
		_, err := decode(b)
		if err == nil {
			if ok && b[start] == 'n' {
				err = errors.New("the body is null")
			} else {
				err = errors.New("the body is not JSON the proxy reads")
			}
		}
		return object{}, err
	}
	return value{body: &jsonBody{b: b}, start: start, end: end}.object().index(), nil
}

// pieces returns the body with its edits made, as the pieces to send one
// after the other: the agent's own bytes between the edits are not copied.
// A body without edits is one piece, itself.
func (d *jsonBody) pieces() [][]byte {
	if len(d.edits) == 0 {
		return [][]byte{d.b}
	}
	all := append(slices.Clone(d.edits), d.dups...)
	slices.SortStableFunc(all, func(x, y edit) int {
		if x.start != y.start {
			return x.start - y.start
		}
		return x.end - y.end
	})
	out := make([][]byte, 0, 2*len(all)+1)
	pos := 0
	for _, e := range all {
		if e.start < pos {
			continue // a copy dropped twice (its key read twice)
		}
		if e.start > pos {
			out = append(out, d.b[pos:e.start])
		}
		if len(e.with) > 0 {
			out = append(out, e.with)
		}
		pos = e.end
	}
	if pos < len(d.b) {
		out = append(out, d.b[pos:])
	}
	return out
}

// value is one JSON value of a body, body.b[start:end]. The zero value is
// a value that is not there (a key the object does not have).
type value struct {
	body       *jsonBody
	start, end int
}

// kind is the value's first byte ('{', '[', '"', 't', 'f', 'n', or a
// number's first), 0 when it is not there.
func (v value) kind() byte {
	if v.body == nil {
		return 0
	}
	return v.body.b[v.start]
}

// raw is the value as the agent sent it.
func (v value) raw() []byte {
	if v.body == nil {
		return nil
	}
	return v.body.b[v.start:v.end]
}

// str is the value if it is a string, "" otherwise. A string without
// escapes is its bytes; one with them, or with bytes that are not UTF-8
// (which encoding/json reads as U+FFFD), is read by encoding/json.
func (v value) str() string {
	if v.kind() != '"' {
		return ""
	}
	in := v.body.b[v.start+1 : v.end-1]
	// The names the formats switch on come back as constants, not as a
	// copy for each of the hundreds of messages of a long history.
	switch string(in) {
	case "user":
		return "user"
	case "assistant":
		return "assistant"
	case "system":
		return "system"
	case "developer":
		return "developer"
	case "tool":
		return "tool"
	case "message":
		return "message"
	case "text":
		return "text"
	}
	if bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
		return string(in)
	}
	var s string
	json.Unmarshal(v.raw(), &s)
	return s
}

// isTrue reports whether the value is true.
func (v value) isTrue() bool { return v.kind() == 't' }

// decode reads the value into Go values as decode does (numbers exact),
// nil when it is not there.
func (v value) decode() any {
	switch v.kind() {
	case 0:
		return nil
	case '"':
		return v.str()
	}
	d := json.NewDecoder(bytes.NewReader(v.raw()))
	d.UseNumber()
	var x any
	d.Decode(&x) // the body was checked: it cannot fail
	return x
}

// args reads a tool call's arguments as rawArgs does: a string as it is,
// "{}" for none, anything else as JSON text.
func (v value) args() string {
	switch v.kind() {
	case '"':
		return v.str()
	case 0, 'n':
		return "{}"
	}
	return string(encode(v.decode()))
}

// elems are the elements of an array, none for any other value.
func (v value) elems() iter.Seq[value] {
	return func(yield func(value) bool) {
		if v.kind() != '[' {
			return
		}
		b := v.body.b
		i := skipSpace(b, v.start+1)
		for b[i] != ']' {
			end := skipValue(b, i)
			if !yield(value{v.body, i, end}) {
				return
			}
			i = skipSpace(b, end)
			if b[i] == ',' {
				i = skipSpace(b, i+1)
			}
		}
	}
}

// object is a JSON object of a body. Its members are found as a key is
// looked up, each time: most objects the proxy reads are messages with a
// few keys, and a slice of their places would cost an allocation each.
// The body's own object keeps them (indexed): finding its keys means
// stepping over the whole history, which is done once.
type object struct {
	value
	indexed []member
}

// member is one key and value of an object; the key is b[key:keyEnd],
// quotes included.
type member struct {
	key, keyEnd int
	val         value
}

// object reads the value as an object; for any other value it is one
// that is not there (ok false), whose keys are all missing.
func (v value) object() object {
	if v.kind() != '{' {
		return object{}
	}
	return object{value: v}
}

// index returns the object with its members kept.
func (o object) index() object {
	o.indexed = slices.Collect(o.members())
	return o
}

// ok reports whether the object is there.
func (o object) ok() bool { return o.body != nil }

// members are the object's keys and values, in order.
func (o object) members() iter.Seq[member] {
	return func(yield func(member) bool) {
		if !o.ok() {
			return
		}
		if o.indexed != nil {
			for _, m := range o.indexed {
				if !yield(m) {
					return
				}
			}
			return
		}
		b := o.body.b
		i := skipSpace(b, o.start+1)
		for b[i] != '}' {
			keyEnd := skipString(b, i)
			vs := skipSpace(b, skipSpace(b, keyEnd)+1) // past the colon
			ve := skipValue(b, vs)
			if !yield(member{key: i, keyEnd: keyEnd, val: value{o.body, vs, ve}}) {
				return
			}
			i = skipSpace(b, ve)
			if b[i] == ',' {
				i = skipSpace(b, i+1)
			}
		}
	}
}

// get returns the value of key, the last one when the key is there twice
// (as encoding/json reads it), and notes the others to drop.
func (o object) get(key string) value {
	var v [1]value
	o.find([]string{key}, v[:])
	return v[0]
}

// find is get of several keys (up to maxFind) in one pass over the
// object: vals[i] is the value of keys[i]. Stepping over a message's
// values once instead of once for each key it has matters when a history
// has hundreds of messages.
func (o object) find(keys []string, vals []value) {
	// Where each key's member starts, and the next member after it.
	var at, next [maxFind]int
	for i := range keys {
		at[i], next[i] = -1, -1
	}
	for m := range o.members() {
		name := o.body.b[m.key+1 : m.keyEnd-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			var k string
			json.Unmarshal(o.body.b[m.key:m.keyEnd], &k)
			name = []byte(k)
		}
		for i, key := range keys {
			if at[i] >= 0 && next[i] < 0 {
				next[i] = m.key
			}
			if string(name) != key {
				continue
			}
			if at[i] >= 0 {
				// An earlier copy goes with its comma: up to the next key.
				o.body.dups = append(o.body.dups, edit{start: at[i], end: next[i]})
			}
			vals[i], at[i], next[i] = m.val, m.key, -1
		}
	}
}

const maxFind = 8

// set makes the value of key be the JSON text with: its bytes replace the
// old value's, or, for a key the object does not have, the key goes last.
func (o object) set(key string, with []byte) {
	if v := o.get(key); v.body != nil {
		o.body.edits = append(o.body.edits, edit{start: v.start, end: v.end, with: with})
		return
	}
	var add []byte
	if o.body.b[skipSpace(o.body.b, o.start+1)] != '}' {
		add = append(add, ',') // after the members there are
	}
	add = append(append(append(add, encode(key)...), ':'), with...)
	at := o.end - 1 // the closing brace
	o.body.edits = append(o.body.edits, edit{start: at, end: at, with: add})
}

// ---- finding values in a body known to be valid JSON -------------------

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// skipString returns the end of the string that starts at b[i].
func skipString(b []byte, i int) int {
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b) // not in a valid body
		}
		i += j
		// The quote is escaped if an odd number of backslashes come
		// before it.
		n := 0
		for k := i - 1; b[k] == '\\'; k-- {
			n++
		}
		i++
		if n%2 == 0 {
			return i
		}
	}
}

// skipValue returns the end of the value that starts at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) && !delimiter[b[i]] {
		i++
	}
	return i
}

// delimiter marks the bytes that can end a number or a literal.
var delimiter = [256]bool{' ': true, '\t': true, '\n': true, '\r': true, ',': true, ']': true, '}': true}

// ---- checking a body ----------------------------------------------------

// validJSON reports whether b starts with a JSON value (after white
// space), by encoding/json's rules as its Decoder reads a body: its
// nesting bound, no check that strings are UTF-8, and nothing read past
// the value's end. It returns where the value starts and ends. It keeps
// no stack of its own beyond one byte per open container, so a deeply
// nested body costs no more than its bytes.
func validJSON(b []byte) (start, end int, ok bool) {
	i := skipSpace(b, 0)
	start = i
	var open []byte // the containers open, '{' or '['
	for {
		// A value starts at b[i].
		if i >= len(b) {
			return 0, 0, false
		}
		switch c := b[i]; c {
		case '{', '[':
			if len(open) >= maxDepth {
				return 0, 0, false
			}
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' or ']'
				i++
				break // an empty one: a whole value
			}
			open = append(open, c)
			if c == '{' {
				if i, ok = validKey(b, i); !ok {
					return 0, 0, false
				}
			}
			continue
		case '"':
			if i, ok = validString(b, i); !ok {
				return 0, 0, false
			}
		case 't':
			if i, ok = literal(b, i, "true"); !ok {
				return 0, 0, false
			}
		case 'f':
			if i, ok = literal(b, i, "false"); !ok {
				return 0, 0, false
			}
		case 'n':
			if i, ok = literal(b, i, "null"); !ok {
				return 0, 0, false
			}
		default:
			if i, ok = validNumber(b, i); !ok {
				return 0, 0, false
			}
		}
		// A value ended at b[i]: what it ends, or the next one.
		for {
			if len(open) == 0 {
				return start, i, true
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return 0, 0, false
			}
			top := open[len(open)-1]
			if b[i] == top+2 {
				open = open[:len(open)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return 0, 0, false
			}
			i = skipSpace(b, i+1)
			if top == '{' {
				if i, ok = validKey(b, i); !ok {
					return 0, 0, false
				}
			}
			break
		}
	}
}

// validKey checks a key and its colon at b[i], and returns where the
// value starts.
func validKey(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	i, ok := validString(b, i)
	if !ok {
		return 0, false
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return 0, false
	}
	return skipSpace(b, i+1), true
}

func literal(b []byte, i int, lit string) (int, bool) {
	if !bytes.HasPrefix(b[i:], []byte(lit)) {
		return 0, false
	}
	return i + len(lit), true
}

func validNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return 0, false
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// validString checks the string that starts at b[i] and returns its end.
// Most of a request body is the text of strings, so the next quote and
// the next backslash are found with bytes.IndexByte (vector instructions),
// and the bytes between them are checked for control characters eight at
// a time. Each byte is looked at a bounded number of times: a quote that
// turns out to be escaped starts the next search after it.
func validString(b []byte, i int) (int, bool) {
	i++
	for {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return 0, false
		}
		q += i
		// Escapes before the quote, each after a run of plain bytes.
		for i < q {
			e := bytes.IndexByte(b[i:q], '\\')
			if e < 0 {
				if hasControl(b[i:q]) {
					return 0, false
				}
				return q + 1, true
			}
			e += i
			if hasControl(b[i:e]) || e+1 >= len(b) {
				return 0, false
			}
			switch b[e+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i = e + 2
			case 'u':
				if e+6 > len(b) || !hex4(b[e+2:e+6]) {
					return 0, false
				}
				i = e + 6
			default:
				return 0, false
			}
		}
		if i == q {
			return q + 1, true
		}
		// The quote was escaped (i is past it): look for the next one.
	}
}

// hasControl reports whether b holds a byte below 0x20, which a string
// cannot hold as it is.
func hasControl(b []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if x := binary.LittleEndian.Uint64(b[i:]); (x-ones*0x20)&^x&highs != 0 {
			return true
		}
	}
	for ; i < len(b); i++ {
		if b[i] < 0x20 {
			return true
		}
	}
	return false
}

func hex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
