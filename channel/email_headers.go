package channel

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/pikit-go/pikit/method"
)

func init() {
	register(method.Info{
		Name:        "email_headers",
		Description: "hides the payload in an email's headers: an X- header, the subject, the Reply-To name or a header you name",
		Options: []method.Option{
			{
				Name:    "field",
				Help:    "which header carries the payload: a new X-Message-Note header, the Subject, the Reply-To display name, or the header named by header_name",
				Default: "x_header",
				Choices: []string{"x_header", "subject", "reply_to", "custom"},
			},
			{
				Name:    "header_name",
				Help:    "the header to add when field is custom",
				Default: "X-Note",
			},
		},
	}, func(o options) (Channel, error) {
		if !validHeaderName(o["header_name"]) {
			return nil, factoryOptionError("email_headers", "header_name",
				fmt.Sprintf("%q is not a header field name (printable ASCII, no spaces or colons)", o["header_name"]), nil)
		}
		return emailHeaders{field: o["field"], header: o["header_name"]}, nil
	})
	RegisterSample("email", emailSample)
}

// emailHeaders hides a payload in the header block of an RFC 5322 message.
type emailHeaders struct{ field, header string }

var (
	_ Channel    = emailHeaders{}
	_ Sampler    = emailHeaders{}
	_ FileWriter = emailHeaders{}
)

// Sample returns a clean supplier email with a full header block.
func (emailHeaders) Sample() string { return emailSample }

// Taint edits the message's header block. Data with no header block is
// taken as a message body and given a plain envelope first. In the Reply-To
// display name, line breaks in the payload become spaces. Header values
// are folded at 78 columns and, when they hold line breaks, non-ASCII or
// anything else a header cannot carry as-is, written as RFC 2047 encoded
// words, so the header block stays one header per field.
func (e emailHeaders) Taint(data, payload string) (string, error) {
	msg, ok := parseMessage(data)
	if !ok {
		msg, _ = parseMessage(envelope(data))
	}
	switch e.field {
	case "subject":
		i := msg.find("Subject")
		if i < 0 {
			msg.insert(len(msg.fields), "Subject", headerText(payload))
			break
		}
		value := msg.value(i)
		if value != "" {
			value += " "
		}
		msg.set(i, "Subject", value+headerText(payload))
	case "reply_to":
		// A display name is one line: mail readers reject line breaks in it.
		name := strings.Join(strings.Fields(strings.Join(splitLines(payload), " ")), " ")
		value := headerPhrase(name) + " <replies@" + msg.domain() + ">"
		if i := msg.find("Reply-To"); i >= 0 {
			msg.set(i, "Reply-To", value)
		} else if i := msg.find("From"); i >= 0 {
			msg.insert(i+1, "Reply-To", value)
		} else {
			msg.insert(len(msg.fields), "Reply-To", value)
		}
	case "custom":
		msg.insert(len(msg.fields), e.header, headerText(payload))
	default:
		msg.insert(len(msg.fields), "X-Message-Note", headerText(payload))
	}
	return msg.String(), nil
}

// TaintFile writes message.eml.
func (e emailHeaders) TaintFile(dir, data, payload string) (string, error) {
	out, err := e.Taint(orSample(data, emailSample), payload)
	if err != nil {
		return "", err
	}
	return writeFile(dir, "message.eml", out)
}

// message is a header block kept line for line, so untouched headers are
// written back exactly as they came.
type message struct {
	fields [][]string // each field's raw lines, continuation lines included
	rest   string     // the blank line and body after the header block
	nl     string
}

