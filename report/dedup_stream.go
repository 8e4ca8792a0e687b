package report

import (
	"bytes"
	"encoding/json"
	"maps"

	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/result"
)

// RecordDedup hands records on to a function each cell key once, in one
// pass over streams that cannot be read twice (standard input): the first
// record of a key that is not a runtime error, or, when every one is, its
// first (the rule of Dedup). A record that is not a runtime error is
// handed on at once; a key's runtime error is held until Flush, in case a
// rerun's result follows it (a resumed run appends the rerun). Records
// without a key (the Python pikit's) are handed on as they are: nothing
// names their cell.
//
// It keeps a set of the keys read, pikit's 16-hex-digit keys as numbers
// (about 38 MB for a million cells; other keys cost their text too), and
// of each runtime error it holds what summaries, comparisons and gates
// read of a failed cell, about 115 bytes: its grouping fields (shared
// with the other records), repeat, request counts, method options, and
// its metadata when it is an adaptive cell's. Its reason, error and text
// are not kept, so its Result is an error, unless KeepText keeps the
// whole record and its text.
type RecordDedup struct {
	// KeepText keeps the whole of a held record and its text, for a
	// function that reads whole results (Record.Result).
	KeepText bool

	fn     func(*Record) error
	hex    map[uint64]int32 // key → keyPassed, else its index in held
	keys   map[string]int32 // keys that are not pikit's 16 hex digits
	held   []heldError      // without KeepText; a dropped one has no key
	whole  []Record         // with KeepText; a dropped one has no key
	strs   interner         // the held errors' fields
	labels []map[string]string
	labelN map[string]uint32 // a label set's text → its index in labels
	metas  [][]byte          // adaptive metadata; 0 is none
	dups   int
}

// heldError is a runtime error held by a RecordDedup, in the little that
// hands it on again: its strings are numbers in RecordDedup.strs.
type heldError struct {
	key                                         string
	attack, defense, channel, agent, target, id uint32
	benchmark, specs, file                      uint32
	labels, meta                                uint32 // in labels and metas; 0: none
	repeat, attempts, retries, line             int
}

// keyPassed marks a key whose record was handed on.
const keyPassed = -1

// NewRecordDedup returns a RecordDedup handing records on to fn.
func NewRecordDedup(fn func(*Record) error) *RecordDedup {
	return &RecordDedup{fn: fn, hex: map[uint64]int32{}, keys: map[string]int32{},
		labels: []map[string]string{nil}, labelN: map[string]uint32{}, metas: [][]byte{nil}}
}

// Add reads one record: it is handed on, held, or passed over as a
// duplicate. The record may be reused by the caller after Add returns.
func (d *RecordDedup) Add(r *Record) error {
	if r.Key == "" {
		return d.fn(r)
	}
	k := keyOf(r.Key)
	at, seen := d.get(k)
	failed := r.Outcome == judge.RuntimeError
	switch {
	case seen && (at == keyPassed || failed):
		d.dups++ // the key's result is in, or its first error held
		return nil
	case failed:
		d.hold(k, r)
		return nil
	case seen:
		d.dups++ // the held error gives way to this result
		if d.KeepText {
			d.whole[at] = Record{}
		} else {
			d.held[at] = heldError{}
		}
	}
	d.put(k, keyPassed)
	return d.fn(r)
}

// hold keeps a runtime error for Flush.
func (d *RecordDedup) hold(k cellKey, r *Record) {
	if d.KeepText {
		d.put(k, int32(len(d.whole)))
		d.whole = append(d.whole, r.detach(true))
		return
	}
	d.put(k, int32(len(d.held)))
	s := d.strs.idString
	h := heldError{key: r.Key, attack: s(r.Attack), defense: s(r.Defense), channel: s(r.Channel),
		agent: s(r.Agent), target: s(r.Target), id: s(r.CaseID), benchmark: s(r.Benchmark),
		specs: s(r.MethodSpecs), file: s(r.file), labels: d.labelSet(r.Labels),
		repeat: r.RepeatIndex, attempts: r.Attempts, retries: r.Retries, line: r.Line}
	if bytes.Contains(r.MetadataText, []byte(`"adaptive"`)) {
		h.meta = uint32(len(d.metas))
		d.metas = append(d.metas, bytes.Clone(r.MetadataText))
	}
	d.held = append(d.held, h)
}

// labelSet returns the index of a case's labels, each set kept once.
func (d *RecordDedup) labelSet(l map[string]string) uint32 {
	if len(l) == 0 {
		return 0
	}
	b, _ := json.Marshal(l) // its keys sorted: one text per set
	if i, ok := d.labelN[string(b)]; ok {
		return i
	}
	i := uint32(len(d.labels))
	d.labels = append(d.labels, maps.Clone(l))
	d.labelN[string(b)] = i
	return i
}

// record rebuilds a held runtime error. Its labels are shared with the
// other records of its case: read them, do not change them.
func (d *RecordDedup) record(h *heldError) Record {
	n := d.strs.names
	return Record{Brief: result.Brief{Key: h.key, Attack: n[h.attack], Defense: n[h.defense], Channel: n[h.channel],
		Agent: n[h.agent], Target: n[h.target], CaseID: n[h.id], Benchmark: n[h.benchmark], MethodSpecs: n[h.specs],
		Labels: d.labels[h.labels], MetadataText: d.metas[h.meta], Outcome: judge.RuntimeError,
		RepeatIndex: h.repeat, Attempts: h.attempts, Retries: h.retries},
		Line: h.line, file: n[h.file], noText: true}
}

// Flush hands on the runtime errors held for keys that had no other
// result, in the order they were read.
func (d *RecordDedup) Flush() error {
	whole, held := d.whole, d.held
	d.whole, d.held = nil, nil
	for i := range whole {
		if whole[i].Key == "" {
			continue // dropped for a rerun's result
		}
		if err := d.flush(&whole[i]); err != nil {
			return err
		}
	}
	for i := range held {
		if held[i].key == "" {
			continue
		}
		r := d.record(&held[i])
		if err := d.flush(&r); err != nil {
			return err
		}
	}
	return nil
}

// flush hands on one held record.
func (d *RecordDedup) flush(r *Record) error {
	d.put(keyOf(r.Key), keyPassed)
	return d.fn(r)
}

// Duplicates counts the records passed over: a key's records after the
// one handed on.
func (d *RecordDedup) Duplicates() int { return d.dups }

// cellKey is a key as RecordDedup's maps hold it: pikit's as a number,
// any other as its text.
type cellKey struct {
	hex   uint64
	isHex bool
	text  string
}

func keyOf(key string) cellKey {
	if h, ok := hexKey(key); ok {
		return cellKey{hex: h, isHex: true}
	}
	return cellKey{text: key}
}

func (d *RecordDedup) get(k cellKey) (int32, bool) {
	if k.isHex {
		at, seen := d.hex[k.hex]
		return at, seen
	}
	at, seen := d.keys[k.text]
	return at, seen
}

func (d *RecordDedup) put(k cellKey, at int32) {
	if k.isHex {
		d.hex[k.hex] = at
	} else {
		d.keys[k.text] = at
	}
}
