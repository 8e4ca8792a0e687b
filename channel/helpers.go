package channel

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pikit-go/pikit/method"
)

// options holds a channel's resolved string options by name.
type options map[string]string

// register adds a channel whose factory needs only its string options. The
// options are checked against their choices again here, so a channel built
// from hand-made method.Args (method.NewArgs) is validated as strictly as one
// built through the registry; an option left out takes its default.
func register(info method.Info, build func(options) (Channel, error)) {
	Register(info, func(a method.Args) (Channel, error) {
		o, err := resolveOptions(info, a)
		if err != nil {
			return nil, err
		}
		return build(o)
	})
}

func resolveOptions(info method.Info, a method.Args) (options, error) {
	o := make(options, len(info.Options))
	for _, opt := range info.Options {
		def, ok := opt.Default.(string)
		if !ok {
			continue
		}
		v := a.String(opt.Name)
		if v == "" && !a.Set(opt.Name) {
			v = def
		}
		if len(opt.Choices) > 0 && !slices.Contains(opt.Choices, v) {
			return nil, factoryOptionError(info.Name, opt.Name, fmt.Sprintf("%q is not one of the choices", v), opt.Choices)
		}
		o[opt.Name] = v
	}
	return o, nil
}

// factoryOptionError reports a bad option found by a channel's factory. The
// registry already puts "channel <name>: " in front of factory errors, so the
// message leaves that out; errors.Is(err, method.ErrOption) and errors.As
// to *method.OptionError both hold.
func factoryOptionError(channel, option, problem string, valid []string) error {
	return bareOptionError{&method.OptionError{Kind: "channel", Method: channel, Option: option, Problem: problem, Valid: valid}}
}

type bareOptionError struct{ *method.OptionError }

func (e bareOptionError) Error() string {
	return strings.TrimPrefix(e.OptionError.Error(), e.Kind+" "+e.Method+": ")
}

func (e bareOptionError) Unwrap() error { return e.OptionError }

// writeFile writes content to dir/name, creating dir if needed.
func writeFile(dir, name, content string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("channel: %w", err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		return "", fmt.Errorf("channel: %w", err)
	}
	return path, nil
}

// orSample returns data, or sample when data is empty (file mode with no
// data_sample taints the channel's own carrier).
func orSample(data, sample string) string {
	if data == "" {
		return sample
	}
	return data
}

// newline returns the line ending data uses: "\r\n" when it has any, else
// "\n".
func newline(data string) string {
	if strings.Contains(data, "\r\n") {
		return "\r\n"
	}
	return "\n"
}

// splitLines splits a payload on any line break (\r\n, \n or a lone \r).
func splitLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.Split(s, "\n")
}

// appendBlock appends block to data as a new paragraph: separated from the
// existing text by a blank line and ending with a newline.
func appendBlock(data, block string) string {
	nl := newline(data)
	if data == "" {
		return block + nl
	}
	trimmed := strings.TrimRight(data, "\r\n")
	return trimmed + nl + nl + block + nl
}

// insertBeforeLast inserts ins just before the last occurrence of marker in
// data, compared case-insensitively. It reports false when marker is absent.
func insertBeforeLast(data, marker, ins string) (string, bool) {
	i := strings.LastIndex(strings.ToLower(data), strings.ToLower(marker))
	if i < 0 {
		return data, false
	}
	return data[:i] + ins + data[i:], true
}

// indentLines returns the lines of s after the first, each prefixed with
// indent, joined back to s's first line with nl: the usual way to carry a
// multi-line value under a labelled line.
func indentLines(s, indent, nl string) string {
	lines := splitLines(s)
	return strings.Join(lines, nl+indent)
}

// commentSafe makes text safe inside an HTML comment written as
// "<!-- text -->": a comment may not hold "--" (it would end at "-->" or
// "--!>"), so every "--" gets a space between its dashes.
func commentSafe(text string) string {
	for strings.Contains(text, "--") {
		text = strings.ReplaceAll(text, "--", "- -")
	}
	return text
}