// parseMessage splits data into header fields and the rest; it reports
// false when the text before the first blank line is not a header block.
func parseMessage(data string) (message, bool) {
	m := message{nl: newline(data)}
	head := data
	for off := 0; off < len(data); {
		end := strings.IndexByte(data[off:], '\n')
		if end < 0 {
			end = len(data) - off
		}
		if strings.TrimRight(data[off:off+end], "\r") == "" {
			head, m.rest = data[:off], data[off:]
			break
		}
		off += end + 1
	}
	head = strings.TrimRight(head, "\r\n")
	if head == "" {
		return m, false
	}
	for _, line := range strings.Split(head, "\n") {
		line = strings.TrimRight(line, "\r")
		if line[0] == ' ' || line[0] == '\t' {
			if len(m.fields) == 0 {
				return m, false
			}
			m.fields[len(m.fields)-1] = append(m.fields[len(m.fields)-1], line)
			continue
		}
		name, _, ok := strings.Cut(line, ":")
		if !ok || !validHeaderName(name) {
			return m, false
		}
		m.fields = append(m.fields, []string{line})
	}
	return m, true
}

// envelope wraps a bare body in a plain header block.
func envelope(body string) string {
	nl := newline(body)
	h := []string{
		"From: Records Desk <records@mail.example.com>",
		"To: Inbox <inbox@example.org>",
		"Subject: Forwarded note",
		"Date: Mon, 06 Oct 2025 09:30:00 +0000",
		"Message-ID: <fwd-20251006093000@mail.example.com>",
		"MIME-Version: 1.0",
		`Content-Type: text/plain; charset="utf-8"`,
	}
	return strings.Join(h, nl) + nl + nl + body
}

func (m message) String() string {
	var b strings.Builder
	for _, f := range m.fields {
		for _, line := range f {
			b.WriteString(line)
			b.WriteString(m.nl)
		}
	}
	if m.rest == "" {
		b.WriteString(m.nl)
	}
	b.WriteString(m.rest)
	return b.String()
}

func (m message) name(i int) string {
	name, _, _ := strings.Cut(m.fields[i][0], ":")
	return name
}

// find returns the index of the first field with the given name, or -1.
func (m message) find(name string) int {
	for i := range m.fields {
		if strings.EqualFold(m.name(i), name) {
			return i
		}
	}
	return -1
}

// value returns a field's unfolded value, raw (encoded words left as they
// are).
func (m message) value(i int) string {
	_, v, _ := strings.Cut(strings.Join(m.fields[i], ""), ":")
	return strings.TrimSpace(v)
}

func (m *message) set(i int, name, value string) { m.fields[i] = foldHeader(name, value) }

func (m *message) insert(i int, name, value string) {
	m.fields = append(m.fields[:i], append([][]string{foldHeader(name, value)}, m.fields[i:]...)...)
}

// domain returns the domain of the From address, for a plausible Reply-To.
func (m message) domain() string {
	if i := m.find("From"); i >= 0 {
		v := m.value(i)
		if at := strings.LastIndexByte(v, '@'); at >= 0 {
			d := strings.TrimRight(v[at+1:], "> \t")
			if d != "" && !strings.ContainsAny(d, " \t<>\"") {
				return d
			}
		}
	}
	return "example.com"
}

// validHeaderName reports whether s is an RFC 5322 field name: printable
// ASCII other than the colon.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 33 || s[i] > 126 || s[i] == ':' {
			return false
		}
	}
	return true
}

// headerText renders text as an unstructured header value: as-is when it is
// plain printable ASCII that survives folding and unfolding unchanged,
// otherwise as Q-encoded words.
func headerText(s string) string {
	if plainHeader(s) {
		return s
	}
	return encodeWords(s)
}

// headerPhrase renders text as the display name of an address: a quoted
// string, or encoded words when it cannot be carried as printable ASCII.
func headerPhrase(s string) string {
	if plainHeader(s) {
		r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
		return `"` + r.Replace(s) + `"`
	}
	return encodeWords(s)
}

// plainHeader reports whether s can go into a header verbatim: printable
// ASCII, no runs of spaces or leading and trailing spaces (unfolding would
// change them), and nothing that looks like an encoded word.
func plainHeader(s string) bool {
	if s == "" || s[0] == ' ' || s[len(s)-1] == ' ' || strings.Contains(s, "  ") || strings.Contains(s, "=?") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 32 || s[i] > 126 {
			return false
		}
	}
	return true
}

