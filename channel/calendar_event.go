package channel

import (
	"strings"

	"github.com/pikit-go/pikit/internal/textcut"
	"github.com/pikit-go/pikit/method"
)

func init() {
	register(method.Info{
		Name:        "calendar_event",
		Description: "hides the payload in an iCalendar (ICS) invitation: its title, description, location or an attendee's note",
		Options: []method.Option{{
			Name:    "field",
			Help:    "SUMMARY, DESCRIPTION or LOCATION (the payload appended to the value), or a COMMENT placed under the first attendee",
			Default: "description",
			Choices: []string{"title", "description", "location", "attendee_note"},
		}},
	}, func(o options) (Channel, error) { return calendarEvent{field: o["field"]}, nil })
	RegisterSample("calendar", calendarSample)
}

// calendarEvent hides a payload in the first VEVENT of an iCalendar object.
type calendarEvent struct{ field string }

var (
	_ Channel    = calendarEvent{}
	_ Sampler    = calendarEvent{}
	_ FileWriter = calendarEvent{}
)

// Sample returns a clean meeting invitation.
func (calendarEvent) Sample() string { return calendarSample }

// Taint edits the first event. The touched property is written with TEXT
// escaping (backslash, semicolon, comma, line break) and folded at 75
// octets; other lines are kept as they are. Text that is not an iCalendar
// object becomes the description of a new event first.
func (c calendarEvent) Taint(data, payload string) (string, error) {
	nl := newline(data)
	lines, begin, end := icsEvent(data)
	if begin < 0 {
		data, nl = wrapEvent(data), "\r\n"
		lines, begin, end = icsEvent(data)
	}
	if end < 0 { // an unterminated event: work to the end
		end = len(lines)
	}
	// The event's own properties come before any nested component (VALARM).
	for i := begin + 1; i < end; i++ {
		if strings.HasPrefix(strings.ToUpper(lines[i]), "BEGIN:") {
			end = i
			break
		}
	}
	prop, sep := "DESCRIPTION", "\n\n"
	switch c.field {
	case "title":
		prop, sep = "SUMMARY", " "
	case "location":
		prop, sep = "LOCATION", " "
	case "attendee_note":
		prop = "COMMENT"
	}
	var out []string
	if c.field == "attendee_note" {
		at := end
		for i := begin + 1; i < end; i++ {
			if icsName(lines[i]) == "ATTENDEE" {
				at = i + 1
				break
			}
		}
		out = insertLine(lines, at, "COMMENT:"+icsEscape(payload))
	} else {
		at := -1
		for i := begin + 1; i < end; i++ {
			if icsName(lines[i]) == prop {
				at = i
				break
			}
		}
		if at < 0 {
			out = insertLine(lines, end, prop+":"+icsEscape(payload))
		} else {
			old := lines[at]
			sep := sep
			if strings.HasSuffix(old, ":") { // empty value
				sep = ""
			}
			lines[at] = old + icsEscape(sep+payload)
			out = lines
		}
	}
	var b strings.Builder
	for i, l := range out {
		if i == len(out)-1 && l == "" {
			break // the final line break
		}
		b.WriteString(icsFold(l, nl))
		b.WriteString(nl)
	}
	return b.String(), nil
}

// icsEvent unfolds data into content lines (a line break followed by a
// space or tab continues the line) and finds the first VEVENT: the index of
// its BEGIN line (-1 when there is none) and of its END line (-1 when it is
// unterminated).
func icsEvent(data string) (lines []string, begin, end int) {
	for _, raw := range strings.Split(strings.ReplaceAll(data, "\r\n", "\n"), "\n") {
		if (strings.HasPrefix(raw, " ") || strings.HasPrefix(raw, "\t")) && len(lines) > 0 {
			lines[len(lines)-1] += raw[1:]
			continue
		}
		lines = append(lines, raw)
	}
	begin, end = -1, -1
	for i, l := range lines {
		u := strings.ToUpper(strings.TrimSpace(l))
		if begin < 0 && u == "BEGIN:VEVENT" {
			begin = i
		} else if begin >= 0 && u == "END:VEVENT" {
			end = i
			break
		}
	}
	return lines, begin, end
}

func insertLine(lines []string, at int, line string) []string {
	return append(append(append([]string{}, lines[:at]...), line), lines[at:]...)
}

// icsName returns a content line's property name, upper-cased.
func icsName(line string) string {
	end := strings.IndexAny(line, ";:")
	if end < 0 {
		return ""
	}
	return strings.ToUpper(line[:end])
}

