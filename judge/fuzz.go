package judge

import (
	"math"
	"math/bits"
)

// PartialRatio is how closely the best-matching part of b matches a, from
// 0 to 100, as thefuzz's fuzz.partial_ratio computes it (rapidfuzz 3.x,
// which BIPIA's MatchRefEval calls): the shorter string is compared, by
// normalised Indel similarity (twice the longest common subsequence over
// the two lengths), with every window of the longer string as long as it,
// and with the longer string's prefixes and suffixes shorter than that;
// strings of equal length are compared both ways. Lengths are in code
// points. thefuzz rounds the result half to even (Python's round).
func PartialRatio(a, b string) int {
	s1, s2 := []rune(a), []rune(b)
	if len(s1) > len(s2) {
		s1, s2 = s2, s1
	}
	if len(s1) == 0 || len(s2) == 0 {
		if len(s1) == len(s2) {
			return 100
		}
		return 0
	}
	score := partialRatio(s1, s2)
	if score != 100 && len(s1) == len(s2) {
		score = max(score, partialRatio(s2, s1))
	}
	return int(math.RoundToEven(score))
}

// partialRatio is the best similarity of needle (the shorter) with a
// part of hay, times 100.
func partialRatio(needle, hay []rune) float64 {
	lcs := newLCS(needle)
	n, h := len(needle), len(hay)
	best := 0.0
	sim := func(part []rune) float64 {
		dist := n + len(part) - 2*lcs.length(part)
		return (1.0 - float64(dist)/float64(n+len(part))) * 100
	}
	if h > n {
		// The windows of needle's length starting at 0 … h-n-1 (the last,
		// at h-n, is the first suffix below). Neighbouring windows differ
		// by one character out and one in, so their Indel distances differ
		// by at most 2: a range whose ends are known can hold no window
		// better than (d(lo)+d(hi))/2 - (hi-lo), and is skipped when that
		// is no better than the best so far.
		dist := make([]int, h-n)
		for i := range dist {
			dist[i] = -1
		}
		at := func(i int) int {
			if dist[i] < 0 {
				dist[i] = 2*n - 2*lcs.length(hay[i:i+n])
			}
			return dist[i]
		}
		bestDist := 2 * n
		type span struct{ lo, hi int }
		todo := []span{{0, h - n - 1}}
		for len(todo) > 0 && bestDist > 0 {
			s := todo[len(todo)-1]
			todo = todo[:len(todo)-1]
			dl, dh := at(s.lo), at(s.hi)
			bestDist = min(bestDist, dl, dh)
			if s.hi-s.lo <= 1 {
				continue
			}
			if (dl+dh)/2-(s.hi-s.lo) >= bestDist {
				continue
			}
			mid := s.lo + (s.hi-s.lo)/2
			todo = append(todo, span{s.lo, mid}, span{mid, s.hi})
		}
		best = (1.0 - float64(bestDist)/float64(2*n)) * 100
		if bestDist == 0 {
			return 100
		}
	}
	in := make(map[rune]bool, n)
	for _, c := range needle {
		in[c] = true
	}
	// Prefixes shorter than the needle, ending on one of its characters
	// (one ending elsewhere scores below the prefix before it).
	for i := 1; i < n; i++ {
		if !in[hay[i-1]] {
			continue
		}
		if r := sim(hay[:i]); r > best {
			if best = r; best == 100 {
				return best
			}
		}
	}
	// Suffixes from h-n on, starting on one of the needle's characters.
	for i := max(h-n, 0); i < h; i++ {
		if !in[hay[i]] {
			continue
		}
		if r := sim(hay[i:]); r > best {
			if best = r; best == 100 {
				return best
			}
		}
	}
	return best
}

// lcsPattern computes the length of the longest common subsequence of a
// fixed string and others, 64 of its characters a machine word at a time
// (Hyyrö's bit-parallel algorithm): time proportional to the other
// string's length times the pattern's words.
type lcsPattern struct {
	n, words int
	peq      map[rune][]uint64 // per character, the bits of its positions
}

func newLCS(p []rune) *lcsPattern {
	l := &lcsPattern{n: len(p), words: (len(p) + 63) / 64, peq: map[rune][]uint64{}}
	for i, c := range p {
		m := l.peq[c]
		if m == nil {
			m = make([]uint64, l.words)
			l.peq[c] = m
		}
		m[i/64] |= 1 << (i % 64)
	}
	return l
}

func (l *lcsPattern) length(s []rune) int {
	v := make([]uint64, l.words)
	for i := range v {
		v[i] = ^uint64(0)
	}
	for _, c := range s {
		m := l.peq[c]
		if m == nil {
			continue // no match: V stays as it is
		}
		var carry uint64
		for w := range v {
			u := v[w] & m[w]
			var sum uint64
			sum, carry = bits.Add64(v[w], u, carry)
			v[w] = sum | (v[w] &^ u)
		}
	}
	// The LCS is the number of cleared bits among the pattern's own.
	n := 0
	for w, x := range v {
		if w == l.words-1 && l.n%64 != 0 {
			x |= ^uint64(0) << (l.n % 64)
		}
		n += 64 - bits.OnesCount64(x)
	}
	return n
}