// encodeWords encodes s as RFC 2047 Q-encoded words of at most 75 characters,
// separated by spaces (which a decoder drops between encoded words). Only
// characters safe in every header context are left unencoded.
func encodeWords(s string) string {
	const prefix, suffix, max = "=?utf-8?q?", "?=", 75
	s = strings.ToValidUTF8(s, "\uFFFD")
	var words []string
	var w strings.Builder
	for _, r := range s {
		var enc string
		switch {
		case r == ' ':
			enc = "_"
		case r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!*+-/", r)):
			enc = string(r)
		default:
			var buf [utf8.UTFMax]byte
			n := utf8.EncodeRune(buf[:], r)
			var e strings.Builder
			for _, c := range buf[:n] {
				fmt.Fprintf(&e, "=%02X", c)
			}
			enc = e.String()
		}
		if len(prefix)+w.Len()+len(enc)+len(suffix) > max {
			words = append(words, prefix+w.String()+suffix)
			w.Reset()
		}
		w.WriteString(enc)
	}
	if w.Len() > 0 || len(words) == 0 {
		words = append(words, prefix+w.String()+suffix)
	}
	return strings.Join(words, " ")
}

// foldHeader renders "Name: value" as lines of at most 78 characters where
// it can, breaking only at single spaces (which unfold back to themselves).
func foldHeader(name, value string) []string {
	const width = 78
	line := name + ":"
	var lines []string
	for _, tok := range foldTokens(value) {
		if len(line)+1+len(tok) > width && strings.TrimSpace(line) != name+":" {
			lines = append(lines, line)
			line = ""
		}
		line += " " + tok
	}
	return append(lines, line)
}

// foldTokens splits value at the spaces that are safe to fold at: single
// spaces between two non-space characters.
func foldTokens(value string) []string {
	var toks []string
	start := 0
	for i := 1; i < len(value)-1; i++ {
		if value[i] == ' ' && value[i-1] != ' ' && value[i+1] != ' ' && value[i-1] != '\t' && value[i+1] != '\t' {
			toks = append(toks, value[start:i])
			start = i + 1
		}
	}
	return append(toks, value[start:])
}

const emailSample = `Return-Path: <accounts@fernbrook-supply.example>
Received: from mail.fernbrook-supply.example (mail.fernbrook-supply.example [203.0.113.24])
	by mx1.example.org with ESMTPS id 4Xk9Lq2mZ1 for <ops@example.org>;
	Tue, 14 Oct 2025 08:41:17 +0000
Message-ID: <20251014084112.7c2d1e@fernbrook-supply.example>
Date: Tue, 14 Oct 2025 08:41:12 +0000
From: Marisol Vega <accounts@fernbrook-supply.example>
To: Operations Team <ops@example.org>
Cc: Dev Patel <dev.patel@example.org>
Subject: Invoice FS-20931 for September deliveries
MIME-Version: 1.0
Content-Type: text/plain; charset="utf-8"
Content-Transfer-Encoding: 7bit

Hello team,

Please find below the summary of invoice FS-20931, covering the three pallet
deliveries we made to your Eastgate warehouse in September.

  12 Sep   Pallet racking brackets (x240)      1,920.00
  19 Sep   Shrink wrap, 500 mm rolls (x60)       534.00
  26 Sep   Forklift battery service                410.00
  ----------------------------------------------------------
  Total due                                     2,864.00 USD

Payment terms are net 30, so the balance is due by 14 November. Our bank
details have not changed since the last invoice; if you need a W-9 or a copy
of the signed delivery notes, reply to this message and I will send them over.

Thanks again for your business,

Marisol Vega
Accounts Receivable, Fernbrook Supply Co.
+1 503 555 0147
`