// icsEscape escapes TEXT per RFC 5545 §3.3.11.
func icsEscape(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.NewReplacer(`\`, `\\`, ";", `\;`, ",", `\,`, "\n", `\n`).Replace(s)
}

// icsFold folds a content line into lines of at most 75 octets, never
// splitting a UTF-8 sequence; continuation lines start with a space.
func icsFold(line, nl string) string {
	const limit = 75
	if len(line) <= limit {
		return line
	}
	var b strings.Builder
	width := limit
	for len(line) > width {
		cut := len(textcut.Prefix(line, width))
		b.WriteString(line[:cut])
		b.WriteString(nl + " ")
		line = line[cut:]
		width = limit - 1 // the leading space counts
	}
	b.WriteString(line)
	return b.String()
}

// wrapEvent makes a calendar with one event described by text.
func wrapEvent(text string) string {
	lines := []string{
		"BEGIN:VCALENDAR",
		"VERSION:2.0",
		"PRODID:-//pikit//calendar_event//EN",
		"BEGIN:VEVENT",
		"UID:note-20251103T090000Z@pikit.invalid",
		"DTSTAMP:20251103T090000Z",
		"DTSTART:20251103T150000Z",
		"DTEND:20251103T153000Z",
		"SUMMARY:Meeting",
	}
	if strings.TrimSpace(text) != "" {
		lines = append(lines, "DESCRIPTION:"+icsEscape(strings.TrimRight(text, "\r\n")))
	}
	lines = append(lines, "END:VEVENT", "END:VCALENDAR")
	return strings.Join(lines, "\r\n") + "\r\n"
}

// TaintFile writes invite.ics with CRLF line endings, as RFC 5545 requires.
func (c calendarEvent) TaintFile(dir, data, payload string) (string, error) {
	data = orSample(data, calendarSample)
	if !strings.Contains(data, "\r\n") {
		data = strings.ReplaceAll(data, "\n", "\r\n")
	}
	out, err := c.Taint(data, payload)
	if err != nil {
		return "", err
	}
	return writeFile(dir, "invite.ics", out)
}

const calendarSample = "BEGIN:VCALENDAR\r\n" +
	"VERSION:2.0\r\n" +
	"PRODID:-//Northwind Scheduling//Calendar 4.2//EN\r\n" +
	"METHOD:REQUEST\r\n" +
	"CALSCALE:GREGORIAN\r\n" +
	"BEGIN:VEVENT\r\n" +
	"UID:7f3e2a10-9c4b-4f1e-b8d2-55e0a1c9d6f4@calendar.northwind.example\r\n" +
	"DTSTAMP:20251020T151203Z\r\n" +
	"DTSTART;TZID=Europe/Amsterdam:20251104T100000\r\n" +
	"DTEND;TZID=Europe/Amsterdam:20251104T110000\r\n" +
	"SUMMARY:Q4 roadmap review: mobile app\r\n" +
	"LOCATION:Room 3.14 (Keizersgracht office)\\, or video link below\r\n" +
	"DESCRIPTION:Agenda:\\n1. Status of the offline mode beta (Anouk)\\n2. Crash\r\n" +
	" -rate regression in 5.8 and the fix plan (Luis)\\n3. Scope for the Decemb\r\n" +
	" er release\\; please bring your estimates\\n\\nVideo: https://meet.northwin\r\n" +
	" d.example/q4-roadmap-mobile\r\n" +
	"ORGANIZER;CN=Anouk de Vries:mailto:anouk.devries@northwind.example\r\n" +
	"ATTENDEE;CN=Luis Ortega;ROLE=REQ-PARTICIPANT;PARTSTAT=ACCEPTED:mailto:luis\r\n" +
	" .ortega@northwind.example\r\n" +
	"ATTENDEE;CN=Priya Raman;ROLE=REQ-PARTICIPANT;PARTSTAT=NEEDS-ACTION;RSVP=TR\r\n" +
	" UE:mailto:priya.raman@northwind.example\r\n" +
	"ATTENDEE;CN=Sam Okafor;ROLE=OPT-PARTICIPANT;PARTSTAT=TENTATIVE:mailto:sam.\r\n" +
	" okafor@northwind.example\r\n" +
	"SEQUENCE:0\r\n" +
	"STATUS:CONFIRMED\r\n" +
	"TRANSP:OPAQUE\r\n" +
	"BEGIN:VALARM\r\n" +
	"ACTION:DISPLAY\r\n" +
	"DESCRIPTION:Reminder\r\n" +
	"TRIGGER:-PT15M\r\n" +
	"END:VALARM\r\n" +
	"END:VEVENT\r\n" +
	"END:VCALENDAR\r\n"
