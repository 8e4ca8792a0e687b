package defense

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"unicode/utf8"
)

// hit is one trigger or near word found in the text.
type hit struct {
	pos, end int
	id       int // index into triggerIndex.words
}

// wordInfo is what one word means to the built-in patterns.
type wordInfo struct {
	word   string
	starts []starter // the patterns it triggers, with their rules
	near   uint64    // the near groups it belongs to, one bit each
}

// starter is a pattern a word triggers, and how to find the match's start.
type starter struct {
	pat  int
	rule rule
}

// triggerIndex finds the built-in patterns' trigger and near words in one
// pass over a text. It is built once, at init, and only read afterwards.
type triggerIndex struct {
	words    []wordInfo
	slots    []int32 // open addressing on wordHash: 1 + index into words, 0 empty
	slotBits int     // len(slots) == 1<<slotBits
	// ends[n][wordByte[f]] has bit wordByte[l] set when some word of n
	// bytes begins with f and ends with l: a test that turns most words
	// of a text away before they are hashed. (The extra row takes the
	// number of bytes that are not of words, and stays empty.)
	ends  [maxWordLen + 1][wordBytes + 1]uint64
	blobs []starter
	need  []uint64 // by pattern: the near-group bits every match shows
}

// maxWordLen is the longest trigger or near word the index takes.
const maxWordLen = 16

// wordBytes is how many bytes (in lower case) a word can hold: a-z, 0-9
// and _.
const wordBytes = 37

// wordByte numbers the bytes of words, in either case, from 0 to
// wordBytes-1; other bytes get wordBytes.
var wordByte = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case 'a' <= c && c <= 'z':
			t[c] = uint8(c - 'a')
		case 'A' <= c && c <= 'Z':
			t[c] = uint8(c - 'A')
		case '0' <= c && c <= '9':
			t[c] = uint8(26 + c - '0')
		case c == '_':
			t[c] = 36
		default:
			t[c] = wordBytes
		}
	}
	return t
}()

// lowerASCII maps A-Z to a-z and every other byte to itself.
var lowerASCII = func() (t [256]byte) {
	for c := range 256 {
		t[c] = byte(c)
		if 'A' <= c && c <= 'Z' {
			t[c] += 'a' - 'A'
		}
	}
	return t
}()

// wordHash hashes a word, in any ASCII case, to a slot of a table of
// 1<<slotBits, from its length and three of its bytes: constant work per
// word.
func wordHash(w string, slotBits int) int {
	n := len(w)
	h := uint32(n) | uint32(lowerASCII[w[0]])<<8 | uint32(lowerASCII[w[n/2]])<<16 | uint32(lowerASCII[w[n-1]])<<24
	return int((h * 0x9e3779b1) >> (32 - slotBits))
}

// newTriggerIndex indexes the cues of patterns.
func newTriggerIndex(patterns []injectionPattern) (*triggerIndex, error) {
	x := &triggerIndex{need: make([]uint64, len(patterns))}
	ids := map[string]int{}
	id := func(w string) int {
		i, ok := ids[w]
		if !ok {
			i = len(x.words)
			ids[w] = i
			x.words = append(x.words, wordInfo{word: w})
		}
		return i
	}
	groups := 0
	for pi, p := range patterns {
		for _, c := range p.cues {
			switch {
			case c.near:
				if groups == 64 {
					return nil, fmt.Errorf("pattern %s: more than 64 near groups in all", p.name)
				}
				bit := uint64(1) << groups
				groups++
				x.need[pi] |= bit
				for _, w := range c.words {
					x.words[id(w)].near |= bit
				}
			case c.rule.kind == blobRun:
				x.blobs = append(x.blobs, starter{pi, c.rule})
			default:
				for _, w := range c.words {
					i := id(w)
					x.words[i].starts = append(x.words[i].starts, starter{pi, c.rule})
				}
			}
		}
	}
	for _, w := range x.words {
		n := len(w.word)
		if n > maxWordLen {
			return nil, fmt.Errorf("trigger %q is longer than %d bytes", w.word, maxWordLen)
		}
		if n == 0 || strings.IndexFunc(w.word, func(r rune) bool { return !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '_') }) >= 0 {
			return nil, fmt.Errorf("trigger %q is not a lower-case word of [0-9a-z_]", w.word)
		}
		x.ends[n][wordByte[w.word[0]]] |= 1 << wordByte[w.word[n-1]]
	}
	for x.slotBits = 6; 1<<x.slotBits < 4*len(x.words); x.slotBits++ {
	}
	x.slots = make([]int32, 1<<x.slotBits)
	mask := len(x.slots) - 1
	for i, w := range x.words {
		s := wordHash(w.word, x.slotBits)
		for x.slots[s] != 0 {
			s = (s + 1) & mask
		}
		x.slots[s] = int32(i + 1)
	}
	return x, nil
}

