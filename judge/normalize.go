package judge

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"sync"
	"unicode"
	"unicode/utf8"
)

// normalize returns text's normal form, with the place of each word when
// locate is set.
func normalize(text string, locate bool) normal {
	var words []word
	if locate {
		words = make([]word, 0, len(text)/5+1)
	}
	return normalizeInto(text, words, locate)
}

// normalizeInto is normalize appending the words, when locate is set, to
// words (whose room a caller may reuse).
//
// Every reply is normalised, so this is the judge's inner loop, and it
// reads ASCII text eight bytes at a time: a word of eight ASCII bytes is
// classified (letters and digits, the rest), lower-cased and written to
// the normal form at once, the separators after the first of a run
// dropped. A byte-at-a-time loop branched on every word's end and spent
// most of the judge's time doing so. An underscore, a byte outside ASCII
// and the last few bytes of the text go one at a time, as the normal form
// is defined (see the top of text.go). The words are located afterwards,
// from two bitmaps of the text: where words start and where they end.
// TestNormalizeAsThePlainLoop holds all this to normalizePlain, the
// definition as a plain loop.
func normalizeInto(text string, words []word, locate bool) normal {
	// The form is written in a pooled buffer, then copied to its string.
	scratch := normBuffers.Get().(*[]byte)
	buf := slices.Grow((*scratch)[:0], len(text)+normSlack)[:len(text)+normSlack]
	buf[0] = ' '
	var m *wordMarks
	if locate {
		m = getWordMarks(len(text))
	}
	buf, n, sameLength := normalizeText(text, buf, m)
	if locate {
		words = m.words(words, buf, n, sameLength)
		putWordMarks(m)
	}
	norm := string(buf[:n])
	if cap(buf) <= maxPooledNorm {
		*scratch = buf
		normBuffers.Put(scratch)
	}
	return normal{norm: norm, words: words}
}

// normBuffers holds normalizeInto's buffers for reuse; maxPooledNorm
// bounds those kept (a 256 KiB text's).
var normBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledNorm = 1 << 18

// normSlack is the room normalizeInto's buffer keeps past the text's
// length: the spaces around the normal form, and eight bytes that a
// word-sized store may reach past its end.
const normSlack = 2 + 8

// Bytes eight at a time: lo8 has each byte 1, hi8 each byte's top bit.
const (
	lo8 = 0x0101010101010101
	hi8 = 0x8080808080808080
)

// normalizeText writes text's normal form to buf after its first byte (a
// space), growing buf when characters outside ASCII need it, and returns
// buf and the form's length. With m, it marks where each word starts and
// ends in text, and reports whether every word's normal form is as long
// as the word (no letter lower-cased to another length).
func normalizeText(text string, buf []byte, m *wordMarks) (_ []byte, n int, sameLength bool) {
	n, sameLength = 1, true
	open := uint64(0) // 1 while a word is open: its last byte is buf[n-1]
	for i := 0; i < len(text); {
		// Chunks start at multiples of eight, so that each one's marks are
		// a byte of their own (see wordMarks).
		if i&7 == 0 && i+8 <= len(text) {
			if j, nj, o := normalizeChunks(text, i, buf, n, open, m); j > i {
				i, n, open = j, nj, o
				continue
			}
		}
		if c := text[i]; c < utf8.RuneSelf {
			// An underscore joins letters or digits either side of it.
			inWord := asciiFold[c] != 0 || c == '_' && i > 0 && alnum(text[i-1]) && i+1 < len(text) && alnum(text[i+1])
			switch {
			case inWord:
				if open == 0 {
					m.start(i)
					open = 1
				}
				buf[n] = c
				if c != '_' {
					buf[n] = asciiFold[c]
				}
				n++
			case open == 1:
				m.end(i)
				buf[n] = ' '
				n++
				open = 0
			}
			i++
			continue
		}
		// Outside ASCII: make room first. Lower-casing may lengthen a
		// letter, and an ideograph is a word of its own, a space after it.
		if len(buf)-n < len(text)-i+normSlack+8 {
			buf = append(buf, make([]byte, len(buf)+16)...)
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case ideograph(r):
			if open == 1 {
				m.end(i)
				buf[n] = ' '
				n++
			}
			m.start(i)
			n += utf8.EncodeRune(buf[n:], r)
			m.end(i + size)
			buf[n] = ' '
			n++
			open = 0
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) && open == 1:
			if open == 0 {
				m.start(i)
				open = 1
			}
			l := utf8.EncodeRune(buf[n:], unicode.ToLower(r))
			sameLength = sameLength && l == size
			n += l
		case open == 1: // a separator ends the word
			m.end(i)
			buf[n] = ' '
			n++
			open = 0
		}
		i += size
	}
	if open == 1 {
		m.end(len(text))
		buf[n] = ' '
		n++
	}
	return buf, n, sameLength
}

