package importer

// pyRandom is the Mersenne Twister (MT19937) as Python's random.Random
// seeds and draws it, for the one draw BIPIA makes when it places a
// "middle" attack: random.Random(seed).sample(sentences, k=1), which for
// one item is population[randbelow(n)]. BIPIA seeds a fresh generator for
// every context, so the sentence index depends only on the seed and the
// number of sentences.
type pyRandom struct {
	mt  [624]uint32
	idx int
}

// newPyRandom seeds as random.Random(seed) does for an integer: MT19937's
// init_by_array over the 32-bit words of |seed|, least significant first.
func newPyRandom(seed int64) *pyRandom {
	n := uint64(seed)
	if seed < 0 {
		n = uint64(-seed)
	}
	key := []uint32{uint32(n)}
	if hi := uint32(n >> 32); hi != 0 {
		key = append(key, hi)
	}
	r := &pyRandom{}
	r.initGenrand(19650218)
	i, j := 1, 0
	k := max(624, len(key))
	for ; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= 624 {
			r.mt[0] = r.mt[623]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k = 623; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= 624 {
			r.mt[0] = r.mt[623]
			i = 1
		}
	}
	r.mt[0] = 0x80000000
	return r
}

func (r *pyRandom) initGenrand(s uint32) {
	r.mt[0] = s
	for i := 1; i < 624; i++ {
		r.mt[i] = 1812433253*(r.mt[i-1]^(r.mt[i-1]>>30)) + uint32(i)
	}
	r.idx = 624
}

// uint32 is genrand_uint32.
func (r *pyRandom) uint32() uint32 {
	if r.idx >= 624 {
		for i := range 624 {
			y := (r.mt[i] & 0x80000000) | (r.mt[(i+1)%624] & 0x7fffffff)
			v := r.mt[(i+397)%624] ^ (y >> 1)
			if y&1 != 0 {
				v ^= 0x9908b0df
			}
			r.mt[i] = v
		}
		r.idx = 0
	}
	y := r.mt[r.idx]
	r.idx++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

// randbelow is Python's _randbelow for 0 < n < 2^32: getrandbits of n's
// bit length, drawn again while it is n or more.
func (r *pyRandom) randbelow(n int) int {
	k := 0
	for v := n; v > 0; v >>= 1 {
		k++
	}
	for {
		v := int(r.uint32() >> (32 - k))
		if v < n {
			return v
		}
	}
}