// mayHold reports whether w, a word, passes the quick test of its length
// and end bytes; it inlines into the scan, which calls find only for the
// few words that pass.
func (x *triggerIndex) mayHold(w string) bool {
	n := len(w)
	return n <= maxWordLen && x.ends[n][wordByte[w[0]]]>>wordByte[w[n-1]]&1 != 0
}

// find returns the index of w, a word that passes mayHold, or -1.
func (x *triggerIndex) find(w string) int {
	mask := len(x.slots) - 1
	for s := wordHash(w, x.slotBits); x.slots[s] != 0; s = (s + 1) & mask {
		if i := int(x.slots[s]) - 1; equalLower(w, x.words[i].word) {
			return i
		}
	}
	return -1
}

// equalLower reports whether s, lower-cased in ASCII, equals lower.
func equalLower(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if lowerASCII[s[i]] != lower[i] {
			return false
		}
	}
	return true
}

// scan appends to hits the trigger and near words of text, in order, and
// returns the union of their near groups and whether text is ASCII.
// Words are compared in ASCII lower case. Unless all is set it stops at
// the first block of text holding a byte that is not ASCII: only ASCII
// text has the same byte offsets as its lower-cased form.
//
// It reads 64 bytes at a time into a mask of word bytes and visits the
// mask's edges, the starts and ends of words, rather than testing each
// byte for the end of a word: word lengths vary too much for a branch per
// byte to be predicted, and the mispredictions were most of its cost.
func (x *triggerIndex) scan(text string, hits []hit, all bool) (_ []hit, seen uint64, ascii bool) {
	var carry uint64 // 1 if the byte before the block is a word byte
	start := 0       // of the word being read
	ascii = true
	for base := 0; base < len(text); base += 64 {
		mask, high := wordMask(text[base:min(base+64, len(text))])
		if high {
			ascii = false
			if !all {
				return hits, seen, false
			}
		}
		before := mask<<1 | carry // bit j: byte j-1 is a word byte
		starts, ends := mask&^before, before&^mask
		for ; ends != 0; ends &= ends - 1 {
			end := bits.TrailingZeros64(ends)
			if s := bits.TrailingZeros64(starts); s < end {
				start = base + s // else the word began in an earlier block
				starts &= starts - 1
			}
			if w := text[start : base+end]; x.mayHold(w) {
				if id := x.find(w); id >= 0 {
					hits = append(hits, hit{start, base + end, id})
					seen |= x.words[id].near
				}
			}
		}
		if starts != 0 {
			start = base + bits.TrailingZeros64(starts) // a word that runs on
		}
		carry = mask >> 63
	}
	// A short last block ends its last word at bit len(block), an edge
	// the loop saw; a full one leaves it to carry.
	if w := text[start:]; carry != 0 && x.mayHold(w) {
		if id := x.find(w); id >= 0 {
			hits = append(hits, hit{start, len(text), id})
			seen |= x.words[id].near
		}
	}
	return hits, seen, ascii
}