// yamlQuote renders s as a YAML double-quoted scalar on one line, escaping
// the backslash, the quote, line breaks and every character YAML does not
// allow unescaped.
func yamlQuote(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case 0x85:
			b.WriteString(`\N`)
		case 0x2028:
			b.WriteString(`\L`)
		case 0x2029:
			b.WriteString(`\P`)
		default:
			switch {
			case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
				fmt.Fprintf(&b, `\x%02x`, r)
			case r == 0xfeff || r == 0xfffe || r == 0xffff:
				fmt.Fprintf(&b, `\u%04x`, r)
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// freshName returns the first candidate that taken rejects, else the first
// candidate with the smallest numeric suffix that is free.
func freshName(taken func(string) bool, candidates ...string) string {
	for _, c := range candidates {
		if !taken(c) {
			return c
		}
	}
	for i := 2; ; i++ {
		c := fmt.Sprintf("%s_%d", candidates[0], i)
		if !taken(c) {
			return c
		}
	}
}

// addToField edits text made of blocks: a header line (isHeader) then
// indented "Label: value" lines, such as a statement's transactions or a
// translation job's segments. addToField appends value to the field named
// label of the middle block (after sep); a missing field is added at the
// end of the block (after the field named after, when the block has it).
// Continuation lines of a multi-line value are indented two spaces deeper
// than the field. Text with no blocks gets "label: value" appended.
func addToField(text string, isHeader func(string) bool, label, after, sep, value string) string {
	nl := newline(text)
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	var headers []int
	for i, l := range lines {
		if isHeader(l) {
			headers = append(headers, i)
		}
	}
	if len(headers) == 0 {
		return appendBlock(text, label+": "+indentLines(value, "  ", nl))
	}
	h := headers[(len(headers)-1)/2]
	end := h + 1 // one past the block's last line
	for end < len(lines) && lines[end] != "" && (lines[end][0] == ' ' || lines[end][0] == '\t') {
		end++
	}
	prefix := strings.ToLower(label) + ":"
	indent, at, afterAt := "  ", -1, -1
	for i := h + 1; i < end; i++ {
		trimmed := strings.TrimLeft(lines[i], " \t")
		lower := strings.ToLower(trimmed)
		if strings.HasPrefix(lower, prefix) && at < 0 {
			at = i
			indent = lines[i][:len(lines[i])-len(trimmed)]
		} else if after != "" && strings.HasPrefix(lower, strings.ToLower(after)+":") {
			afterAt = i
		}
	}
	if at < 0 {
		for i := h + 1; i < end; i++ {
			trimmed := strings.TrimLeft(lines[i], " \t")
			if strings.Contains(trimmed, ":") {
				indent = lines[i][:len(lines[i])-len(trimmed)]
				break
			}
		}
		pos := end
		if afterAt >= 0 {
			pos = afterAt + 1
			for pos < end && len(lines[pos])-len(strings.TrimLeft(lines[pos], " \t")) > len(indent) {
				pos++ // past the continuation lines of that field
			}
		}
		line := indent + label + ": " + indentLines(value, indent+"  ", "\n")
		lines = append(append(append([]string{}, lines[:pos]...), line), lines[pos:]...)
	} else {
		last := at
		for last+1 < end && len(lines[last+1])-len(strings.TrimLeft(lines[last+1], " \t")) > len(indent) {
			last++
		}
		s := sep
		if strings.TrimSpace(lines[last]) == strings.TrimSpace(lines[at]) && strings.HasSuffix(strings.TrimSpace(lines[at]), ":") {
			s = " " // an empty field
		}
		lines[last] = strings.TrimRight(lines[last], " \t") + s + indentLines(value, indent+"  ", "\n")
	}
	out := strings.Join(lines, "\n")
	if nl == "\r\n" {
		out = strings.ReplaceAll(out, "\n", "\r\n")
	}
	return out
}

// methodAsField rewrites the Python pikit's options of a channel whose
// method names the field a payload is appended to (skills' description,
// body or instructions) into pikit's: method inline, with that field.
func methodAsField(fields ...string) func(map[string]any) (map[string]any, error) {
	return func(kwargs map[string]any) (map[string]any, error) {
		m, ok := kwargs["method"].(string)
		if !ok || !slices.Contains(fields, m) {
			return kwargs, nil
		}
		if f, set := kwargs["field"]; set && f != m {
			return nil, fmt.Errorf("method %q (the Python pikit's name of field %q) and field %v disagree: give field alone", m, m, f)
		}
		out := maps.Clone(kwargs)
		out["method"], out["field"] = "inline", m
		return out, nil
	}
}
