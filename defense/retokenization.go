package defense

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pikit-go/pikit/method"
)

func init() {
	Register(method.Info{
		Name:        "retokenization",
		Description: "Splits long words into pieces, breaking up crafted token sequences.",
		Options: []method.Option{
			{Name: "min_len", Help: "words longer than this many letters are split (at least 2)." + pythonValueNote, Default: 10},
			{Name: "separator", Help: "what is put between the pieces of a split word", Default: "-"},
		},
	}, newRetokenization)
}

func newRetokenization(args method.Args) (Defense, error) {
	r := &retokenization{minLen: args.Int("min_len"), sep: args.String("separator")}
	if r.minLen < 2 {
		return nil, badOption("min_len", "%d is too small: want at least 2", r.minLen)
	}
	if r.sep == "" || strings.IndexFunc(r.sep, isWordRune) >= 0 {
		return nil, badOption("separator", "%q: want a non-empty separator without letters or digits", r.sep)
	}
	r.piece = (r.minLen + 1) / 2
	return r, nil
}

// retokenization splits every run of letters and digits longer than minLen
// into near-equal pieces of at most piece runes.
type retokenization struct {
	minLen int
	sep    string
	piece  int
}

var _ Defense = (*retokenization)(nil)

// Apply implements Defense. It adds a note only when it split a word.
func (r *retokenization) Apply(prompt, _ string) string {
	out, split := r.retokenize(prompt)
	if !split {
		return prompt
	}
	return paragraphs(
		"Long words in the text below have been split into pieces joined by "+strconv.Quote(r.sep)+". Read each split word as the whole word.",
		out)
}

func isWordRune(c rune) bool { return unicode.IsLetter(c) || unicode.IsDigit(c) || unicode.IsMark(c) }

func (r *retokenization) retokenize(s string) (string, bool) {
	var b strings.Builder
	split := false
	for len(s) > 0 {
		i := strings.IndexFunc(s, isWordRune)
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		s = s[i:]
		j := strings.IndexFunc(s, func(c rune) bool { return !isWordRune(c) })
		if j < 0 {
			j = len(s)
		}
		word := s[:j]
		s = s[j:]
		n := utf8.RuneCountInString(word)
		if n <= r.minLen {
			b.WriteString(word)
			continue
		}
		split = true
		pieces := (n + r.piece - 1) / r.piece
		for k := range pieces {
			// Piece k holds runes [k*n/pieces, (k+1)*n/pieces).
			size := (k+1)*n/pieces - k*n/pieces
			if k > 0 {
				b.WriteString(r.sep)
			}
			for range size {
				_, w := utf8.DecodeRuneInString(word)
				b.WriteString(word[:w])
				word = word[w:]
			}
		}
	}
	return b.String(), split
}