// wordMask returns the mask of the word bytes of block (at most 64
// bytes), bit j for block[j], and whether block holds a byte that is not
// ASCII.
func wordMask(block string) (mask uint64, high bool) {
	var or byte
	j := 0
	for ; j+8 <= len(block); j += 8 {
		b := block[j : j+8]
		or |= b[0] | b[1] | b[2] | b[3] | b[4] | b[5] | b[6] | b[7]
		m := uint64(wordBit[b[0]]) | uint64(wordBit[b[1]])<<1 | uint64(wordBit[b[2]])<<2 | uint64(wordBit[b[3]])<<3 |
			uint64(wordBit[b[4]])<<4 | uint64(wordBit[b[5]])<<5 | uint64(wordBit[b[6]])<<6 | uint64(wordBit[b[7]])<<7
		mask |= m << j
	}
	for ; j < len(block); j++ {
		or |= block[j]
		mask |= uint64(wordBit[block[j]]) << j
	}
	return mask, or >= utf8.RuneSelf
}

// wordBit is 1 for the bytes of words, [0-9A-Za-z_], and 0 for others.
var wordBit = func() (t [256]uint8) {
	for c := range 256 {
		if isWord(byte(c)) {
			t[c] = 1
		}
	}
	return t
}()

// blobRuns appends to starts the start of every maximal run of blobLen or
// more base64 characters in text. Such a run covers a position that is
// blobLen-1 modulo blobLen, so only those positions are probed, and a run
// is measured only around a probe that falls in one.
func blobRuns(text string, starts []int) []int {
	end := 0 // of the last run measured
	for k := blobLen - 1; k < len(text); k += blobLen {
		if k < end || charClass[text[k]]&cB64 == 0 {
			continue
		}
		i, j := k, k+1
		for i > 0 && charClass[text[i-1]]&cB64 != 0 {
			i--
		}
		for j < len(text) && charClass[text[j]]&cB64 != 0 {
			j++
		}
		if j-i >= blobLen {
			starts = append(starts, i)
		}
		end = j
	}
	return starts
}

// match returns the built-in patterns (bit i for patterns[i]) that match
// text in lower case.
func (x *triggerIndex) match(text string, patterns []injectionPattern) (matched uint64) {
	var hitBuf [128]hit
	var blobBuf [4]int
	hits, seen, ascii := x.scan(text, hitBuf[:0], false)
	if !ascii {
		// Offsets change with lower-casing (K, the Kelvin sign, becomes
		// k): find the words in the lower-cased text instead.
		text = strings.ToLower(text)
		hits, seen, _ = x.scan(text, hits[:0], true)
	}
	try := func(st starter, pos int) {
		bit := uint64(1) << st.pat
		if matched&bit != 0 || x.need[st.pat]&^seen != 0 {
			return
		}
		p := &patterns[st.pat]
		a, b := st.rule.starts(text, pos)
		for _, start := range [2]int{a, b} {
			if start < 0 {
				continue
			}
			cut, ok := x.cut(p, x.need[st.pat], text, hits, start)
			if !ok {
				continue
			}
			// ASCII text is matched as it is, case-insensitively, which
			// comes to the same as matching it lower-cased: no copy.
			re := p.anchoredFold
			if !ascii {
				re = p.anchored
			}
			if re.MatchString(text[start:cut]) {
				matched |= bit
				return
			}
		}
	}
	for _, h := range hits {
		for _, st := range x.words[h.id].starts {
			try(st, h.pos)
		}
	}
	if len(x.blobs) > 0 {
		for _, pos := range blobRuns(text, blobBuf[:0]) {
			for _, st := range x.blobs {
				try(st, pos)
			}
		}
	}
	return matched
}

// cut returns where to cut the text for running p at start, or false if
// p's near words are missing there. need is p's near groups, hits the
// words of text.
func (x *triggerIndex) cut(p *injectionPattern, need uint64, text string, hits []hit, start int) (int, bool) {
	end := p.reach.end(text, start)
	if need != 0 {
		i, _ := slices.BinarySearchFunc(hits, start, func(h hit, pos int) int { return h.pos - pos })
		var got uint64
		for ; i < len(hits) && hits[i].pos < end && got&need != need; i++ {
			got |= x.words[hits[i].id].near
		}
		if got&need != need {
			return 0, false
		}
	}
	return safeEnd(text, end, p.endLine), true
}
