package channel

import (
	"encoding/csv"
	"net/mail"
	"strings"
	"testing"
)

// TestPythonSamples loads each data_sample name the Python pikit's configs
// use and checks it is a non-empty carrier in the format its name says.
func TestPythonSamples(t *testing.T) {
	for _, c := range []struct {
		name  string
		check func(t *testing.T, s string)
	}{
		{"pdf_metadata", func(t *testing.T, s string) {
			d := parsePDFText(s)
			for _, k := range []string{"Title", "Author", "Subject", "Keywords"} {
				if d.values[k] == "" {
					t.Errorf("no %s", k)
				}
			}
			if !strings.Contains(d.body, "--- page 1 ---") {
				t.Error("no page text")
			}
		}},
		{"email_full", func(t *testing.T, s string) {
			msg, err := mail.ReadMessage(strings.NewReader(s))
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range []string{"From", "To", "Subject", "Date", "Message-ID", "Received", "Content-Type"} {
				if msg.Header.Get(h) == "" {
					t.Errorf("no %s header", h)
				}
			}
		}},
		{"calendar_event", func(t *testing.T, s string) {
			for _, w := range []string{"BEGIN:VCALENDAR\r\n", "BEGIN:VEVENT\r\n", "DTSTART:", "SUMMARY:", "END:VEVENT\r\n", "END:VCALENDAR\r\n"} {
				if !strings.Contains(s, w) {
					t.Errorf("no %q", w)
				}
			}
			if strings.Contains(strings.ReplaceAll(s, "\r\n", ""), "\n") {
				t.Error("bare LF in iCalendar text")
			}
		}},
		{"channel_messages", func(t *testing.T, s string) { wantLines(t, s, "] ", 10) }},
		{"balance", func(t *testing.T, s string) { wantLines(t, s, "Balance", 1) }},
		{"transactions", func(t *testing.T, s string) {
			recs, err := csv.NewReader(strings.NewReader(s)).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) < 5 || recs[0][0] != "Date" {
				t.Errorf("want a header and rows, got %d records", len(recs))
			}
		}},
		{"flight_search", func(t *testing.T, s string) { wantLines(t, s, "Fare:", 5) }},
		{"feed", func(t *testing.T, s string) { wantLines(t, s, "@", 4) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, ok := LookupSample(c.name)
			if !ok || strings.TrimSpace(s) == "" {
				t.Fatalf("sample %q missing or empty", c.name)
			}
			if err := CheckSample(c.name); err != nil {
				t.Fatal(err)
			}
			c.check(t, s)
		})
	}
}

// wantLines checks at least n lines of s contain sub.
func wantLines(t *testing.T, s, sub string, n int) {
	t.Helper()
	got := 0
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			got++
		}
	}
	if got < n {
		t.Errorf("%d lines hold %q, want at least %d", got, sub, n)
	}
}

// TestPythonSampleNames: every data_sample name the Python pikit's run
// command knows is one of pikit's samples.
func TestPythonSampleNames(t *testing.T) {
	for _, name := range []string{
		"webpage", "email", "document", "code", "skill", "json", "csv", "pdf_metadata", "log", "email_full",
		"calendar", "config", "translation", "spreadsheet", "channel_messages", "dm_history", "thread", "events",
		"event_details", "balance", "transactions", "account_info", "flight_search", "hotel_search",
		"flight_details", "hotel_details", "feed", "post_details", "notifications",
	} {
		if s, ok := LookupSample(name); !ok || len(s) < 100 {
			t.Errorf("data_sample %q: not a sample of pikit's (%d bytes)", name, len(s))
		}
	}
}