// normalizeChunks is normalizeText's loop over chunks of eight ASCII
// bytes without an underscore, from text[i] (a multiple of eight) up to
// the first other chunk or the last few bytes of the text: it takes and
// returns the loop's state (see normalizeText), which stays in registers
// in a function this small.
func normalizeChunks(text string, i int, buf []byte, n int, open uint64, m *wordMarks) (int, int, uint64) {
	for ; i+8 <= len(text); i += 8 {
		s := text[i : i+8]
		x := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		if x&hi8 != 0 || hasByte(x, '_') {
			break
		}
		// Eight ASCII bytes, no underscore. The top bit of each byte
		// of alnum tells a letter or digit.
		low := x | 0x20*lo8 // letters lower-cased; digits as they are
		alnum := atLeast(low, 'a') &^ atLeast(low, 'z'+1)
		alnum |= atLeast(x, '0') &^ atLeast(x, '9'+1)
		// A separator becomes a space, unless it follows one (or
		// the text's start, or a separator outside the chunk).
		sep := ^alnum & hi8
		drop := sep & (sep<<8 | (open^1)<<7)
		out := low&((alnum>>7)*0xff) | 0x20*lo8
		for pos := 0; ; {
			if drop == 0 {
				binary.LittleEndian.PutUint64(buf[n:], out>>(8*pos))
				n += 8 - pos
				break
			}
			k := bits.TrailingZeros64(drop) >> 3
			binary.LittleEndian.PutUint64(buf[n:], out>>(8*pos))
			n += k - pos
			pos = k + 1
			drop &= drop - 1
		}
		if m != nil {
			w := (alnum >> 7) * 0x0102040810204080 >> 56 // bit k: byte k is in a word
			prev := (w<<1 | open) & 0xff
			m.starts[i>>3] |= byte(w &^ prev)
			m.ends[i>>3] |= byte(prev &^ w)
		}
		open = alnum >> 63
	}
	return i, n, open
}

// atLeast sets the top bit of each byte of x, all ASCII, that is at least
// c, and clears every other bit.
func atLeast(x uint64, c byte) uint64 { return ((x | hi8) - uint64(c)*lo8) & hi8 }

// hasByte reports whether a byte of x, all ASCII, is c.
func hasByte(x uint64, c byte) bool {
	y := x ^ uint64(c)*lo8
	return (y-lo8)&^y&hi8 != 0
}

// wordMarks marks, one bit a byte of a text, where its words start and
// where they end (the byte after a word's last: a word can end where the
// next starts, as ideographs do). Bit k of byte j marks byte 8j+k of the
// text, so the marks of an aligned chunk of eight bytes are one byte, set
// without touching its neighbours, and eight bytes of marks read as a
// little-endian word mark 64 bytes of text in order.
type wordMarks struct {
	starts, ends []byte
}

// getWordMarks returns cleared marks for a text of n bytes, from a pool.
func getWordMarks(n int) *wordMarks {
	m := wordMarksPool.Get().(*wordMarks)
	size := 8 * ((n+1)/64 + 1) // whole words, with a bit at n
	if cap(m.starts) < size {
		m.starts, m.ends = make([]byte, size), make([]byte, size)
	}
	m.starts, m.ends = m.starts[:size], m.ends[:size]
	clear(m.starts)
	clear(m.ends)
	return m
}

// putWordMarks gives m back for reuse, unless a long text's marks.
func putWordMarks(m *wordMarks) {
	if cap(m.starts) <= maxPooledMarks {
		wordMarksPool.Put(m)
	}
}

var wordMarksPool = sync.Pool{New: func() any { return new(wordMarks) }}

// maxPooledMarks bounds the marks kept for reuse: a 256 KiB text's.
const maxPooledMarks = 1 << 15

// start and end mark one word's start or end at byte i; a nil m marks
// nothing.
func (m *wordMarks) start(i int) {
	if m != nil {
		m.starts[i>>3] |= 1 << (i & 7)
	}
}

func (m *wordMarks) end(i int) {
	if m != nil {
		m.ends[i>>3] |= 1 << (i & 7)
	}
}

// words appends to words the words of the normal form buf[:n] marked in
// m. With sameLength, each word is as long in the form as in the text, so
// the form's offsets follow from the text's; otherwise they are read off
// the form's spaces.
func (m *wordMarks) words(words []word, buf []byte, n int, sameLength bool) []word {
	marks := func(b []byte, i int) uint64 { return binary.LittleEndian.Uint64(b[8*i:]) }
	count := 0
	for i := range len(m.starts) / 8 {
		count += bits.OnesCount64(marks(m.starts, i))
	}
	base := len(words)
	words = slices.Grow(words, count)[:base+count]
	si, ei := 0, 0
	sb, eb := marks(m.starts, 0), marks(m.ends, 0)
	ns := 1
	for k := range count {
		for sb == 0 {
			si++
			sb = marks(m.starts, si)
		}
		os := si<<6 | bits.TrailingZeros64(sb)
		sb &= sb - 1
		for eb == 0 {
			ei++
			eb = marks(m.ends, ei)
		}
		oe := ei<<6 | bits.TrailingZeros64(eb)
		eb &= eb - 1
		ne := ns + oe - os
		if !sameLength {
			ne = ns
			for buf[ne] != ' ' {
				ne++
			}
		}
		// Field by field: a word built apart and copied in is read back
		// from the stack in one load that the stores before it cannot
		// feed, a stall for every word.
		w := &words[base+k]
		w.ns, w.ne, w.os, w.oe = int32(ns), int32(ne), int32(os), int32(oe)
		ns = ne + 1
	}
	return words
}

// wordHash hashes a word's normal form eight bytes at a time (degenerate
// hashes every word of a reply that may be stuck in a loop).
func wordHash(b string) uint64 {
	h := uint64(len(b)) * 0x9e3779b97f4a7c15
	for len(b) >= 8 {
		h = (h ^ (uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56)) * 0xbf58476d1ce4e5b9
		h ^= h >> 31
		b = b[8:]
	}
	var tail uint64
	for i := range len(b) {
		tail |= uint64(b[i]) << (8 * i)
	}
	h = (h ^ tail) * 0x94d049bb133111eb
	return h ^ h>>29
}
